"""Filesystem failures answer a reason, the path and the OS's words,
never `-32603 Internal error: OSError`; and nothing is written on a failed write.

Permission tests also run as root: the server is started through a wrapper that drops the
capabilities which let root ignore file modes (CAP_DAC_OVERRIDE and friends) from its
bounding set before exec'ing `kward rpc`. The other tests need no permissions at all (a
path component that is a regular file, a file-size limit, a directory where a file
belongs), so they hold for every user.
"""

import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest

from lib.loopback_kward import run_turn
from lib.rpc_client import RpcClient, kward_command, kward_env
from lib.turn_events import failed_error

from kward.errors import FilesystemError, as_kward_error

# Execs argv[3:] after applying limits: argv[1] = RLIMIT_FSIZE bytes (0: none), argv[2] =
# "1" to drop root's file-mode overrides (exit 77 when that is not possible; the bounding
# set only takes effect at the exec).
WRAPPER = textwrap.dedent("""
    import ctypes, os, resource, sys
    if int(sys.argv[1]):
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2)
    if sys.argv[2] == "1" and os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                os._exit(77)
    os.execv(sys.argv[3], sys.argv[3:])
""")


def limited(home, *, fsize=0, honour_modes=False, **env):
    return RpcClient(home, env=kward_env(home, **env),
                     argv=[sys.executable, "-c", WRAPPER, str(fsize), "1" if honour_modes else "0",
                           *kward_command()])


def modes_apply(tmp_path) -> bool:
    """Whether a wrapped child is refused a write into a 0500 directory."""
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o500)
    result = subprocess.run([sys.executable, "-c", WRAPPER, "0", "1",
                             sys.executable, "-c", f"open({str(probe / 'x')!r}, 'w')"], capture_output=True, timeout=30)
    probe.chmod(0o700)
    return result.returncode not in (0, 77)


def fs_error(err, reason):
    data = err.error["data"]
    assert err.code == -32003 and data["reason"] == reason and data["errorClass"] == "FilesystemError", err.error
    assert "Internal error" not in err.error["message"] and data["osMessage"] in err.error["message"]
    return data


def test_a_sessions_directory_that_is_a_file(isolated_home):
    (isolated_home / ".kward").mkdir()
    sessions = isolated_home / ".kward" / "sessions"
    sessions.write_text("not a directory")
    with RpcClient(isolated_home) as c:
        err = c.error("sessions/create", {"workspaceRoot": str(isolated_home)})
        data = fs_error(err, "not_a_directory")
        assert data["errno"] == "ENOTDIR" and data["osMessage"] == os.strerror(errno.ENOTDIR)
        assert data["path"].startswith(str(sessions)) and str(sessions) in err.error["message"]
        assert c.request("workspace/info")["writable"] is True  # the server carries on
        assert c.close() == 0 and c.stderr == ""
    assert sessions.read_text() == "not a directory"


def test_a_config_directory_that_is_a_file(isolated_home):
    blocker = isolated_home / "cfgfile"
    blocker.write_text("x")
    config = blocker / "config.json"
    with RpcClient(isolated_home, env=kward_env(isolated_home, KWARD_CONFIG_PATH=str(config))) as c:
        warnings = c.request("initialize")["warnings"]  # start-up and initialize survive it
        assert [w["reason"] for w in warnings] == ["not_a_directory"] and str(blocker) in warnings[0]["message"]
        data = fs_error(c.error("config/update", {"values": {"model": "m"}}), "not_a_directory")
        assert data["errno"] == "ENOTDIR" and data["path"] == str(blocker)
        data = fs_error(c.error("config/read"), "not_a_directory")
        assert data["path"] == str(config) and data["notADirectory"] == str(blocker)
        assert c.close() == 0 and c.stderr == ""
    assert blocker.read_text() == "x"


@pytest.mark.slow
def test_a_write_cut_short_names_the_file_and_writes_nothing(isolated_home):
    """A file-size limit makes `write` fail part way (EFBIG), as a full disk would."""
    cfg = isolated_home / ".kward" / "config.json"
    with limited(isolated_home, fsize=8192) as c:
        assert c.request("config/update", {"values": {"model": "m"}})["config"] == {"model": "m"}
        before = cfg.read_bytes()
        err = c.error("config/update", {"values": {"notes": "x" * 20000}})
        data = fs_error(err, "filesystem_error")
        assert data["errno"] == "EFBIG" and data["path"] == str(cfg) and str(cfg) in err.error["message"]
        assert c.request("config/read")["config"] == {"model": "m"}
        assert c.close() == 0 and c.stderr == ""
    assert cfg.read_bytes() == before
    assert [p.name for p in cfg.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow
def test_unwritable_sessions_and_config_directories(isolated_home, tmp_path):
    if not modes_apply(tmp_path):
        pytest.skip("cannot make file modes apply to this user (root without CAP_SETPCAP)")
    cfg_dir = isolated_home / ".kward"
    sessions = cfg_dir / "sessions"
    sessions.mkdir(parents=True)
    (cfg_dir / "config.json").write_text('{"model": "m"}')
    (cfg_dir / ".config.lock").write_text("")
    sessions.chmod(0o500)
    cfg_dir.chmod(0o500)
    try:
        with limited(isolated_home, honour_modes=True) as c:
            err = c.error("sessions/create", {"workspaceRoot": str(isolated_home)})
            data = fs_error(err, "permission_denied")
            assert data["errno"] == "EACCES" and data["path"].startswith(str(sessions))
            assert err.error["message"].startswith("Permission denied: '" + str(sessions))
            data = fs_error(c.error("config/update", {"values": {"model": "n"}}), "permission_denied")
            assert data["path"].startswith(str(cfg_dir))
            assert c.request("config/read")["config"] == {"model": "m"}
            assert c.close() == 0 and c.stderr == ""
    finally:
        sessions.chmod(0o700)
        cfg_dir.chmod(0o700)
    assert list(sessions.iterdir()) == [] and json.loads((cfg_dir / "config.json").read_text()) == {"model": "m"}


@pytest.mark.slow
def test_a_turn_that_meets_a_filesystem_failure_says_so(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    cfg = isolated_home / ".kward" / "config.json"
    with RpcClient(isolated_home, env=kward_env(isolated_home, KWARD_PROVIDER="scripted")) as c:
        session = c.request("sessions/create", {"workspaceRoot": str(ws)})
        cfg.mkdir()  # the config file is a directory now: reading it fails with EISDIR
        error = failed_error(run_turn(c, session["id"]))
        assert error["reason"] == "filesystem_error" and error["code"] == "FilesystemError"
        assert error["data"]["errno"] == "EISDIR" and error["data"]["path"] == str(cfg)
        assert error["message"] == f"{os.strerror(errno.EISDIR)}: {str(cfg)!r}"
        assert c.close() == 0 and c.stderr == ""


@pytest.mark.parametrize("code, reason, wire", [
    (errno.EROFS, "read_only_filesystem", -32003), (errno.EACCES, "permission_denied", -32003),
    (errno.EPERM, "permission_denied", -32003), (errno.ENOSPC, "disk_full", -32003),
    (errno.EDQUOT, "disk_full", -32003), (errno.ENOTDIR, "not_a_directory", -32003),
    (errno.EMFILE, "too_many_open_files", -32003), (errno.EIO, "filesystem_error", -32003),
    (errno.ENAMETOOLONG, "name_too_long", -32602), (errno.ELOOP, "name_too_long", -32602),
])
def test_the_one_conversion_of_os_errors(code, reason, wire):
    err = as_kward_error(OSError(code, os.strerror(code), "/home/u/.kward/sessions"))
    assert isinstance(err, FilesystemError) and err.reason == reason and err.code == wire
    assert err.message == f"{os.strerror(code)}: '/home/u/.kward/sessions'"
    assert err.data == {"path": "/home/u/.kward/sessions", "errno": errno.errorcode[code],
                        "osMessage": os.strerror(code)}


def test_what_is_not_a_filesystem_failure_stays_internal():
    assert as_kward_error(ConnectionResetError(errno.ECONNRESET, "reset")) is None
    assert as_kward_error(TimeoutError("slow")) is None
    assert as_kward_error(OSError("no errno")) is None
    assert as_kward_error(RuntimeError("bug")) is None
    err = as_kward_error(OSError(errno.ENOSPC, "No space left on device"))  # a write(): no file name
    assert err.message == "No space left on device" and "path" not in err.data
