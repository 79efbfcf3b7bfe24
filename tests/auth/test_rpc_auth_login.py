"""OpenAI logins through the real `kward rpc` against the fake issuer (which checks PKCE):
the real callback server with the test as the browser, a submitted code or pasted URL,
state mismatch, timeout, a busy port, bad params, cancellation by a newer login and at
shutdown, and the provider selection following logins and logouts live."""

import socket
import stat

import pytest

from lib import fake_codex as fc
from lib.auth_helpers import authorize, open_in_browser
from lib.fake_codex import FakeCodex
from lib.fake_http import served
from lib.fake_oauth import FakeOAuth
from lib.loopback_kward import create_session, run_turn
from lib.ports import refused
from lib.rpc_auth import auth_env, code_of, finished, login, port_of, start
from lib.turn_events import finished as turn_finished

LOGIN_FIELDS = {"providerId", "loginId", "status", "authorizationUrl", "redirectUri"}


oauth = served(FakeOAuth)
codex = served(FakeCodex)


@pytest.fixture
def kward(isolated_home, oauth, codex):
    with start(isolated_home, oauth, KWARD_CODEX_BASE_URL=codex.base_url) as client:
        yield client
        assert client.protocol_errors == [] and client.stderr == ""


@pytest.mark.slow
def test_a_full_login_through_the_callback_server_then_a_codex_turn_with_the_new_token(kward, oauth, codex,
                                                                                      isolated_home):
    before = kward.request("auth/status")
    assert (before["openaiOAuth"], before["openaiOAuthSource"], before["credentialStore"]) == (False, None, "file")
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai"})
    assert set(started) == LOGIN_FIELDS and started["status"] == "pending" and started["providerId"] == "openai"
    assert started["authorizationUrl"].startswith(oauth.issuer + "/oauth/authorize?")
    assert started["redirectUri"] == f"http://localhost:{port_of(started['redirectUri'])}/auth/callback"
    assert kward.request("auth/loginStatus", {"loginId": started["loginId"]})["status"] == "pending"

    page = open_in_browser(started["authorizationUrl"])  # authorize, then the redirect to kward's listener
    assert page.status_code == 200 and "You can close this window" in page.text
    done = finished(kward, started["loginId"])
    assert done == {**started, "status": "completed", "message": "Logged in to OpenAI."}
    assert kward.request("auth/loginStatus", {"loginId": started["loginId"]}) == done
    assert refused(port_of(started["redirectUri"]))  # one-shot: closed after success
    [authorize_request] = oauth.requests("authorize")
    assert authorize_request.query["redirect_uri"] == [started["redirectUri"]]

    status = kward.request("auth/status")
    assert (status["openaiOAuth"], status["openaiOAuthSource"], status["openaiAccessToken"]) == (True, "stored", False)
    card = kward.request("auth/providers")["providers"][0]
    assert card == {"id": "openai", "name": "OpenAI", "authType": "oauth", "configured": True, "source": "stored",
                    "storedCredentialType": "oauth", "canLogout": True, "usesCallbackServer": True,
                    "credentialStore": "file"}
    auth_file = isolated_home / ".kward" / "auth.json"
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_file.parent.stat().st_mode) == 0o700

    session = create_session(kward, isolated_home)
    assert kward.request("runtime/state", {"sessionId": session["id"]})["defaultProvider"] == "Codex"
    codex.script("responses", fc.text(["Logged ", "in"]))
    assert turn_finished(run_turn(kward, session["id"])) == {"status": "completed"}
    [request] = codex.requests("responses")
    access = oauth.issued[1]  # code, then access, id and refresh token of the exchange
    assert request.headers["authorization"] == f"Bearer {access}"
    assert request.headers["chatgpt-account-id"] == "acct_test"  # from the token's claims


@pytest.mark.parametrize("form", ["code", "url", "query", "code#state"])
@pytest.mark.slow
def test_a_login_completes_with_a_submitted_code_or_pasted_url(kward, oauth, form):
    started = kward.request("auth/startOpenAILogin", {})
    callback = authorize(started["authorizationUrl"])  # the browser stops at the redirect
    state = callback.split("state=")[1]
    text = {"code": code_of(callback), "url": callback, "query": "?" + callback.split("?", 1)[1],
            "code#state": f"{code_of(callback)}#{state}"}[form]
    done = kward.request("auth/submitOpenAICode", {"loginId": started["loginId"], "code": f"  {text}\n"})
    assert done["status"] == "completed" and done["loginId"] == started["loginId"]
    assert finished(kward, started["loginId"])["status"] == "completed"
    assert oauth.grants() == ["authorization_code"]
    assert kward.request("auth/status")["openaiOAuth"] is True
    again = kward.error("auth/submitOpenAICode", {"loginId": started["loginId"], "code": code_of(callback)})
    assert (again.code, again.reason) == (-32602, "login_finished")


@pytest.mark.slow
def test_a_state_mismatch_is_refused_and_the_login_stays_pending(kward, oauth):
    started = kward.request("auth/startOpenAILogin", {"timeoutSeconds": 30})
    oauth.authorize_outcome = "wrong_state"
    page = open_in_browser(started["authorizationUrl"])  # the callback carries another state
    assert page.status_code == 400 and "State mismatch" in page.text
    foreign = authorize(started["authorizationUrl"])
    error = kward.error("auth/submitOpenAICode", {"loginId": started["loginId"], "code": foreign})
    assert (error.code, error.reason) == (-32602, "login_state_mismatch")
    assert kward.request("auth/loginStatus", {"loginId": started["loginId"]})["status"] == "pending"
    assert kward.request("auth/status")["openaiOAuth"] is False and oauth.grants() == []
    oauth.authorize_outcome = "ok"
    assert open_in_browser(started["authorizationUrl"]).status_code == 200  # the real callback still works
    assert finished(kward, started["loginId"])["status"] == "completed"


def test_a_denied_consent_fails_the_login(kward, oauth):
    oauth.authorize_outcome = "denied"
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai"})
    assert open_in_browser(started["authorizationUrl"]).status_code == 400
    done = finished(kward, started["loginId"])
    assert done["status"] == "failed" and "access_denied" in done["error"]
    assert refused(port_of(started["redirectUri"]))


@pytest.mark.slow
def test_a_login_times_out(kward):
    started = kward.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 0.3})
    done = finished(kward, started["loginId"])
    assert done["status"] == "failed" and "within 0.3 s" in done["error"]
    assert kward.request("auth/loginStatus", {"loginId": started["loginId"]})["status"] == "failed"
    assert refused(port_of(started["redirectUri"]))


@pytest.mark.slow
def test_a_busy_port_moves_the_callback_to_a_free_one(isolated_home, oauth):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        with start(isolated_home, oauth, env=auth_env(isolated_home, oauth, KWARD_OAUTH_PORT=str(port))) as c:
            started = c.request("auth/startOpenAILogin", {})
            assert port_of(started["redirectUri"]) != port
            login(c)  # a second login completes too, on a free port
    finally:
        busy.close()


BAD_PARAMS = [
    ("auth/loginWithOAuth", {}, "providerId"),
    ("auth/loginWithOAuth", {"providerId": "github"}, "providerId"),
    ("auth/loginWithOAuth", {"providerId": 1}, "providerId"),
    ("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 0}, "timeoutSeconds"),
    ("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": -5}, "timeoutSeconds"),
    ("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 3601}, "timeoutSeconds"),
    ("auth/startOpenAILogin", {"timeoutSeconds": "60"}, "timeoutSeconds"),
    ("auth/startOpenAILogin", {"timeoutSeconds": True}, "timeoutSeconds"),
    ("auth/startOpenAILogin", {"timeoutSeconds": 1e300}, "timeoutSeconds"),
    ("auth/submitOpenAICode", {"code": "x"}, "loginId"),
    ("auth/submitOpenAICode", {"loginId": "nope"}, "code"),
    ("auth/submitOpenAICode", {"loginId": "nope", "code": "x" * 70000}, "code"),
    ("auth/loginStatus", {}, "loginId"),
    ("auth/loginStatus", {"loginId": ""}, "loginId"),
]


def test_bad_params_answer_minus_32602_naming_the_param_and_change_nothing(kward):
    pending = kward.request("auth/startOpenAILogin", {})
    for method, params, param in BAD_PARAMS:
        error = kward.error(method, params)
        assert (error.code, error.reason, error.error["data"]["param"]) == (-32602, "invalid_params", param), \
            (method, params)
    # no refused start cancelled the pending login (a started one would have)
    assert kward.request("auth/loginStatus", {"loginId": pending["loginId"]})["status"] == "pending"
    assert not refused(port_of(pending["redirectUri"]))


def test_unknown_logins(kward):
    for method, params in (("auth/loginStatus", {"loginId": "nope"}),
                           ("auth/submitOpenAICode", {"loginId": "nope", "code": "abc"})):
        error = kward.error(method, params)
        assert (error.code, error.reason) == (-32602, "login_not_found")


def test_a_new_login_cancels_the_pending_one_and_shutdown_cancels_the_last(isolated_home, oauth):
    with start(isolated_home, oauth) as c:
        first = c.request("auth/startOpenAILogin", {})
        second = c.request("auth/startOpenAILogin", {})
        assert finished(c, first["loginId"])["status"] == "cancelled"  # double l
        assert refused(port_of(first["redirectUri"]))
        assert c.request("auth/loginStatus", {"loginId": second["loginId"]})["status"] == "pending"
        c.close_stdin()  # end of input: the pending login ends with the process
        assert c.wait_exit(10) == 0
        assert finished(c, second["loginId"], timeout=0)["status"] == "cancelled"
        assert refused(port_of(second["redirectUri"])) and c.stderr == ""


@pytest.mark.slow
def test_the_provider_selection_follows_logins_and_logouts_live(kward, isolated_home):
    session = create_session(kward, isolated_home)

    def provider():
        state = kward.request("runtime/state", {"sessionId": session["id"]})
        return state["defaultProvider"], state["providerReason"]

    assert provider() == ("Codex", "default (no credentials found)")
    kward.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": "sk-or-v1-live0123456789"})
    assert provider() == ("OpenRouter", "OpenRouter API key")
    login(kward)
    assert provider() == ("Codex", "OpenAI login")  # an OpenAI login comes first
    kward.request("auth/logoutProvider", {"providerId": "openai"})
    assert provider() == ("OpenRouter", "OpenRouter API key")
    kward.request("auth/logoutProvider", {"providerId": "openrouter"})
    assert provider() == ("Codex", "default (no credentials found)")


def test_initialize_offers_the_auth_group(isolated_home, oauth):
    with start(isolated_home, oauth) as c:
        caps = c.request("initialize")["capabilities"]
    assert caps["authLogin"] is True
    assert caps["auth"] == {
        "supported": True, "providerFormat": "tauren-auth-v1",
        "methods": ["auth/status", "auth/providers", "auth/loginWithApiKey", "auth/logoutProvider",
                    "auth/loginWithOAuth", "auth/startOpenAILogin", "auth/submitOpenAICode", "auth/loginStatus"],
        "oauthProviders": ["openai"], "apiKeyProviders": ["openrouter"],
        "unsupportedOAuthProviders": {"github": "GitHub Copilot login is not offered by this kward."},
        "logout": True, "notification": "auth/loginFinished"}
