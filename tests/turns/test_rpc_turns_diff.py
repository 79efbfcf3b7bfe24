"""What a turn changed (`turnDiff`) and what a session changed (`sessions/diff`), over the
real `kward rpc` with the Scripted provider: real files in a temp workspace, real shell
commands, the unified diff checked by `git apply` against the files it claims to undo."""

import json
import shutil
import subprocess

import pytest

from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import model_error, text, tool
from lib.turn_events import check_turn_events, payload, payloads, types

QUESTION = {"question": "Which?", "header": "Pick",
            "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]}


def read(path):
    return tool("read_file", {"path": path})


def edit(path, old, new):
    return tool("edit_file", {"path": path, "edits": [{"old_text": old, "new_text": new}]})


def write(path, content):
    return tool("write_file", {"path": path, "content": content})


def shell(command):
    return tool("run_shell_command", {"command": command})


def files_of(summary):
    return {f["path"]: f for f in summary["files"]}


def check_order(events):
    """turnDiff once, after every toolResult and the answer, before error and turnFinished."""
    kinds = types(events)
    assert kinds.count("turnDiff") == 1, kinds
    at = kinds.index("turnDiff")
    assert all(i < at for i, kind in enumerate(kinds) if kind in ("toolResult", "answer", "assistantMessage"))
    assert set(kinds[at + 1:]) <= {"error", "turnFinished"}, kinds[at:]
    return events[at]["payload"]


def undo(diff, workspace, tmp_path, name="undone"):
    """A copy of `workspace` with `diff` applied in reverse by git (fails unless it applies)."""
    copy = tmp_path / name
    shutil.copytree(workspace, copy, symlinks=True)
    (tmp_path / f"{name}.patch").write_text(diff, encoding="utf-8")
    subprocess.run(["git", "apply", "-R", "--unsafe-paths", str(tmp_path / f"{name}.patch")], cwd=copy, check=True,
                   capture_output=True)
    return copy


def test_turn_diff_of_edits_and_writes_applies_in_reverse_to_the_files_before(kward, tmp_path):
    before = {"a.txt": "one\ntwo\nthree\n", "b.txt": "keep\nold tail", "sub/c.txt": "c\n"}
    k = kward([[read("a.txt"), edit("a.txt", "two", "TWO"), write("new.txt", "fresh\nlines\n"),
                read("b.txt"), write("b.txt", "keep\nnew tail\n"), write("sub/d.txt", "d\n")],
               [text("done")]], files=before)
    s = k.session()
    _, events = k.run(s["id"], "change things")
    check_turn_events(events, "completed")
    diff = check_order(events)
    assert diff["files"] == [
        {"path": "a.txt", "status": "modified", "added": 1, "removed": 1},
        {"path": "b.txt", "status": "modified", "added": 1, "removed": 1},
        {"path": "new.txt", "status": "added", "added": 2, "removed": 0},
        {"path": "sub/d.txt", "status": "added", "added": 1, "removed": 0},
    ]
    assert diff["truncated"] is False and "note" not in diff
    assert diff["diff"].startswith("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
    assert "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n keep\n-old tail\n\\ No newline at end of file\n" \
           "+new tail\n" in diff["diff"]
    assert "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+fresh\n+lines\n" in diff["diff"]
    restored = undo(diff["diff"], k.ws, tmp_path)
    assert {p: (restored / p).read_text() for p in before} == before
    assert not (restored / "new.txt").exists() and not (restored / "sub/d.txt").exists()
    # the session's totals are the same after one turn
    assert k.request("sessions/diff", {"sessionId": s["id"]}) == diff


def test_a_turn_without_changes_and_changes_undone_report_no_files(kward):
    k = kward([[text("just talk")],
               [write("tmp.txt", "x\n"), shell("rm tmp.txt"), read("c.txt"), edit("c.txt", "x", "y"),
                edit("c.txt", "y", "x")],
               [text("back to where we were")]], files={"c.txt": "x\n"})
    s = k.session()
    _, quiet = k.run(s["id"], "hello")
    check_turn_events(quiet, "completed")
    assert types(quiet)[-3:] == ["answer", "turnDiff", "turnFinished"]  # always one for a model turn
    assert payload(quiet, "turnDiff") == {"files": [], "diff": "", "truncated": False}
    _, events = k.run(s["id"], "churn")
    check_turn_events(events, "completed")
    assert check_order(events) == {"files": [], "diff": "", "truncated": False}
    assert not (k.ws / "tmp.txt").exists() and (k.ws / "c.txt").read_text() == "x\n"
    assert k.request("sessions/diff", {"sessionId": s["id"]}) == {"files": [], "diff": "", "truncated": False}


def test_binary_and_huge_files_are_listed_without_their_content(kward):
    huge = "line of a big file\n" * 60_000  # ~1.1 MiB: over the 1 MiB cap
    k = kward([[write("blob.bin", "head\u0000tail"), write("big.txt", huge), write("small.txt", "s\n")],
               [text("done")]])
    s = k.session()
    _, events = k.run(s["id"], "write them", timeout=30)
    check_turn_events(events, "completed")
    diff = check_order(events)
    assert files_of(diff) == {
        "big.txt": {"path": "big.txt", "status": "added", "added": None, "removed": None, "omitted": "tooLarge"},
        "blob.bin": {"path": "blob.bin", "status": "added", "added": None, "removed": None, "binary": True,
                     "omitted": "binary"},
        "small.txt": {"path": "small.txt", "status": "added", "added": 1, "removed": 0},
    }
    assert diff["diff"] == "--- /dev/null\n+++ b/small.txt\n@@ -0,0 +1 @@\n+s\n"
    assert diff["truncated"] is True  # the size cap left big.txt out
    assert "big.txt (over 1 MiB)" in diff["note"] and "blob.bin (binary)" in diff["note"]
    assert "line of a big file" not in json.dumps(diff)


def test_the_diff_is_capped_by_whole_files_and_smaller_ones_still_go_in(kward):
    many = "".join(f"row {i}\n" for i in range(5000))  # 5,000 lines: over the 4,000-line cap alone
    k = kward([[write("a.txt", "a\n"), write("many.txt", many), write("z.txt", "z\n")], [text("done")]])
    s = k.session()
    _, events = k.run(s["id"], "write them")
    diff = check_order(events)
    assert files_of(diff)["many.txt"] == {"path": "many.txt", "status": "added", "added": 5000, "removed": 0,
                                          "omitted": "capped"}
    assert "+++ b/a.txt" in diff["diff"] and "+++ b/z.txt" in diff["diff"] and "many.txt" not in diff["diff"]
    assert diff["truncated"] is True and "many.txt (past the diff's size caps)" in diff["note"]
    assert "4000 lines" in diff["note"]


def test_a_symlink_out_of_the_workspace_in_place_of_a_changed_file_is_never_read(kward, tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOPSECRET\n")
    k = kward([[write("s.txt", "mine\n"), read("m.txt"), edit("m.txt", "old", "new"),
                shell(f"rm s.txt m.txt && ln -s {secret} s.txt && ln -s {secret} m.txt")],
               [text("done")]], files={"m.txt": "old\n"})
    s = k.session()
    _, events = k.run(s["id"], "swap")
    check_turn_events(events, "completed")
    diff = check_order(events)
    assert diff["files"] == [
        {"path": "m.txt", "status": "modified", "added": None, "removed": None, "omitted": "notRegularFile"},
        {"path": "s.txt", "status": "added", "added": None, "removed": None, "omitted": "notRegularFile"},
    ]
    assert diff["diff"] == "" and diff["truncated"] is False and "not a regular file" in diff["note"]
    session = k.request("sessions/diff", {"sessionId": s["id"]})
    assert session == diff and "TOPSECRET" not in json.dumps(session)


def test_sessions_diff_spans_turns_against_the_content_before_the_first_change(kward, tmp_path):
    before = {"a.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "b.txt": "b\n"}
    k = kward([[read("a.txt"), edit("a.txt", "2\n", "two\n"), write("n.txt", "n\n")], [text("first")],
               [edit("a.txt", "8\n", "eight\n"), shell("rm n.txt"), read("b.txt"), edit("b.txt", "b", "B")],
               [text("second")]], files=before)
    s = k.session()
    assert k.request("sessions/diff", {"sessionId": s["id"]}) == {"files": [], "diff": "", "truncated": False}
    _, first = k.run(s["id"], "one")
    _, second = k.run(s["id"], "two")
    check_turn_events(second, "completed")
    turn2 = check_order(second)
    # the second turn's a.txt is against the content after the first turn; its shell command
    # deleted n.txt, whose content it did not see (a plain workspace: the snapshot keeps none)
    assert turn2["files"] == [{"path": "a.txt", "status": "modified", "added": 1, "removed": 1},
                              {"path": "b.txt", "status": "modified", "added": 1, "removed": 1},
                              {"path": "n.txt", "status": "deleted", "added": None, "removed": None,
                               "omitted": "unknownBaseline"}]
    assert "-8\n+eight\n" in turn2["diff"] and "-2\n" not in turn2["diff"]
    total = k.request("sessions/diff", {"sessionId": s["id"]})
    # both turns' files, a.txt against its content before the first turn, n.txt gone again
    assert total["files"] == [{"path": "a.txt", "status": "modified", "added": 2, "removed": 2},
                              {"path": "b.txt", "status": "modified", "added": 1, "removed": 1}]
    restored = undo(total["diff"], k.ws, tmp_path)
    assert {p: (restored / p).read_text() for p in before} == before
    # the file as it is now: a change made outside kward shows in the totals
    (k.ws / "b.txt").write_text("changed by hand\n")
    later = k.request("sessions/diff", {"sessionId": s["id"]})
    assert "+changed by hand\n" in later["diff"] and "-b\n" in later["diff"]
    assert k.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    gone = k.error("sessions/diff", {"sessionId": s["id"]})
    assert gone.code == -32602 and gone.reason == "session_not_found"


def test_sessions_diff_params(kward):
    k = kward([[text("ok")]])
    missing = k.error("sessions/diff", {})
    assert missing.code == -32602 and missing.error["data"]["param"] == "sessionId"
    wrong = k.error("sessions/diff", {"sessionId": 5})
    assert wrong.code == -32602 and wrong.error["data"]["param"] == "sessionId"
    unknown = k.error("sessions/diff", {"sessionId": "no-such-session"})
    assert unknown.code == -32602 and unknown.reason == "session_not_found"


def test_a_canceled_turn_reports_what_its_tools_changed_before_turn_finished(kward):
    k = kward([[write("a.txt", "a\n"), tool("ask_user_question", {"questions": [QUESTION]}, id="ask")],
               [text("unreached")]])
    s = k.session()
    turn = k.start(s["id"], "write then ask")
    k.question()
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"])
    check_turn_events(events, "canceled")
    assert types(events)[-3:] == ["toolResult", "turnDiff", "turnFinished"]
    assert check_order(events)["files"] == [{"path": "a.txt", "status": "added", "added": 1, "removed": 0}]


def test_a_failed_turn_reports_its_changes_before_the_error(kward):
    k = kward([[write("a.txt", "a\n")], [model_error("the model broke")]])
    s = k.session()
    _, events = k.run(s["id"], "write then fail")
    check_turn_events(events, "failed")
    assert types(events)[-3:] == ["turnDiff", "error", "turnFinished"]
    assert check_order(events)["files"] == [{"path": "a.txt", "status": "added", "added": 1, "removed": 0}]


def test_a_client_that_opts_out_of_turn_diff_gets_no_gap_and_still_the_totals(kward):
    k = kward([[write("a.txt", "a\n")], [text("done")]])
    k.request("initialize", {"capabilities": {"optOutNotificationMethods": ["turn/event:turnDiff"]}})
    s = k.session()
    turn, events = k.run(s["id"], "write")
    check_turn_events(events, "completed")  # sequence numbers without a gap
    assert "turnDiff" not in types(events)
    assert "turnDiff" not in types(k.request("turns/events", {"turnId": turn["id"]})["events"])
    assert files_of(k.request("sessions/diff", {"sessionId": s["id"]})) == \
        {"a.txt": {"path": "a.txt", "status": "added", "added": 1, "removed": 0}}


def test_capabilities_claim_the_session_diff(kward):
    k = kward([[text("ok")]])
    caps = k.request("initialize")["capabilities"]
    assert caps["composer"]["sessionDiff"] == {"supported": True, "method": "sessions/diff", "event": "turnDiff"}
    assert "sessions/diff" in caps["sessions"]["methods"]


def test_turn_diff_of_a_turn_mixing_edit_write_and_shell(kward, tmp_path):
    before = {"e.txt": "edit me\n", "tracked.txt": "t1\nt2\n", "gone.txt": "bye\n"}
    k = kward([[read("e.txt"), edit("e.txt", "edit me", "edited"), write("w.txt", "written\n"),
                shell("echo made > s.txt && printf 't3\\n' >> tracked.txt && rm gone.txt")],
               [text("done")]], files=before)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=k.ws, check=True, capture_output=True)
    s = k.session()
    _, events = k.run(s["id"], "all three")
    check_turn_events(events, "completed")
    diff = check_order(events)
    assert {p: f["status"] for p, f in files_of(diff).items()} == {
        "e.txt": "modified", "w.txt": "added", "s.txt": "added", "tracked.txt": "modified", "gone.txt": "deleted"}
    assert files_of(diff)["s.txt"]["added"] == 1 and files_of(diff)["e.txt"]["added"] == 1
    assert "+++ b/s.txt" in diff["diff"] and "+++ b/w.txt" in diff["diff"]
    if all(f.get("omitted") is None for f in diff["files"]):  # every baseline known: the diff undoes the turn
        restored = undo(diff["diff"], k.ws, tmp_path)
        assert {p: (restored / p).read_text() for p in before} == before
    assert k.request("sessions/diff", {"sessionId": s["id"]})["files"] == diff["files"]


def test_a_shell_command_that_may_miss_changed_files_makes_both_summaries_say_so(kward):
    many = "python3 -c 'import os; os.mkdir(\"many\"); [open(f\"many/f{i}\", \"w\").close() for i in range(20001)]'"
    k = kward([[shell(many)], [text("made many")], [write("a.txt", "a\n")], [text("wrote")]])
    s = k.session()
    _, first = k.run(s["id"], "many", timeout=30)
    check_turn_events(first, "completed")
    assert payload(first, "toolResult")["result"]["changedFilesComplete"] is False  # the snapshot's cap
    diff = check_order(first)
    assert diff["complete"] is False and diff["files"] == [] and diff["truncated"] is False
    assert "may be missing" in diff["note"]
    _, second = k.run(s["id"], "write one")
    turn2 = check_order(second)
    assert "complete" not in turn2 and "note" not in turn2  # this turn's calls listed all they changed
    assert files_of(turn2) == {"a.txt": {"path": "a.txt", "status": "added", "added": 1, "removed": 0}}
    total = k.request("sessions/diff", {"sessionId": s["id"]})
    assert total["complete"] is False and files_of(total) == files_of(turn2) and "may be missing" in total["note"]


@pytest.mark.parametrize("git", [False, True], ids=["plain", "git"])
def test_a_shell_command_cancelled_while_it_runs_reports_what_it_changed(kward, git):
    from lib.waiting import wait_until

    k = kward([[shell("echo a > a.txt; echo b > b.txt; touch started.marker; sleep 30")], [text("unreached")]])
    if git:
        subprocess.run(["git", "init", "-q", str(k.ws)], check=True)
    s = k.session()
    turn = k.start(s["id"], "write then hang")
    wait_until(lambda: (k.ws / "started.marker").exists(), 20, "the command to write")
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"], timeout=20)
    check_turn_events(events, "canceled")
    [result] = payloads(events, "toolResult")
    assert result["result"]["content"] == "Cancelled." and result["result"]["isError"] is True
    assert result["result"]["changedFiles"] == ["a.txt", "b.txt", "started.marker"]
    assert sorted(files_of(check_order(events))) == ["a.txt", "b.txt", "started.marker"]
    assert k.request("sessions/diff", {"sessionId": s["id"]})["files"][0]["path"] == "a.txt"
