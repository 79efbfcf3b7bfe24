"""auth.json as input, over the real `kward rpc`: a FIFO, a symlink (to a real login or to
/dev/zero) or a huge sparse file in its place is reported by `auth/status` and never read,
a turn whose tool output is scrubbed does not hang on it, and end of input still ends the
process at once; a login file readable by others is narrowed to 0600 when read."""

from __future__ import annotations

import json
import os
import stat

import pytest

from lib.fake_codex import make_jwt
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

LOGIN = {"auth_mode": "openai_oauth", "tokens": {"access_token": make_jwt("acct_files_1"),
                                                 "refresh_token": "rt-files-refresh-0001", "account_id": "acct_files_1"},
         "account_id": "acct_files_1", "saved_at": "2026-01-01T00:00:00Z"}


def _fifo(path):
    os.mkfifo(path)


def _link_to_login(path):
    real = path.with_name("real-auth.json")
    real.write_text(json.dumps(LOGIN), encoding="utf-8")
    os.chmod(real, 0o600)
    path.symlink_to(real)


def _link_to_zero(path):
    path.symlink_to("/dev/zero")


def _sparse(path):
    with open(path, "wb") as f:
        f.truncate(300 << 20)
    os.chmod(path, 0o600)


@pytest.mark.parametrize("make, problem", [
    (_fifo, "is not a regular file"),
    (_link_to_login, "is a symbolic link"),
    (_link_to_zero, "is a symbolic link"),
    (_sparse, "is larger than"),
], ids=["fifo", "symlink", "dev-zero-symlink", "sparse-300MB"])
def test_an_unusable_auth_file_is_reported_and_never_read(kward, make, problem):
    k = kward([[tool("run_shell_command", {"command": "echo listed"}, id="sh")], [text("done")]])
    auth = k.home / ".kward" / "auth.json"
    auth.parent.mkdir(exist_ok=True)
    make(auth)
    before = os.lstat(auth)
    status = k.request("auth/status")
    assert status["openaiOAuth"] is False and status["openaiOAuthSource"] is None
    assert problem in status["authFileProblem"] and str(auth) in status["authFileProblem"]
    assert status["authFileMode"] is None  # not a link's own bits, nor a FIFO's
    turn, events = k.run(k.session()["id"], "go")  # the tool output is scrubbed of the stored login's values
    check_turn_events(events, "completed")
    assert any(e["type"] == "toolResult" and "listed" in e["payload"]["content"] for e in events)
    assert k.request("auth/status")["authFileProblem"] == status["authFileProblem"]
    k.close_stdin()
    assert k.wait_exit(2) == 0
    after = os.lstat(auth)  # still there, untouched
    assert (after.st_mode, after.st_size, after.st_ino) == (before.st_mode, before.st_size, before.st_ino)
    if make is _link_to_login:
        assert os.readlink(auth).endswith("real-auth.json")


def test_a_login_file_others_can_read_is_narrowed_to_0600(kward):
    k = kward([[text("ok")]])
    auth = k.home / ".kward" / "auth.json"
    auth.parent.mkdir(exist_ok=True)
    auth.write_text(json.dumps(LOGIN), encoding="utf-8")
    os.chmod(auth, 0o644)
    status = k.request("auth/status")
    assert status["openaiOAuth"] is True and status["authFileProblem"] is None
    assert status["authFileMode"] == "0600" and stat.S_IMODE(os.stat(auth).st_mode) == 0o600
    log = "".join(p.read_text(encoding="utf-8") for p in (k.home / ".kward" / "logs").glob("*.log"))
    assert "0644" in log and "0600" in log


def test_any_bit_beyond_0600_is_narrowed_and_the_log_says_so(kward):
    k = kward([[text("ok")]])
    auth = k.home / ".kward" / "auth.json"
    auth.parent.mkdir(exist_ok=True)
    auth.write_text(json.dumps(LOGIN), encoding="utf-8")
    os.chmod(auth, 0o700)  # nobody else may read it, but it is wider than 0600
    status = k.request("auth/status")
    assert status["openaiOAuth"] is True and status["authFileMode"] == "0600"
    assert stat.S_IMODE(os.stat(auth).st_mode) == 0o600
    log = "".join(p.read_text(encoding="utf-8") for p in (k.home / ".kward" / "logs").glob("*.log"))
    assert f"{auth} had mode 0700 (wider than 0600); kward set it to 0600" in log
    assert "others could read" not in log


def test_no_auth_file_has_no_mode_and_no_problem(kward):
    k = kward([[text("ok")]])
    status = k.request("auth/status")
    assert status["authFileMode"] is None and status["authFileProblem"] is None


@pytest.mark.parametrize("make", [_fifo, _link_to_zero], ids=["fifo", "dev-zero-symlink"])
def test_provider_selection_does_not_read_an_unusable_auth_file(isolated_home, make):
    from lib.loopback_kward import start_kward

    auth = isolated_home / ".kward" / "auth.json"
    auth.parent.mkdir(exist_ok=True)
    make(auth)
    with start_kward(isolated_home, KWARD_PROVIDER=None) as client:  # chosen by the credentials there are
        info = client.request("initialize")
        assert info["serverName"] == "kward"
        assert client.request("auth/status")["openaiOAuth"] is False
        client.close_stdin()
        assert client.wait_exit(2) == 0
