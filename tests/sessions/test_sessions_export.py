"""sessions/export: Markdown and HTML rendering, default and explicit paths, confinement."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kward.errors import DirectoryNotFound, InvalidParams, PathNotAllowed
from kward.sessions.export import Exported, render_html, render_markdown
from lib.processes import dead_pid
from lib.session_manager import new_manager
from lib.session_records import assistant, recorded, tool_result, typed, typed_all, user


@pytest.fixture
def env(tmp_path):
    manager, ws = new_manager(tmp_path)
    s = manager.create(name="x")
    yield manager, ws, s
    manager.shutdown_all()


def test_markdown_rendering():
    md = render_markdown(typed_all([
        {"role": "system", "content": "hidden"},
        user("plain"),
        user([{"type": "text", "text": "see"}, {"type": "image", "mimeType": "image/png", "path": "/a/b.png"},
              {"type": "image", "data": "AAA"}], display_content="shown instead"),
        user([{"type": "text", "text": "see"}, {"type": "image", "mimeType": "image/png", "path": "/a/b.png"}]),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}]},
        tool_result("c", "read_file", "file text"),
        {"role": "compactionSummary", "summary": "so far"},
    ]))
    assert md == "\n".join([
        "# Kward Session", "",
        "## User", "", "plain", "",
        "## User", "", "shown instead", "",
        "## User", "", "see\n[image/png: /a/b.png]", "",
        "## Assistant", "", "> Reasoning:\n> hmm\n\nok", "",
        "## Tool", "Tool: `read_file`", "", "file text", "",
        "## Compaction summary", "", "so far", "",
    ])


def test_markdown_reasoning_tool_calls_and_empty_assistant_messages():
    long_args = json.dumps({"path": "x" * 500})
    md = render_markdown(typed_all([
        user("go"),
        assistant("", reasoning_summary="first look\n\nthen act",
                  calls=[("c1", "read_file", {"path": "notes.txt"}), ("c2", "run_shell_command", {"command": "ls\n-la"})]),
        tool_result("c1", "read_file", "notes"),
        assistant(""),  # nothing to show: no block at all
        assistant("", calls=[("c3", "write_file", json.loads(long_args))]),
        assistant([{"type": "reasoning", "text": "from a part"}, {"type": "text", "text": "the answer"}],
                  reasoning_summary="not shown twice"),
        assistant("plain answer"),
    ]))
    blocks = md.split("## ")[1:]
    assert [b.split("\n", 1)[0] for b in blocks] == ["User", "Assistant", "Tool", "Assistant", "Assistant", "Assistant"]
    assert blocks[1] == ("Assistant\n\n> Reasoning:\n> first look\n>\n> then act\n\n"
                         "Tool call: `read_file` {\"path\": \"notes.txt\"}\n"
                         "Tool call: `run_shell_command` {\"command\": \"ls\\n-la\"}\n\n")
    shown = blocks[3].split("Tool call: `write_file` ", 1)[1].strip()
    assert len(shown) == 200 and shown.endswith("...") and shown.startswith('{"path": "xxx')
    assert blocks[4] == "Assistant\n\n> Reasoning:\n> from a part\n\nthe answer\n\n"
    assert "not shown twice" not in md
    assert blocks[5] == "Assistant\n\nplain answer\n"
    assert render_html(md).count("&gt; Reasoning:") == 2  # HTML is the escaped Markdown


def test_html_escapes_everything():
    page = render_html(render_markdown(typed_all([user("<script>alert('x') & \"y\"</script>")])))
    assert "<title>Kward Session</title>" in page
    body = page[page.index("<pre>") + 5:page.index("</pre>")]
    assert "<" not in body and ">" not in body and "'" not in body and '"' not in body
    assert "&lt;script&gt;alert(&#x27;x&#x27;) &amp; &quot;y&quot;&lt;/script&gt;" in body


def test_default_paths_and_formats(env):
    manager, _, s = env
    s.append_message(typed(user("<b>hi</b>")))
    base = s.path[:-len(".jsonl")]
    assert manager.export(s.id) == Exported(base + ".md", "markdown")
    assert manager.export(s.id, format="md") == Exported(base + ".md", "markdown")
    assert manager.export(s.id, format=" HTML ") == Exported(base + ".html", "html")
    assert "&lt;b&gt;hi&lt;/b&gt;" in Path(base + ".html").read_text()
    assert Path(base + ".md").read_text().startswith("# Kward Session\n\n## User\n\n<b>hi</b>")
    assert stat.S_IMODE(os.stat(base + ".md").st_mode) == 0o600
    with pytest.raises(InvalidParams):
        manager.export(s.id, format="pdf")


def test_explicit_paths_inside_workspace_or_session_dir(env):
    manager, ws, s = env
    (ws / "out").mkdir()
    result = manager.export(s.id, path="out/t.md")
    assert result.path == str((ws / "out" / "t.md").resolve()) and os.path.exists(result.path)
    manager.export(s.id, path="out/t.md")  # overwriting a regular file is fine
    inside_sessions = str(Path(s.path).parent / "copy.html")
    assert manager.export(s.id, path=inside_sessions, format="html").path == inside_sessions


def test_paths_outside_are_refused(env, tmp_path):
    manager, ws, s = env
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "real").mkdir()
    os.symlink(outside, ws / "link")  # a symlinked parent that escapes
    os.symlink(ws / "real", ws / "inner-link")  # a symlinked parent that stays inside
    os.symlink(outside, ws / "real" / "deep")
    (outside / "sub").mkdir()  # reached through a symlink in the middle of the path
    os.symlink(outside / "target.md", ws / "file-link.md")  # the target itself is a symlink
    (ws / "notes.txt").write_text("a file, not a directory")
    for bad in (str(outside / "x.md"), "../outside/x.md", "link/x.md", "inner-link/x.md",
                "real/deep/x.md", "real/deep/sub/x.md", "file-link.md", ".", "real", "/etc/passwd",
                "link/missing/x.md", "real/deep/missing/x.md", "real/deep/sub/missing/x.md", "notes.txt/x.md",
                str(outside / "missing" / "x.md")):
        with pytest.raises(PathNotAllowed) as err:
            manager.export(s.id, path=bad)
        assert err.value.reason == "path_not_allowed", bad
    with pytest.raises(DirectoryNotFound) as missing:  # inside, but not there: said so
        manager.export(s.id, path="inner-link/missing-dir/x.md")
    assert missing.value.data["missing"] == str(ws / "inner-link" / "missing-dir")
    assert os.listdir(outside) == ["sub"] and os.listdir(outside / "sub") == []


def test_session_files_and_their_sidecars_are_never_export_targets(env, tmp_path):
    manager, ws, s = env
    s.append_message(typed(user("keep me")))
    sibling = manager.create(name="sibling")
    session_dir = Path(s.path).parent
    workspace_copy = ws / "copied.jsonl"  # a session file outside the session directory
    workspace_copy.write_bytes(Path(sibling.path).read_bytes())
    (ws / "copied.jsonl.lock").touch()
    for bad in (s.path, sibling.path, s.path + ".lock", s.path + ".open", str(session_dir / "new.jsonl"),
                str(session_dir / "notes.txt"), str(workspace_copy), "copied.jsonl.lock", "copied.jsonl.open"):
        with pytest.raises(PathNotAllowed) as err:
            manager.export(s.id, path=bad)
        assert err.value.reason == "path_not_allowed", bad
    s.append_message(typed(user("still written")))
    assert [m["content"] for m in recorded(s.conversation)] == ["keep me", "still written"]
    text = Path(s.path).read_text()
    assert "keep me" in text and "still written" in text
    assert not (session_dir / "new.jsonl").exists() and not (session_dir / "notes.txt").exists()
    # plain files that merely look similar stay fine targets
    (ws / "data.jsonl").write_text('{"type": "message"}\n')
    assert manager.export(s.id, path="data.jsonl").path == str((ws / "data.jsonl").resolve())
    assert manager.export(s.id, path=str(session_dir / "Notes.HTML"), format="html")


def test_overwrite_policy(env, tmp_path):
    """Regular files are replaced (written 0600); symlinks, directories, FIFOs and
    session files never are."""
    manager, ws, s = env
    (ws / "old.md").write_text("old")
    os.chmod(ws / "old.md", 0o644)
    assert manager.export(s.id, path="old.md").path == str(ws / "old.md")
    assert (ws / "old.md").read_text().startswith("# Kward Session")
    assert stat.S_IMODE(os.stat(ws / "old.md").st_mode) == 0o600
    (ws / "adir").mkdir()
    os.mkfifo(ws / "pipe.md")  # must be refused without being opened (that would block)
    os.symlink("old.md", ws / "inner-link.md")  # even a symlink pointing inside
    for bad in ("adir", "pipe.md", "inner-link.md"):
        with pytest.raises(PathNotAllowed):
            manager.export(s.id, path=bad)
    assert os.path.islink(ws / "inner-link.md") and stat.S_ISFIFO(os.lstat(ws / "pipe.md").st_mode)


def test_a_symlinked_directory_above_the_parent_still_resolves(env):
    manager, ws, s = env
    (ws / "real" / "sub").mkdir(parents=True)
    os.symlink("real", ws / "alias")
    result = manager.export(s.id, path="alias/sub/x.md")  # the parent itself is no symlink
    assert result.path == str(ws / "real" / "sub" / "x.md") and (ws / "real" / "sub" / "x.md").exists()


def test_os_limits_are_invalid_params(env):
    manager, ws, s = env
    with pytest.raises(InvalidParams) as info:
        manager.export(s.id, path="x" * 300 + ".md")
    assert info.value.reason == "invalid_params" and info.value.data["param"] == "path"
    assert "File name too long" in info.value.message
    with pytest.raises(InvalidParams) as info:
        manager.export(s.id, path="a\x00b.md")
    assert info.value.data["param"] == "path"


def test_dead_processes_temp_files_are_removed_by_the_next_export(env):
    manager, ws, s = env
    (ws / "out").mkdir()
    session_dir = Path(s.path).parent
    dead, live = dead_pid(), os.getppid()
    planted = {d: [f".exp-{dead}-0123abcd.tmp", f".exp-{live}-0123abcd.tmp", f".exp-{os.getpid()}-0123abcd.tmp",
                   f".exp-{dead}-0123abcd.tmp.keep", "notes.tmp"] for d in (ws / "out", session_dir)}
    for directory, names in planted.items():
        for name in names:
            (directory / name).write_text("partial export")
    manager.export(s.id, path="out/chat.md")
    assert sorted(os.listdir(ws / "out")) == sorted(["chat.md"] + planted[ws / "out"][1:])
    assert (session_dir / planted[session_dir][0]).exists()  # only the directory written into
    manager.export(s.id)  # the default path: beside the session file
    assert not (session_dir / planted[session_dir][0]).exists()
    assert all((session_dir / name).exists() for name in planted[session_dir][1:])


def test_a_directory_the_os_refuses_to_look_into_is_not_called_missing(tmp_path, monkeypatch):
    """Only "no such file" means missing: a refused lstat (EACCES in `locked/sub`) is answered
    as a path the OS cannot use, naming the OS's words."""
    from kward.sessions import export_target

    ws = tmp_path / "ws"
    (ws / "locked").mkdir(parents=True)
    session = tmp_path / "sessions" / "s.jsonl"
    real_lstat = os.lstat

    def lstat(path, *args, **kwargs):
        if str(path).startswith(str(ws / "locked") + os.sep):
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(export_target.os, "lstat", lstat)
    monkeypatch.setattr(export_target.os.path, "isdir", lambda p: str(p) == str(ws) or str(p) == str(ws / "locked"))
    with pytest.raises(InvalidParams) as caught:
        export_target.resolve_target("locked/sub/x.md", ".md", (".md",), session_path=str(session),
                                     workspace_root=str(ws))
    assert "Permission denied" in caught.value.message and caught.value.data["param"] == "path"
    with pytest.raises(DirectoryNotFound) as missing:  # a plain missing directory stays what it was
        export_target.resolve_target("gone/sub/x.md", ".md", (".md",), session_path=str(session),
                                     workspace_root=str(ws))
    assert missing.value.data["missing"] == str(ws / "gone")
