"""`toolResult.result.changedFiles` of run_shell_command over the real `kward rpc`, with the
Scripted provider running shell commands in real workspaces: a git work tree and a plain
directory (create, modify a clean and an already-dirty file, delete, rename; a file
outside the workspace, ignored files and skipped trees not listed), a workspace that is a
subdirectory of its repository, a command that times out after writing a file, `git`
missing from the PATH (the snapshot is used: ignored files are listed then) and the
snapshot's cap (nothing listed, `changedFilesComplete: false`). The session file keeps the
list (tool_execution_end), and the transcript shows it."""

import os

from lib.git_repos import make_repo
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

FILES = {"clean.txt": "clean\n", "dirty.txt": "dirty\n", "gone.txt": "gone\n", "old.txt": "old\n",
         ".gitignore": "*.log\nbuild/\n", "sub/s.txt": "s\n"}

COMMANDS = [
    "echo new > new.txt; mkdir -p d/e && echo deep > 'd/e/with space.txt'; printf x > \"$(printf 'caf\\351')\"",
    "echo more >> clean.txt; echo again >> dirty.txt",
    "rm gone.txt; mv old.txt renamed.txt",
    "echo o > ../outside.txt; echo l > x.log; mkdir -p build && echo b > build/b; "
    "mkdir -p node_modules/p && echo x > node_modules/p/i.js",
    "cat clean.txt",
]


def shell_turn(kward, commands, *, git=True, env=None, sub=None, timeout=None):
    """One turn running `commands` as shell tool calls c0, c1, ... in a workspace holding
    FILES (a repository when `git`, with dirty.txt already modified; the session's
    workspace is `sub` below it when given); returns (k, session, {id: result})."""
    args = [{"command": c, **({"timeout_seconds": timeout} if timeout else {})} for c in commands]
    k = kward([[tool("run_shell_command", a, id=f"c{i}") for i, a in enumerate(args)], [text("done")]],
              files=None if git else FILES, env=env)
    if git:
        make_repo(k.ws, FILES)
        (k.ws / "dirty.txt").write_text("dirty\nalready\n")
    s = k.create(workspaceRoot=str(k.ws / sub if sub else k.ws))
    _, events = k.run(s["id"], timeout=20)
    check_turn_events(events, "completed")
    results = {e["payload"]["toolCallId"]: e["payload"]["result"] for e in events if e["type"] == "toolResult"}
    return k, s, results


def test_git_work_tree(kward):
    k, s, r = shell_turn(kward, COMMANDS)
    tools = k.request("initialize")["capabilities"]["events"]["tools"]
    assert tools["changedFiles"] is True and "bash" in tools["changedFilesTools"]
    assert r["c0"]["changedFiles"] == ["caf\udce9", "d/e/with space.txt", "new.txt"]  # (a name not UTF-8: escaped)
    assert r["c1"]["changedFiles"] == ["clean.txt", "dirty.txt"]  # clean, and dirty before
    assert r["c2"]["changedFiles"] == ["gone.txt", "old.txt", "renamed.txt"]  # a rename: deleted + added
    # outside and ignored files are not listed; node_modules is, as git does not ignore it here
    assert r["c3"]["changedFiles"] == ["node_modules/p/i.js"] and "changedFiles" not in r["c4"]
    assert (k.ws.parent / "outside.txt").exists() and (k.ws / "x.log").exists() and (k.ws / "build/b").exists()
    assert not any("changedFilesComplete" in res for res in r.values())
    assert all(res["isError"] is False for res in r.values())
    # kept for replay and transcripts, as edit and write do
    audits = {a["toolCallId"]: a["result"] for a in k.records(s) if a["type"] == "tool_execution_end"}
    assert {i: a.get("changedFiles") for i, a in audits.items()} == {i: res.get("changedFiles") for i, res in r.items()}
    shown = {m["toolCallId"]: m for m in k.transcript(s["id"])["messages"] if m["role"] == "toolResult"}
    assert shown["c2"]["details"] == {"changedFiles": ["gone.txt", "old.txt", "renamed.txt"]}
    assert "details" not in shown["c4"]


def test_plain_workspace(kward):
    k, s, r = shell_turn(kward, COMMANDS, git=False)
    assert r["c0"]["changedFiles"] == ["caf\udce9", "d/e/with space.txt", "new.txt"]  # (a name not UTF-8: escaped)
    assert r["c1"]["changedFiles"] == ["clean.txt", "dirty.txt"]
    assert r["c2"]["changedFiles"] == ["gone.txt", "old.txt", "renamed.txt"]
    assert r["c3"]["changedFiles"] == ["build/b", "x.log"]  # no git: nothing is ignored; node_modules is skipped
    assert "changedFiles" not in r["c4"]
    assert (k.ws / "node_modules/p/i.js").exists() and not any("changedFilesComplete" in x for x in r.values())


def test_subdirectory_of_the_repository_and_a_timeout(kward):
    k, s, r = shell_turn(kward, ["echo x >> s.txt; echo up >> ../clean.txt; echo n > n.txt",
                                 "echo t > t.txt; sleep 30"], sub="sub", timeout=1)
    assert r["c0"]["changedFiles"] == ["n.txt", "s.txt"]  # relative to the workspace; ../clean.txt is outside
    assert r["c1"]["isError"] is True and r["c1"]["content"] == "Error: command timed out after 1 seconds"
    assert r["c1"]["changedFiles"] == ["t.txt"]


def test_without_git_on_the_path_a_snapshot_is_used(kward, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("rm", "mv", "cat", "mkdir"):
        os.symlink(f"/bin/{name}", bin_dir / name)
    k, s, r = shell_turn(kward, ["echo l > x.log; echo c >> clean.txt; command -v git || echo no git"],
                         env={"PATH": str(bin_dir)})
    assert r["c0"]["content"] == "Exit status: 0\n\nSTDOUT:\nno git\n"
    assert r["c0"]["changedFiles"] == ["clean.txt", "x.log"]  # the ignored file too: no git to ask


def test_past_the_cap_nothing_is_listed_and_the_result_says_so(kward):
    many = "python3 -c 'import os; os.mkdir(\"many\"); [open(f\"many/f{i}\", \"w\").close() for i in range(20001)]'"
    k, s, r = shell_turn(kward, [many, "echo x > x.txt"], git=False)
    assert len(os.listdir(k.ws / "many")) == 20_001
    for res in r.values():  # the look after the first command, and both looks of the second, are capped
        assert "changedFiles" not in res and res["changedFilesComplete"] is False


def test_a_file_changed_between_two_shell_calls_is_not_listed_by_the_second(kward):
    k = kward([[tool("run_shell_command", {"command": "echo one > a.txt"}, id="c0")], [text("first")],
               [tool("run_shell_command", {"command": "echo two >> a.txt; cat b.txt"}, id="c1")], [text("second")]])
    make_repo(k.ws, {"b.txt": "b\n", "c.txt": "c\n"})
    s = k.create(workspaceRoot=str(k.ws))
    _, first = k.run(s["id"], timeout=20)
    check_turn_events(first, "completed")
    (k.ws / "a.txt").write_text("one\nbetween\n")  # by this process, between the two calls
    (k.ws / "b.txt").write_text("b changed\n")
    (k.ws / "c.txt").unlink()
    _, second = k.run(s["id"], timeout=20)
    check_turn_events(second, "completed")
    result = next(e["payload"]["result"] for e in second if e["type"] == "toolResult")
    assert result["changedFiles"] == ["a.txt"] and "changedFilesComplete" not in result
    diff = next(e["payload"] for e in second if e["type"] == "turnDiff")
    assert diff["files"] == [{"path": "a.txt", "status": "modified", "added": 1, "removed": 0}]
    assert diff["diff"] == "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n between\n+two\n"
