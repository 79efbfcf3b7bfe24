"""sessions/clone, forkMessages, fork, export, delete and close over the real `kward rpc`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.rpc_sessions import start, workspace  # noqa: F401 (fixtures)
from lib.scripts import text, wait_for_steer
from lib.session_records import messages_of, strict_records

WAITING = [[text("Working..."), wait_for_steer(30)]]


def user_texts(path: str) -> list[str]:
    return [m["content"] for m in messages_of(strict_records(path)) if m["role"] == "user"]


@pytest.mark.slow
def test_clone(start, workspace):
    k = start()
    source = k.create(name="source")
    k.run_turn(source["id"], "one")
    source_bytes = Path(source["path"]).read_bytes()
    clone = k.request("sessions/clone", {"sessionId": source["id"]})
    assert clone["parentId"] == source["persistentId"] and clone["parentPath"] == source["path"]
    assert clone["id"] not in (source["id"], source["persistentId"]) and clone["path"] != source["path"]
    assert clone["name"] == "source" and clone["workspaceRoot"] == clone["cwd"] == str(workspace)
    assert clone["persistentId"] in clone["path"]
    head = strict_records(clone["path"])[0]
    assert head["parentId"] == source["persistentId"] and head["parentPath"] == source["path"]
    assert k.transcript(clone["id"])["messages"] == k.transcript(source["id"])["messages"]
    # independent from here on: each file gets only its own turns; the source is untouched
    k.run_turn(clone["id"], "only in the clone")
    assert Path(source["path"]).read_bytes() == source_bytes
    assert user_texts(clone["path"]) == ["one", "only in the clone"]
    k.run_turn(source["id"], "only in the source")
    assert user_texts(clone["path"]) == ["one", "only in the clone"]
    assert user_texts(source["path"]) == ["one", "only in the source"]
    # both stay open under their own ids; a fresh process resumes the clone with its parent fields
    assert k.close() == 0
    r = start().resume(clone["path"])
    assert (r["parentId"], r["parentPath"], r["name"]) == (source["persistentId"], source["path"], "source")


@pytest.mark.slow
def test_fork_messages_and_fork(start, workspace):
    k = start()
    source = k.create(name="forked")
    k.run_turn(source["id"], "first   question\n with  spaces")
    k.run_turn(source["id"], "second question")
    source_bytes = Path(source["path"]).read_bytes()
    assert k.request("sessions/forkMessages", {"sessionId": source["id"]}) == {"messages": [
        {"entryId": "message:0", "text": "first question with spaces"},
        {"entryId": "message:4", "text": "second question"},
    ]}
    result = k.request("sessions/fork", {"sessionId": source["id"], "entryId": "message:4"})
    assert set(result) == {"session", "text", "cancelled"}
    assert result["text"] == "second question" and result["cancelled"] is False
    fork = result["session"]
    assert fork["parentId"] == source["persistentId"] and fork["parentPath"] == source["path"]
    assert fork["id"] != source["id"] and fork["name"] == "forked" and fork["workspaceRoot"] == str(workspace)
    full = k.transcript(source["id"])["messages"]
    assert k.transcript(fork["id"])["messages"] == full[:4]  # history before the chosen message
    assert Path(source["path"]).read_bytes() == source_bytes
    k.run_turn(fork["id"], "edited second question")
    assert user_texts(fork["path"]) == ["first   question\n with  spaces", "edited second question"]
    assert Path(source["path"]).read_bytes() == source_bytes

    first = k.request("sessions/fork", {"sessionId": source["id"], "entryId": "message:0"})
    assert first["text"] == "first   question\n with  spaces"  # the full text, for the composer
    assert k.transcript(first["session"]["id"])["messages"] == []

    for entry in ["message:1", "message:3", "message:99", "message:-1", "bogus", "", "message:x"]:
        err = k.error("sessions/fork", {"sessionId": source["id"], "entryId": entry})
        assert err.code == -32602 and err.error["data"]["param"] == "entryId", entry
        assert entry in err.error["message"], entry
    for params in [{"sessionId": source["id"]}, {"sessionId": source["id"], "entryId": None},
                   {"sessionId": source["id"], "entryId": 4}]:
        err = k.error("sessions/fork", params)
        assert err.code == -32602 and "'entryId'" in err.error["message"] and err.error["data"]["param"] == "entryId"
    assert k.request("sessions/forkMessages", {"sessionId": k.create()["id"]}) == {"messages": []}


SCARY = '<script>alert("x")</script> & <b>bold</b>'


@pytest.fixture
def exported(start):
    k = start()
    s = k.create(name="export me")
    k.run_turn(s["id"], SCARY)
    return k, s


def test_export_formats_and_default_paths(exported):
    k, s = exported
    base = s["path"][: -len(".jsonl")]
    assert k.request("sessions/export", {"sessionId": s["id"]}) == {"path": base + ".md", "format": "markdown"}
    markdown = Path(base + ".md").read_text()
    assert markdown.startswith("# Kward Session\n\n## User\n\n" + SCARY + "\n")
    assert ("## Assistant\n\n> Reasoning:\n> Thinking about the notes.\n\nReading them.\n\n"
            'Tool call: `read_file` {"path": "notes.txt"}\n\n## Tool\nTool: `read_file`') in markdown
    assert "## Assistant\n\nThe notes say hello.\n" in markdown
    for fmt in ("md", "MD", "Markdown", " markdown "):  # any case
        os.remove(base + ".md")
        assert k.request("sessions/export", {"sessionId": s["id"], "format": fmt}) == {"path": base + ".md",
                                                                                         "format": "markdown"}
        assert Path(base + ".md").read_text() == markdown
    for fmt in ("HTML", "Html", "html"):
        assert k.request("sessions/export", {"sessionId": s["id"], "format": fmt}) == {"path": base + ".html",
                                                                                         "format": "html"}
    page = Path(base + ".html").read_text()
    assert "<title>Kward Session</title>" in page and "<pre># Kward Session" in page
    assert "<script>" not in page and "<b>" not in page  # everything escaped
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    for bad in ("pdf", 12, ["md"]):
        err = k.error("sessions/export", {"sessionId": s["id"], "format": bad})
        assert err.code == -32602 and err.error["data"]["param"] == "format" and "format" in err.error["message"]
    # exports are not sessions: the listing still shows the one session
    assert [i["path"] for i in k.listing()] == [s["path"]]


@pytest.mark.slow
def test_export_explicit_paths(exported, workspace):
    k, s = exported
    (workspace / "out").mkdir()
    r = k.request("sessions/export", {"sessionId": s["id"], "path": "out/chat.md"})
    assert r == {"path": str(workspace / "out" / "chat.md"), "format": "markdown"}
    assert (workspace / "out" / "chat.md").read_text().startswith("# Kward Session")
    r = k.request("sessions/export", {"sessionId": s["id"], "path": str(workspace / "chat.html"), "format": "html"})
    assert r["path"] == str(workspace / "chat.html") and "&lt;script&gt;" in (workspace / "chat.html").read_text()
    beside = os.path.join(os.path.dirname(s["path"]), "copy.md")  # the session directory is allowed too
    assert k.request("sessions/export", {"sessionId": s["id"], "path": beside})["path"] == beside
    # the same target again replaces it
    assert k.request("sessions/export", {"sessionId": s["id"], "path": "out/chat.md", "format": "html"})["format"] == "html"
    assert "<pre>" in (workspace / "out" / "chat.md").read_text()


def test_export_refused_paths(exported, workspace, tmp_path):
    k, s = exported
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "link-out")
    (workspace / "inner").mkdir()
    os.symlink(workspace / "inner", workspace / "link-in")  # a symlinked parent, even pointing inside
    (workspace / "target").write_text("x")
    os.symlink(outside / "victim.md", workspace / "target-link.md")
    (workspace / "adir").mkdir()
    refused = ["../escape.md", str(outside / "abs.md"), "/etc/kward.md", "link-out/x.md", "link-in/x.md",
               "link-out/missing-dir/x.md", "target-link.md", "adir", "adir/", ".", "notes.txt/x.md"]
    for path in refused:
        err = k.error("sessions/export", {"sessionId": s["id"], "path": path})
        assert err.code == -32602 and err.reason == "path_not_allowed", path
        assert err.error["data"]["errorClass"] == "PathNotAllowed", path
    assert list(outside.iterdir()) == [] and not (workspace / "inner" / "x.md").exists()
    assert not (tmp_path / "escape.md").exists()
    err = k.error("sessions/export", {"sessionId": s["id"], "path": "missing-dir/x.md"})  # inside: said so
    assert err.reason == "directory_not_found" and err.error["data"]["missing"] == str(workspace / "missing-dir")
    assert not (workspace / "missing-dir").exists()
    err = k.error("sessions/export", {"sessionId": s["id"], "path": 12})
    assert err.code == -32602 and err.error["data"]["param"] == "path"


@pytest.mark.slow
def test_delete(start):
    k = start()
    s = k.create(name="doomed")
    k.run_turn(s["id"], "hi")
    assert os.path.exists(s["path"] + ".lock")
    assert k.request("sessions/delete", {"sessionId": s["id"]}) == {"deleted": True, "path": s["path"]}
    for suffix in ("", ".lock", ".open"):
        assert not os.path.exists(s["path"] + suffix), suffix
    err = k.error("sessions/delete", {"sessionId": s["id"]})
    assert err.error["message"] == f"Unknown session: {s['id']}" and err.reason == "session_not_found"
    assert k.listing() == []


def test_delete_and_close_cancel_a_running_turn(start):
    k = start(WAITING)
    for method in ("sessions/close", "sessions/delete"):
        s = k.create(name=method)
        turn = k.start_turn(s["id"], "wait for me")
        k.wait_event(turn["id"], "assistantDelta")
        result = k.request(method, {"sessionId": s["id"]})
        assert k.outcome(turn["id"]) == "canceled"
        assert result == ({"closed": True} if method == "sessions/close" else {"deleted": True, "path": s["path"]})
        assert os.path.exists(s["path"]) == (method == "sessions/close")
        err = k.error("turns/start", {"sessionId": s["id"], "input": "again"})
        assert err.error["message"] == f"Unknown session: {s['id']}"
    # the closed session keeps its content and can be resumed
    [item] = k.listing()
    r = k.resume(item["path"])
    # with what the cancelled turn had streamed, marked interrupted
    assert [(m["role"], m.get("interrupted")) for m in k.transcript(r["id"])["messages"]] == \
        [("user", None), ("assistant", True)]


@pytest.mark.slow
def test_close(start):
    k = start()
    s = k.create(name="kept")
    k.run_turn(s["id"], "hello")
    before = Path(s["path"]).read_bytes()
    assert k.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    assert Path(s["path"]).read_bytes() == before
    err = k.error("sessions/close", {"sessionId": s["id"]})
    assert err.code == -32602 and err.error["message"] == f"Unknown session: {s['id']}"
    assert k.resume(s["path"])["persistentId"] == s["persistentId"]


def test_a_fork_at_the_first_message_leaves_no_empty_named_session(start, workspace):
    k = start()
    source = k.create(name="forked")
    k.run_turn(source["id"], "first question")
    result = k.request("sessions/fork", {"sessionId": source["id"], "entryId": "message:0"})
    fork = result["session"]
    assert result["text"] == "first question" and fork["parentId"] == source["persistentId"]
    assert fork.get("name") is None  # nothing before the first message: a fresh, unnamed session
    assert k.transcript(fork["id"])["messages"] == []

    def empty_named(listing):
        return [s for s in listing["sessions"] if s.get("name") and s["messageCount"] == 0]

    other = start()  # a list refresh by another process, as a UI makes after every turn
    assert empty_named(k.request("sessions/list")) == [] and empty_named(other.request("sessions/list")) == []
    k.run_turn(fork["id"], "edited first question")  # once it has content it is listed, as a child
    listed = {s["path"]: s for s in other.request("sessions/list")["sessions"]}
    assert listed[fork["path"]]["parentId"] == source["persistentId"]
    assert listed[fork["path"]]["messageCount"] > 0 and listed[fork["path"]]["firstMessage"] == "edited first question"
    unused = k.request("sessions/fork", {"sessionId": source["id"], "entryId": "message:0"})["session"]
    k.create()  # moving on deletes the unused fork, as an unused new session
    assert not os.path.exists(unused["path"])
    assert empty_named(other.request("sessions/list")) == []
