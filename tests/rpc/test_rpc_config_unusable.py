"""A config.json kward cannot use (a directory, unreadable, a FIFO, a link to /dev/zero or
to a directory, a huge file) answers what needs config with an error naming it, while the rest is served
and end of input still ends the process."""

import os

import pytest

from lib.rpc_client import RpcClient

# methods that read config.json, and methods that do not
NEEDS_CONFIG = ("config/read", "models/current", "auth/status")
NO_CONFIG = ("workspace/info", "sessions/list", "tools/list")


def make_unusable(cfg, kind):
    if kind == "directory":
        cfg.mkdir()
    elif kind == "unreadable":
        cfg.write_text('{"model": "m"}')
        cfg.chmod(0)
    elif kind == "fifo":
        os.mkfifo(cfg)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", cfg)
    elif kind == "link-to-directory":
        (cfg.parent / "elsewhere").mkdir()
        os.symlink(cfg.parent / "elsewhere", cfg)
    elif kind == "huge":
        with open(cfg, "wb") as f:
            f.truncate(300 << 20)  # sparse: 300 MB that read as NUL bytes


# what each is answered: kward's own file that is not what it must be is invalid_config,
# one the OS refuses to read a filesystem error
EXPECTED = {"directory": (-32003, "filesystem_error"), "unreadable": (-32003, "permission_denied"),
            "fifo": (-32002, "invalid_config"), "dev-zero": (-32002, "invalid_config"),
            "link-to-directory": (-32002, "invalid_config"), "huge": (-32002, "invalid_config")}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_an_unusable_config_is_named_and_the_rest_is_served(isolated_home, kind):
    if kind == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    cfg = isolated_home / ".kward" / "config.json"
    cfg.parent.mkdir()
    make_unusable(cfg, kind)
    with RpcClient(isolated_home) as c:
        warnings = c.request("initialize", timeout=5)["warnings"]
        assert any(str(cfg) in w["message"] for w in warnings), warnings
        sent = {m: c.send(m) for m in NEEDS_CONFIG + NO_CONFIG}
        for method in NEEDS_CONFIG:
            err = c.response(sent[method], timeout=5)["error"]
            assert (err["code"], err["data"]["reason"]) == EXPECTED[kind] and err["data"]["path"] == str(cfg), \
                (method, err)
            assert str(cfg) in err["message"] and "Internal error" not in err["message"], (method, err)
        for method in NO_CONFIG:
            assert "result" in c.response(sent[method], timeout=5), method
        c.close_stdin()
        assert c.wait_exit(timeout=2) == 0  # end of input ends the process (subprocess.TimeoutExpired if not)
        assert c.stderr == "" and c.protocol_errors == [] and c.null_id_errors == []
    if kind == "huge":
        assert cfg.stat().st_size == 300 << 20
    elif kind == "unreadable":
        cfg.chmod(0o600)


def test_a_config_others_may_read_is_narrowed_to_0600_when_read(isolated_home):
    cfg = isolated_home / ".kward" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text('{"openrouter_api_key": "sk-or-v1-0123456789abcdef0123"}')
    cfg.chmod(0o644)  # it may hold a key
    with RpcClient(isolated_home) as c:
        c.request("initialize", timeout=5)
        c.request("config/read", timeout=5)
        assert oct(cfg.stat().st_mode & 0o777) == oct(0o600)
        c.close_stdin()
        assert c.wait_exit(timeout=5) == 0
        assert c.stderr == ""  # logged before the log was set up: to the file, not to stderr
    log = (isolated_home / ".kward" / "logs" / "kward.log").read_text()
    assert f"{cfg} had mode 0644 (wider than 0600); kward set it to 0600" in log
