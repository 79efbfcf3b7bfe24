"""The `metadata {source, displayName}` of every tool, as `tools/list` and the tool events
of a real `kward rpc` turn (Scripted provider) report it."""

from lib.resources_helpers import write_skill
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

NAMES = {"list_directory": "List", "read_file": "Read", "write_file": "Write", "edit_file": "Edit",
         "run_shell_command": "Bash", "search_files": "Search", "ask_user_question": "Question",
         "read_skill": "Skill", "web_search": "WebSearch"}


def test_tools_list_entries_carry_their_source_and_display_name(kward, isolated_home):
    write_skill(isolated_home / ".kward", "pdf", "Use pdftotext.", description="PDFs")
    k = kward()
    listed = k.request("tools/list")["tools"]
    assert [t["function"]["name"] for t in listed] == list(NAMES)
    for entry in listed:
        assert entry["metadata"] == {"source": "builtin", "displayName": NAMES[entry["function"]["name"]]}
        assert entry["type"] == "function"


def test_tool_events_carry_the_same_metadata(kward):
    k = kward([[tool("read_file", {"path": "a.txt"}, id="r"), tool("run_shell_command", {"command": "true"}, id="b"),
                tool("no_such_tool", {}, id="n")], [text("done")]], files={"a.txt": "one\n"})
    session = k.session()
    _, events = k.run(session["id"], "go")
    check_turn_events(events, "completed")
    by_type = {(e["type"], e["payload"]["toolCallId"]): e["payload"] for e in events
               if e["type"] in ("toolCall", "toolResult")}
    for kind in ("toolCall", "toolResult"):
        assert by_type[(kind, "r")]["metadata"] == {"source": "builtin", "displayName": "Read"}
        assert by_type[(kind, "b")]["metadata"] == {"source": "builtin", "displayName": "Bash"}
        assert by_type[(kind, "n")]["metadata"] == {"source": "builtin", "displayName": "no_such_tool"}
