"""TokenSource against the fake issuer: refresh before expiry and after a 401, rotated
refresh tokens saved at once, one refresh across threads and "processes", failures."""

import threading

import pytest

from kward.auth.tokens import OpenAITokens
from kward.errors import AuthServerError, NotLoggedIn
from lib.auth_helpers import authorize, make_auth, make_env
from lib.fake_http import json_response, served
from lib.fake_oauth import FakeOAuth


fake = served(FakeOAuth)


def env_for(fake, **extra):
    return make_env(KWARD_OPENAI_AUTH_ISSUER=fake.issuer, KWARD_OAUTH_PORT="0", **extra)


@pytest.fixture
def auth(fake):
    service = make_auth(env_for(fake))
    yield service
    service.close()


def log_in(auth):
    login = auth.logins.start(timeout=10)
    auth.logins.submit(login.login_id, authorize(login.authorization_url))
    assert login.wait(5) and login.status == "completed"
    return auth.credentials.stored_openai()


def expire(auth, in_seconds):
    """Rewrite the stored login so that it expires `in_seconds` from now."""
    import time

    tokens = auth.credentials.stored_openai()
    auth.credentials.save_openai(OpenAITokens(**{**tokens.__dict__, "expires_at": time.time() + in_seconds}))


def test_no_login_no_token(auth):
    assert auth.tokens.get() is None
    with pytest.raises(NotLoggedIn) as info:
        auth.tokens.refresh(force=True)
    assert info.value.reason == "not_logged_in" and "auth/startOpenAILogin" in info.value.message


def test_a_fresh_token_is_used_as_it_is(fake, auth):
    first = log_in(auth)
    assert auth.tokens.get() == (first.access_token, "acct_test")
    assert fake.grants() == ["authorization_code"]


def test_refresh_before_expiry_saves_the_rotated_refresh_token(fake, auth):
    fake.expires_in = 30  # inside the 60 s margin: refreshed on first use
    first = log_in(auth)
    token, account = auth.tokens.get()
    assert fake.grants() == ["authorization_code", "refresh_token"]
    assert token != first.access_token and account == "acct_test"
    now = auth.credentials.stored_openai()
    assert now.access_token == token and now.refresh_token != first.refresh_token
    assert fake.valid_refresh_tokens() == [now.refresh_token]  # the old one is spent
    refresh = fake.requests("token")[1]
    assert refresh.json == {"client_id": fake.client_id, "grant_type": "refresh_token",
                            "refresh_token": first.refresh_token}


def test_refresh_after_a_401_happens_once(fake, auth):
    first = log_in(auth)
    assert auth.tokens.get()[0] == first.access_token
    assert auth.tokens.refresh(force=True) is True
    second = auth.credentials.stored_openai()
    assert second.access_token != first.access_token and auth.tokens.get()[0] == second.access_token
    # a second 401 for the token that was already replaced does not refresh again
    assert auth.tokens.refresh(force=True, rejected=first.access_token) is True
    assert fake.grants() == ["authorization_code", "refresh_token"]


def test_concurrent_401s_refresh_once(fake, auth):
    first = log_in(auth)
    other = make_auth(env_for(fake))  # another process: its own locks, the same files
    barrier = threading.Barrier(8)
    errors = []

    def worker(source):
        barrier.wait()
        try:
            source.refresh(force=True, rejected=first.access_token)
        except Exception as exc:  # pragma: no cover - the assertion below shows it
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in [auth.tokens, other.tokens] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == [] and fake.grants() == ["authorization_code", "refresh_token"]
    assert other.tokens.get() == auth.tokens.get()


def test_a_failed_refresh_says_to_log_in_again(fake, auth):
    log_in(auth)
    fake.refresh_fails = True
    with pytest.raises(NotLoggedIn) as info:
        auth.tokens.refresh(force=True)
    err = info.value
    assert err.reason == "not_logged_in" and "log in again" in err.message
    assert "auth/startOpenAILogin" in err.message and "OPENAI_ACCESS_TOKEN" in err.message
    assert "refresh_token_expired" in err.message
    expire(auth, -10)
    with pytest.raises(NotLoggedIn):
        auth.tokens.get()


def test_a_reused_refresh_token_says_to_log_in_again(fake, auth):
    first = log_in(auth)
    auth.tokens.refresh(force=True)
    auth.credentials.save_openai(first)  # as if an old copy came back
    with pytest.raises(NotLoggedIn) as info:
        auth.tokens.refresh(force=True)
    assert "refresh_token_reused" in info.value.message


def test_an_unreachable_token_server(fake, auth):
    first = log_in(auth)
    expire(auth, 30)  # still valid, but inside the margin
    fake.script("token", json_response(503, {"error": "temporarily_unavailable"}))
    assert auth.tokens.get()[0] == first.access_token  # used until it expires
    expire(auth, -10)
    fake.script("token", json_response(503, {"error": "temporarily_unavailable"}))
    with pytest.raises(AuthServerError) as info:
        auth.tokens.get()
    assert info.value.reason == "provider_error" and "503" in info.value.message
    assert auth.tokens.get()[0] != first.access_token  # the server is back: refreshed


def test_an_environment_token_wins_and_is_never_refreshed(fake):
    auth = make_auth(env_for(fake, OPENAI_ACCESS_TOKEN="env-access-token-1234"))
    log_in(auth)
    assert auth.tokens.get() == ("env-access-token-1234", None)
    assert auth.tokens.refresh(force=True) is False
    assert fake.grants() == ["authorization_code"]
    auth.close()


def test_a_login_without_refresh_token_cannot_be_refreshed(auth):
    auth.credentials.save_openai(OpenAITokens(access_token="bare-access-token-0001", account_id="acct"))
    assert auth.tokens.get() == ("bare-access-token-0001", "acct")
    with pytest.raises(NotLoggedIn) as info:
        auth.tokens.refresh(force=True)
    assert "log in again" in info.value.message
