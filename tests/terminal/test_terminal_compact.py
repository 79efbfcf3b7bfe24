"""`/compact [instructions]` in the interactive terminal: the same sessions/compact the RPC
face serves (a pseudo-terminal, the Scripted provider playing the summary)."""

import json

from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.compaction_helpers import write_compaction_config
from lib.pty_term import PROMPT, PtyKward
from lib.scripts import text


def test_compact_summarizes_and_the_next_turn_goes_on(cli, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=20)
    cli.script([[text("first answer")], [text("second answer")], [text("third answer")]],
               compaction=[text("## Goal\n- terminal summary")])
    k = PtyKward([], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws))
    try:
        k.expect(PROMPT)
        k.line("explain the module layout " * 4)
        k.expect(PROMPT)
        k.line("now the tests")
        k.expect(PROMPT)
        k.line("/compact focus on the tests")
        out = k.expect(PROMPT)
        assert "compacted: about " in out and "kept from message:2" in out
        k.line("/help")
        assert "/compact [instructions]" in k.expect(PROMPT)
        k.line("go on")
        assert "third answer" in k.expect(PROMPT)  # the script continues after the summary
        k.line("/exit")
        assert k.wait() == 0
    finally:
        k.close()
    [session] = [p for p in cli.session_files() if p.suffix == ".jsonl"]
    records = [json.loads(line) for line in session.read_text().splitlines()]
    [compaction] = [r for r in records if r["type"] == "compaction"]
    assert compaction["message"]["summary"].startswith("## Goal\n- terminal summary")
    assert compaction["message"]["first_kept_entry_id"] == "message:2"
