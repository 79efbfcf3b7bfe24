"""The stored OpenAI login in use, through the real `kward rpc`: Codex turns against the fake
Codex backend with the token the fake issuer gave, refreshed 60 s before it expires and
once after a 401 (the rotated refresh token saved at once), and a failed refresh failing
the turn with `not_logged_in` and a message naming `kward login`."""

import json

import pytest

from lib import fake_codex as fc
from lib.fake_codex import FakeCodex
from lib.fake_http import served
from lib.fake_oauth import FakeOAuth
from lib.loopback_kward import create_session, run_turn
from lib.rpc_auth import login, start
from lib.turn_events import failed_error, finished


codex = served(FakeCodex)


def kward_for(home, oauth, codex):
    return start(home, oauth, KWARD_CODEX_BASE_URL=codex.base_url)


def stored(home):
    return json.loads((home / ".kward" / "auth.json").read_text())["tokens"]


@pytest.mark.slow
def test_a_login_that_expires_within_a_minute_is_refreshed_before_the_request(isolated_home, codex):
    with FakeOAuth(expires_in=30) as oauth, kward_for(isolated_home, oauth, codex) as c:
        login(c)
        first = stored(isolated_home)
        codex.script("responses", fc.text(["ok"]))
        assert finished(run_turn(c, create_session(c, isolated_home)["id"])) == {"status": "completed"}
        assert oauth.grants() == ["authorization_code", "refresh_token"]
        now = stored(isolated_home)
        assert now["access_token"] != first["access_token"] and now["refresh_token"] != first["refresh_token"]
        assert oauth.valid_refresh_tokens() == [now["refresh_token"]]  # rotated and saved at once
        [request] = codex.requests("responses")
        assert request.bearer == now["access_token"]
        assert c.stderr == ""


@pytest.mark.slow
def test_a_401_refreshes_once_and_the_request_is_sent_again(isolated_home, codex):
    with FakeOAuth() as oauth, kward_for(isolated_home, oauth, codex) as c:
        login(c)
        first = stored(isolated_home)
        codex.script("responses", fc.http_error(401, {"detail": "Token expired"}), fc.text(["again"]))
        events = run_turn(c, create_session(c, isolated_home)["id"])
        assert finished(events) == {"status": "completed"}
        rejected, retried = codex.requests("responses")
        assert rejected.bearer == first["access_token"]
        assert retried.bearer == stored(isolated_home)["access_token"] != first["access_token"]
        assert oauth.grants() == ["authorization_code", "refresh_token"]
        # a second 401 in the same request is not refreshed again: the turn fails
        codex.script("responses", fc.http_error(401, {"detail": "no"}), fc.http_error(401, {"detail": "no"}))
        error = failed_error(run_turn(c, create_session(c, isolated_home)["id"]))
        assert error["reason"] == "not_logged_in" and "`kward login`" in error["message"]
        assert oauth.grants() == ["authorization_code", "refresh_token", "refresh_token"]
        assert len(codex.requests("responses")) == 4


@pytest.mark.slow
def test_a_failed_refresh_after_a_401_fails_the_turn_naming_kward_login(isolated_home, codex):
    with FakeOAuth() as oauth, kward_for(isolated_home, oauth, codex) as c:
        login(c)
        oauth.refresh_fails = True
        codex.script("responses", fc.http_error(401, {"detail": "Token expired"}))
        events = run_turn(c, create_session(c, isolated_home)["id"])
        error = failed_error(events)
        assert error["reason"] == "not_logged_in" and error["data"]["provider"] == "Codex"
        assert "log in again with `kward login`" in error["message"]
        assert "refresh_token_expired" in error["message"]
        assert len(codex.requests("responses")) == 1 and oauth.grants() == ["authorization_code", "refresh_token"]
        assert c.stderr == ""


@pytest.mark.slow
def test_a_failed_refresh_before_expiry_fails_the_turn_before_any_request(isolated_home, codex):
    with FakeOAuth(expires_in=30) as oauth, kward_for(isolated_home, oauth, codex) as c:
        login(c)
        oauth.refresh_fails = True
        error = failed_error(run_turn(c, create_session(c, isolated_home)["id"]))
        assert error["reason"] == "not_logged_in" and "`kward login`" in error["message"]
        assert codex.requests("responses") == []


@pytest.mark.slow
def test_an_environment_token_wins_over_the_stored_login_and_is_never_refreshed(isolated_home, codex):
    token = fc.make_jwt("acct_env")
    with FakeOAuth() as oauth:
        env_home = start(isolated_home, oauth, KWARD_CODEX_BASE_URL=codex.base_url, OPENAI_ACCESS_TOKEN=token)
        with env_home as c:
            login(c)
            codex.script("responses", fc.http_error(401, {"detail": "bad"}))
            error = failed_error(run_turn(c, create_session(c, isolated_home)["id"]))
            assert error["reason"] == "not_logged_in" and "OPENAI_ACCESS_TOKEN" in error["message"]
            [request] = codex.requests("responses")
            assert request.bearer == token and oauth.grants() == ["authorization_code"]
