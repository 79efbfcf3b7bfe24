"""The OAuth callback listener and the issuer setting, over the real `kward rpc`: a client
that connects and trickles bytes neither holds the listener (a real callback still
completes) nor keeps the login pending past its timeout, and is dropped after the
request-head deadline; the callback port is taken on both 127.0.0.1 and ::1, so a port
another process holds on ::1 is not used; an issuer that is not https is refused unless
its host is loopback."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from lib.auth_helpers import open_in_browser
from lib.fake_http import served
from lib.fake_oauth import FakeOAuth
from lib.ports import refused
from lib.rpc_auth import auth_env, finished, port_of, start
from lib.rpc_client import RpcError, spawn_kward

oauth = served(FakeOAuth)


@pytest.fixture
def kward(isolated_home, oauth):
    with start(isolated_home, oauth) as client:
        yield client
        assert client.protocol_errors == [] and client.stderr == ""


class Trickler:
    """A client of the callback port that sends the start of a request head, then one more
    byte every `every` seconds until stopped, and notes when the server closed on it."""

    def __init__(self, port: int, every: float = 0.2):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.every = every
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.answer = b""
        self.connected_at = time.monotonic()
        self.closed_at = float("inf")
        self.sock.sendall(b"GET /auth/callback?co")
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.sock.settimeout(self.every)
        while not self.stop.is_set():
            try:
                self.sock.sendall(b"d")
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            self.answer += data
        self.closed_at = time.monotonic()
        self.closed.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.sock.close()


@pytest.mark.slow
def test_a_trickling_client_does_not_keep_the_login_past_its_timeout(kward):
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 1.5})
    slow = Trickler(port_of(started["redirectUri"]))
    try:
        done = finished(kward, started["loginId"], timeout=6)
        assert done["status"] == "failed" and "within 1.5 s" in done["error"]
        assert slow.closed.wait(5)  # the listener closed with the login, the slow client with it
        assert refused(port_of(started["redirectUri"]))
    finally:
        slow.close()


@pytest.mark.slow
def test_a_real_callback_completes_while_a_slow_client_is_connected(kward):
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 60})
    slow = Trickler(port_of(started["redirectUri"]))
    try:
        page = open_in_browser(started["authorizationUrl"])
        assert page.status_code == 200 and "You can close this window" in page.text
        assert finished(kward, started["loginId"])["status"] == "completed"
    finally:
        slow.close()


def _quiet(port: int) -> socket.socket:
    """A connection that sends the start of a request head, then only reads."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /auth/callback?co")
    return sock


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends before it closes (blocking reads, the socket's timeout)."""
    answer = b""
    while chunk := sock.recv(4096):
        answer += chunk
    return answer


@pytest.mark.slow
def test_a_slow_request_head_is_dropped_after_its_deadline(kward):
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 60})
    port = port_of(started["redirectUri"])
    slow = Trickler(port)
    quiet_at = time.monotonic()
    quiet = _quiet(port)
    try:
        answer = _until_closed(quiet)  # a measurement: the head deadline is 5 s from the connect
        assert time.monotonic() - quiet_at >= 4.5
        assert answer.startswith(b"HTTP/1.1 408 ") and b"The request took too long." in answer
        assert slow.closed.wait(10)  # 5 s for the whole head, however steadily the bytes come
        assert slow.closed_at - slow.connected_at >= 4.5
        assert slow.answer == b"" or slow.answer.startswith(b"HTTP/1.1 408 ")  # (its bytes may reset the close)
        assert kward.request("auth/loginStatus", {"loginId": started["loginId"]})["status"] == "pending"
    finally:
        slow.close()
        quiet.close()


@pytest.mark.slow
def test_idle_connections_filling_the_listener_do_not_shut_out_the_callback(kward):
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 60})
    port = port_of(started["redirectUri"])
    idle = [_quiet(port) for _ in range(16)]  # as many as the listener keeps
    try:
        newest = _quiet(port)  # one more: the oldest is dropped for it, with a 408
        idle.append(newest)
        idle[0].settimeout(3)  # well before the oldest's own head deadline
        answer = _until_closed(idle[0])
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        page = open_in_browser(started["authorizationUrl"])  # drops the next oldest, and is served
        assert page.status_code == 200 and "You can close this window" in page.text
        assert finished(kward, started["loginId"])["status"] == "completed"
        newest.settimeout(10)
        try:  # kept until the listener closed with the login
            assert _until_closed(newest) == b""
        except ConnectionResetError:
            pass
    finally:
        for sock in idle:
            sock.close()


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback")
def test_the_callback_listens_on_both_loopbacks_and_skips_a_port_held_on_ipv6(isolated_home, oauth):
    held = socket.socket(socket.AF_INET6)
    held.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    held.bind(("::1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        with start(isolated_home, oauth, env=auth_env(isolated_home, oauth, KWARD_OAUTH_PORT=str(port))) as c:
            started = c.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 30})
            chosen = port_of(started["redirectUri"])
            assert chosen != port and refused(port)  # not taken on 127.0.0.1 alone either
            socket.create_connection(("::1", chosen), timeout=5).close()  # `localhost` may be ::1
            socket.create_connection(("127.0.0.1", chosen), timeout=5).close()
            page = open_in_browser(started["authorizationUrl"])
            assert page.status_code == 200
            assert finished(c, started["loginId"])["status"] == "completed"
            assert refused(chosen) and refused(chosen, "::1")
    finally:
        held.close()


def test_an_issuer_variable_that_is_not_https_stops_kward_rpc(isolated_home, oauth):
    env = auth_env(isolated_home, oauth, KWARD_OPENAI_AUTH_ISSUER="http://example.com")
    proc = spawn_kward(isolated_home, env=env)
    out, err = proc.communicate(b"", timeout=30)
    assert (proc.returncode, out) == (2, b"")
    assert err.decode() == ("kward rpc: KWARD_OPENAI_AUTH_ISSUER must be an https:// URL (http:// only for a "
                            "loopback host: 127.0.0.0/8, ::1 or localhost), not 'http://example.com'\n")
    assert oauth.requests() == []


def test_config_update_refuses_an_issuer_that_is_not_https_unless_loopback(kward):
    for issuer in ("http://example.com", "http://10.0.0.1/", "http://localhost.example.com"):
        with pytest.raises(RpcError) as refusal:
            kward.request("config/update", {"values": {"openai_auth_issuer": issuer}})
        error = refusal.value.error
        assert error["code"] == -32602 and error["data"]["reason"] == "invalid_config", error
        assert "openai_auth_issuer" in error["message"] and "https://" in error["message"]
    assert kward.request("config/read")["config"] == {}
    for issuer in ("http://127.0.0.1:9", "http://[::1]:8080", "http://localhost:1", "https://auth.example"):
        kward.request("config/update", {"values": {"openai_auth_issuer": issuer}})
        assert kward.request("config/read")["config"]["openai_auth_issuer"] == issuer


def test_an_issuer_in_config_json_that_is_not_https_is_refused_at_login(isolated_home, oauth):
    env = auth_env(isolated_home, oauth)
    del env["KWARD_OPENAI_AUTH_ISSUER"]
    (isolated_home / ".kward").mkdir(exist_ok=True)
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"openai_auth_issuer": "http://example.com"}))
    with start(isolated_home, oauth, env=env) as c:
        with pytest.raises(RpcError) as refusal:
            c.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 30})
        error = refusal.value.error
        assert error["data"]["reason"] == "invalid_config" and "https://" in error["message"]
        assert "openai_auth_issuer" in error["message"]
        assert c.request("auth/status")["openaiOAuth"] is False
    assert oauth.requests() == []  # nothing was asked of any issuer
