"""OpenAI OAuth logins against the fake issuer: the real loopback callback server with the
test as the browser, pasted codes and URLs, state mismatch, denial, timeout, busy ports."""

import json
import socket
import threading

import pytest

from kward.errors import InvalidParams, LoginError
from kward.redact import redact
from kward.rpc.wire.auth import credential_status
from kward.rpc.wire.auth import login as login_object
from lib.auth_helpers import authorize, browser, make_auth, make_env, open_in_browser
from lib.fake_http import served
from lib.fake_oauth import FakeOAuth, challenge_of
from lib.ports import free_port, refused


fake = served(FakeOAuth)


@pytest.fixture
def auth(fake):
    service = make_auth(make_env(KWARD_OPENAI_AUTH_ISSUER=fake.issuer, KWARD_OAUTH_PORT="0"))
    yield service
    service.close()


class Finished:
    """Records on_finished calls as the login objects clients see; `wait()` until one arrived."""

    def __init__(self):
        self.calls = []
        self.event = threading.Event()

    def __call__(self, state):
        self.calls.append(login_object(state))
        self.event.set()


def stored(auth):
    return auth.credentials.stored_openai()


def test_full_login_through_the_callback_server(fake, auth):
    done = Finished()
    changes = []
    auth.credentials.add_listener(changes.append)
    login = auth.logins.start(timeout=10, on_finished=done)
    first = login_object(login.state())
    assert first["status"] == "pending" and first["providerId"] == "openai" and first["loginId"] == login.login_id
    port = int(first["redirectUri"].split(":")[2].split("/")[0])
    assert first["redirectUri"] == f"http://localhost:{port}/auth/callback"
    assert first["authorizationUrl"].startswith(fake.issuer + "/oauth/authorize?")
    assert redact(first) == first  # the URL reaches the client intact through the RPC redaction

    page = open_in_browser(login.authorization_url)
    assert page.status_code == 200 and "You can close this window" in page.text
    assert page.headers["Content-Type"] == "text/html; charset=utf-8" and page.headers["Connection"] == "close"
    assert login.wait(5)
    assert done.calls == [login_object(auth.logins.status(login.login_id))]
    final = done.calls[0]
    assert final["status"] == "completed" and final["message"] == "Logged in to OpenAI." and "error" not in final
    assert changes == ["openai"]
    tokens = stored(auth)
    assert tokens.account_id == "acct_test" and tokens.refresh_token in fake.valid_refresh_tokens()
    assert tokens.expires_at == pytest.approx(tokens.saved_at + 3600, abs=2)
    record = json.loads(auth.credentials.paths.auth_file.read_text())
    assert record["auth_mode"] == "openai_oauth" and record["tokens"]["access_token"] == tokens.access_token
    assert refused(port)  # one-shot: closed after success
    exchange = [r for r in fake.requests("token")][0]
    assert exchange.headers["content-type"] == "application/x-www-form-urlencoded"
    assert credential_status(auth.credentials.status())["openaiOAuth"] is True


def test_login_by_submitted_code(fake, auth):
    login = auth.logins.start(timeout=10)
    callback = authorize(login.authorization_url)
    code = callback.split("code=")[1].split("&")[0]
    result = login_object(auth.logins.submit(login.login_id, code))
    assert result["status"] == "completed" and login.wait(5)
    assert stored(auth).account_id == "acct_test"
    with pytest.raises(LoginError) as info:
        auth.logins.submit(login.login_id, code)
    assert info.value.reason == "login_finished"


def test_login_by_pasted_callback_url(fake, auth):
    done = Finished()
    login = auth.logins.start(timeout=10, on_finished=done)
    callback = authorize(login.authorization_url)
    assert callback.startswith(login.redirect_uri + "?")
    assert login_object(auth.logins.submit(login.login_id, "  " + callback + "\n"))["status"] == "completed"
    assert login.wait(5) and [c["status"] for c in done.calls] == ["completed"]
    assert refused(login.listen_address[1])


def test_state_mismatch_is_refused_and_the_login_stays_pending(fake, auth):
    fake.authorize_outcome = "wrong_state"
    done = Finished()
    login = auth.logins.start(timeout=10, on_finished=done)
    page = open_in_browser(login.authorization_url)
    assert page.status_code == 400 and "State mismatch" in page.text
    forged = authorize(login.authorization_url)
    with pytest.raises(LoginError) as info:
        auth.logins.submit(login.login_id, forged)
    assert info.value.reason == "login_state_mismatch" and info.value.code == -32602
    assert login.status == "pending" and stored(auth) is None and done.calls == []
    fake.authorize_outcome = "ok"  # the real redirect still completes it
    assert open_in_browser(login.authorization_url).status_code == 200
    assert login.wait(5) and done.calls[0]["status"] == "completed"


def test_denied_consent_fails_the_login(fake, auth):
    fake.authorize_outcome = "denied"
    fake.denied_description = "missing_codex_entitlement for workspace"
    done = Finished()
    login = auth.logins.start(timeout=10, on_finished=done)
    page = open_in_browser(login.authorization_url)
    assert page.status_code == 400 and "Codex is not enabled" in page.text
    assert login.wait(5) and done.calls[0]["status"] == "failed"
    assert "Codex is not enabled" in done.calls[0]["error"] and stored(auth) is None


def test_a_refused_code_fails_the_login(fake, auth):
    login = auth.logins.start(timeout=10)
    with pytest.raises(LoginError) as info:
        auth.logins.submit(login.login_id, "code-that-the-server-never-issued")
    assert info.value.reason == "login_failed" and "invalid_grant" in info.value.message
    assert login.wait(5) and login.status == "failed" and stored(auth) is None


def test_the_verifier_must_match_the_challenge_of_its_own_login(fake, auth):
    first = auth.logins.start(timeout=10)
    stolen = authorize(first.authorization_url).split("code=")[1].split("&")[0]
    second = auth.logins.start(timeout=10)  # cancels the first; its verifier differs
    assert first.status == "cancelled"
    with pytest.raises(LoginError):
        auth.logins.submit(second.login_id, stolen)
    assert second.status == "failed"
    entry = fake.requests("token")[0]
    fields = dict(p.split("=", 1) for p in entry.body.decode().split("&"))
    assert challenge_of(fields["code_verifier"]) != fake.requests("authorize")[0].query["code_challenge"][0]


def test_bad_submissions_change_nothing(fake, auth):
    login = auth.logins.start(timeout=10)
    for bad in ("", "   ", "a b"):
        with pytest.raises(InvalidParams) as info:
            auth.logins.submit(login.login_id, bad)
        assert info.value.data == {"param": "code"}
    with pytest.raises(InvalidParams):
        auth.logins.submit(login.login_id, 42)
    with pytest.raises(LoginError) as info:
        auth.logins.status("no-such-login")
    assert info.value.reason == "login_not_found"
    with pytest.raises(InvalidParams):
        auth.logins.status(None)
    assert login.status == "pending" and fake.requests("token") == []


def test_timeout_fails_the_login_and_closes_the_listener(fake, auth):
    done = Finished()
    login = auth.logins.start(timeout=0.2, on_finished=done)
    port = login.listen_address[1]
    assert login.wait(5)
    assert done.calls[0]["status"] == "failed" and "0.2 s" in done.calls[0]["error"]
    assert refused(port)
    with pytest.raises(LoginError) as info:
        auth.logins.submit(login.login_id, "late-code")
    assert info.value.reason == "login_finished"


def test_cancel(fake, auth):
    done = Finished()
    login = auth.logins.start(timeout=10, on_finished=done)
    assert login_object(auth.logins.cancel(login.login_id))["status"] == "cancelled"
    assert login.wait(5) and done.calls[0]["status"] == "cancelled"
    assert refused(login.listen_address[1])


def test_a_busy_port_moves_the_listener_to_a_free_one(fake):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        auth = make_auth(make_env(KWARD_OPENAI_AUTH_ISSUER=fake.issuer, KWARD_OAUTH_PORT=str(taken)))
        try:
            login = auth.logins.start(timeout=10)
            port = login.listen_address[1]
            assert port != taken and login.redirect_uri == f"http://localhost:{port}/auth/callback"
            assert f"localhost%3A{port}%2F" in login.authorization_url
            assert open_in_browser(login.authorization_url).status_code == 200
            assert login.wait(5) and login.status == "completed"
        finally:
            auth.close()


def test_the_configured_port_is_used_when_free(fake):
    port = free_port()
    auth = make_auth(make_env(KWARD_OPENAI_AUTH_ISSUER=fake.issuer, KWARD_OAUTH_PORT=str(port)))
    try:
        assert auth.logins.start(timeout=10).listen_address == ("127.0.0.1", port)
    finally:
        auth.close()


def test_the_listener_binds_loopback_only(fake, auth):
    login = auth.logins.start(timeout=10)
    host, port = login.listen_address
    assert host == "127.0.0.1"
    assert refused(port, "127.0.0.2")  # another address of this machine gets no answer
    with browser() as s:  # but 127.0.0.1 does
        assert s.get(f"http://127.0.0.1:{port}/favicon.ico", timeout=5).status_code == 404


def test_logins_are_bounded_and_a_new_one_cancels_the_pending_one(fake, auth):
    logins = [auth.logins.start(timeout=10) for _ in range(20)]
    assert [lg.status for lg in logins[:-1]] == ["cancelled"] * 19 and logins[-1].status == "pending"
    with pytest.raises(LoginError) as info:
        auth.logins.status(logins[0].login_id)
    assert info.value.reason == "login_not_found"
    assert login_object(auth.logins.status(logins[-1].login_id))["status"] == "pending"
    assert login_object(auth.logins.status(logins[-16].login_id))["status"] == "cancelled"


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), 3601])
def test_bad_timeouts_are_refused_before_anything_changes(fake, auth, timeout):
    login = auth.logins.start(timeout=10)
    with pytest.raises(ValueError):
        auth.logins.start(timeout=timeout)
    assert login.status == "pending"
