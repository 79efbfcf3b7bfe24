"""sessions/export over the real `kward rpc`: litter of killed exports is cleaned up,
OS limits answer -32602, and the overwrite rules."""

from __future__ import annotations

import os
import signal

import pytest

from lib.processes import dead_pid
from lib.rpc_sessions import start, workspace  # noqa: F401 (fixtures)


def test_temp_files_of_a_killed_export_are_removed_by_the_next_one(start, workspace):
    k = start()
    s = k.create(name="litter")
    out = workspace / "out"
    out.mkdir()
    victim = start()  # a second process whose export temp file outlives it
    victim_pid = victim.proc.pid
    (out / f".exp-{victim_pid}-0badc0de.tmp").write_text("half an export")
    (out / f".exp-{dead_pid()}-0badc0de.tmp").write_text("half an export")
    k.request("sessions/export", {"sessionId": s["id"], "path": "out/chat.md"})
    assert (out / f".exp-{victim_pid}-0badc0de.tmp").exists()  # its process still runs
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(10)
    k.request("sessions/export", {"sessionId": s["id"], "path": "out/chat.md"})
    assert sorted(os.listdir(out)) == ["chat.md"]


def test_os_limits_and_overwrite_rules(start, workspace):
    k = start()
    s = k.create(name="limits")
    err = k.error("sessions/export", {"sessionId": s["id"], "path": "n" * 300 + ".md"})
    assert err.code == -32602 and err.reason == "invalid_params" and err.error["data"]["param"] == "path"
    (workspace / "mine.md").write_text("the user said replace it")
    assert k.request("sessions/export", {"sessionId": s["id"], "path": "mine.md"})["path"] == str(workspace / "mine.md")
    assert (workspace / "mine.md").read_text().startswith("# Kward Session")
    os.mkfifo(workspace / "pipe.md")
    err = k.error("sessions/export", {"sessionId": s["id"], "path": "pipe.md"})
    assert err.code == -32602 and err.reason == "path_not_allowed"
    (workspace / "copy.jsonl").write_bytes(open(s["path"], "rb").read())  # a session file in the workspace
    err = k.error("sessions/export", {"sessionId": s["id"], "path": "copy.jsonl"})
    assert err.reason == "path_not_allowed" and "session file" in err.error["message"]


def test_an_export_into_a_missing_directory_names_it_and_creates_nothing(start, workspace, tmp_path):
    k = start()
    s = k.create(name="nowhere")
    before = sorted(p for p in workspace.rglob("*"))
    for given, missing in (("gone/chat.md", workspace / "gone"), ("gone/deeper/chat.md", workspace / "gone"),
                           (str(workspace / "also" / "x.html"), workspace / "also")):
        err = k.error("sessions/export", {"sessionId": s["id"], "path": given})
        assert (err.code, err.reason) == (-32602, "directory_not_found"), err.error
        parent = os.path.dirname(os.path.join(str(workspace), given))
        assert err.error["data"]["directory"] == parent and err.error["data"]["missing"] == str(missing)
        assert f"Export directory does not exist: {parent}" in err.error["message"]
    # outside the workspace it stays path_not_allowed: nothing is said about what exists there
    err = k.error("sessions/export", {"sessionId": s["id"], "path": str(tmp_path / "elsewhere" / "x.md")})
    assert err.reason == "path_not_allowed"
    assert sorted(p for p in workspace.rglob("*")) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may look into a mode 000 directory")
def test_an_export_below_a_directory_without_permissions_is_not_called_missing(start, workspace):
    k = start()
    s = k.create(name="locked")
    locked = workspace / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        err = k.error("sessions/export", {"sessionId": s["id"], "path": "locked/sub/x.md"})
    finally:
        locked.chmod(0o700)
    assert (err.code, err.reason) == (-32602, "invalid_params") and "Permission denied" in err.error["message"]
