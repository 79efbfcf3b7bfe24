"""Values in config.json that look like credentials are scrubbed from tool output as known
values whatever key they sit under, over the real `kward rpc`."""

from __future__ import annotations

import json

from lib.fake_codex import make_jwt
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

REDACTED = "[REDACTED]"
UNDER_TOKEN = "sk-or-v1-PLUGINTOKEN0123456789abcdef"
UNDER_PLAIN = "sk-or-v1-UNKNOWNKEY0123456789abcdef"  # under a key that says nothing
BEARER = "opaque-bearer-value-2718281828"  # in a header line: `Bearer <value>`
QUERY = "query-secret-value-1414213562"  # in a URL: `?api_key=<value>`
PUBLIC = "https://plugin.example.invalid/v1"  # matches no pattern: ordinary content


def test_config_values_shaped_like_secrets_are_scrubbed_from_tool_output(kward):
    config = {"provider": "scripted",
              "someplugin": {"token": UNDER_TOKEN, "endpoint": UNDER_PLAIN, "headers": [f"Authorization: Bearer {BEARER}"],
                             "url": f"https://plugin.example.invalid/v1?api_key={QUERY}&x=1", "base": PUBLIC}}
    values = {"under_token": UNDER_TOKEN, "under_plain": UNDER_PLAIN, "bearer": BEARER, "query": QUERY}
    # the command prints each value on its own, with no pattern around it
    command = "; ".join(f"echo {name}=$(cat {name})" for name in values) + f"; echo public=$(cat public)"
    files = {**values, "public": PUBLIC}
    k = kward([[tool("run_shell_command", {"command": command}, id="sh")], [text("done")]], files=files)
    (k.home / ".kward").mkdir(exist_ok=True)
    (k.home / ".kward" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    turn, events = k.run(k.session()["id"], "go")
    check_turn_events(events, "completed")
    output = [e["payload"]["content"] for e in events if e["type"] == "toolResult"][0]
    lines = output.splitlines()
    for name, value in values.items():
        assert f"{name}={REDACTED}" in lines, (name, output)
        assert value not in json.dumps(events)
    assert f"public={PUBLIC}" in lines
