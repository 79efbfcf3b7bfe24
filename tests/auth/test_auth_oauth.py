"""The pure OAuth pieces: settings, PKCE, state, the authorize URL, pasted callbacks."""

import base64
import hashlib
from urllib.parse import parse_qs, urlsplit

import pytest

from kward.auth import oauth
from kward.auth.oauth import OAuthSettings, parse_pasted, resolve_oauth_settings
from kward.auth.tokens import OpenAITokens, TokenEndpointError, tokens_from_response
from kward.errors import ConfigError
from lib.fake_oauth import make_token


def test_settings_defaults_config_and_environment():
    s = resolve_oauth_settings({}, {})
    assert (s.issuer, s.client_id, s.port) == ("https://auth.openai.com", "app_EMoamEEZ73f0CkXaXp7hrann", 1455)
    assert s.token_endpoint == "https://auth.openai.com/oauth/token"
    s = resolve_oauth_settings({"openai_auth_issuer": "http://127.0.0.1:9/", "openai_oauth_client_id": "app_x"}, {})
    assert (s.issuer, s.client_id) == ("http://127.0.0.1:9", "app_x")
    s = resolve_oauth_settings({"openai_auth_issuer": "https://a.example"},
                               {"KWARD_OPENAI_AUTH_ISSUER": "https://b.example", "KWARD_OAUTH_PORT": "0"})
    assert (s.issuer, s.port) == ("https://b.example", 0)


@pytest.mark.parametrize("issuer", ["http://127.0.0.1:9", "http://127.8.9.10", "http://[::1]:8080/x",
                                    "http://localhost:1234", "http://LOCALHOST.", "https://auth.example"])
def test_https_or_a_loopback_issuer_is_accepted(issuer):
    assert resolve_oauth_settings({"openai_auth_issuer": issuer}, {}).issuer == issuer.rstrip("/")


@pytest.mark.parametrize("issuer", ["http://example.com", "http://localhost.example.com", "http://10.0.0.1",
                                    "http://128.0.0.1", "http://[::2]", "http://0.0.0.0"])
def test_a_plain_http_issuer_elsewhere_is_refused(issuer):
    with pytest.raises(ConfigError) as info:
        resolve_oauth_settings({}, {"KWARD_OPENAI_AUTH_ISSUER": issuer})
    assert "KWARD_OPENAI_AUTH_ISSUER must be an https:// URL" in info.value.message
    with pytest.raises(ConfigError) as info:
        resolve_oauth_settings({"openai_auth_issuer": issuer}, {})
    assert "openai_auth_issuer: must be an https:// URL" in info.value.message
    assert info.value.data == {"key": "openai_auth_issuer"}


@pytest.mark.parametrize("env, name", [({"KWARD_OAUTH_PORT": "70000"}, "KWARD_OAUTH_PORT"),
                                       ({"KWARD_OAUTH_PORT": "http"}, "KWARD_OAUTH_PORT"),
                                       ({"KWARD_OPENAI_AUTH_ISSUER": "ftp://x"}, "KWARD_OPENAI_AUTH_ISSUER")])
def test_bad_settings_name_the_variable(env, name):
    with pytest.raises(ConfigError) as info:
        resolve_oauth_settings({}, env)
    assert name in info.value.message and info.value.data == {"variable": name}


def test_bad_config_issuer_names_the_key():
    with pytest.raises(ConfigError) as info:
        resolve_oauth_settings({"openai_auth_issuer": "not a url"}, {})
    assert info.value.data == {"key": "openai_auth_issuer"}


def test_pkce_and_state():
    verifier, challenge = oauth.pkce_pair()
    assert len(verifier) == 86 and "=" not in verifier
    expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == expected and len(challenge) == 43
    assert len(oauth.new_state()) == 43 and oauth.new_state() != oauth.new_state()
    assert oauth.pkce_pair()[0] != verifier


def test_authorize_url_has_the_wire_parameters():
    url = oauth.authorize_url(OAuthSettings(), oauth.redirect_uri(1455), "CHAL", "STATE")
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://auth.openai.com/oauth/authorize"
    q = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert q == {"response_type": "code", "client_id": "app_EMoamEEZ73f0CkXaXp7hrann",
                 "redirect_uri": "http://localhost:1455/auth/callback",
                 "scope": "openid profile email offline_access api.connectors.read api.connectors.invoke",
                 "code_challenge": "CHAL", "code_challenge_method": "S256", "id_token_add_organizations": "true",
                 "codex_cli_simplified_flow": "true", "state": "STATE", "originator": "kward"}
    assert "%20" in parts.query and "+" not in parts.query


@pytest.mark.parametrize("text, code, state", [
    ("http://localhost:1455/auth/callback?code=abc&state=xyz", "abc", "xyz"),
    ("  http://localhost:1455/auth/callback?state=xyz&code=abc\n", "abc", "xyz"),
    ("?code=abc&state=xyz", "abc", "xyz"),
    ("code=abc&state=xyz", "abc", "xyz"),
    ("abc#xyz", "abc", "xyz"),
    ("abc", "abc", None),
    ("http://localhost:1455/auth/callback?code=abc", "abc", None),
])
def test_pasted_callbacks(text, code, state):
    p = parse_pasted(text)
    assert (p.code, p.state) == (code, state)


def test_pasted_error_callback():
    p = parse_pasted("http://localhost:1455/auth/callback?error=access_denied&error_description=no&state=s")
    assert (p.error, p.error_description, p.state, p.code) == ("access_denied", "no", "s", "")


def test_code_problems():
    assert oauth.code_problem("") and oauth.code_problem("a b") and oauth.code_problem("x" * 5000)
    assert oauth.code_problem("ok\x00") and oauth.code_problem("abc_DEF-123") is None


def test_token_responses():
    access = make_token("acct_a", kind="access", serial=1, exp=2000000000)
    idt = make_token("acct_i", kind="id", serial=1, exp=2000000000)
    t = tokens_from_response({"access_token": access, "id_token": idt, "refresh_token": "r1", "expires_in": 100},
                             now=1000.0)
    assert (t.account_id, t.expires_at, t.refresh_token, t.saved_at) == ("acct_i", 1100.0, "r1", 1000.0)
    t2 = tokens_from_response({"access_token": access}, now=5.0, previous=t)  # refresh that keeps the rest
    assert (t2.refresh_token, t2.id_token, t2.account_id, t2.expires_at) == ("r1", idt, "acct_i", 2000000000.0)
    with pytest.raises(TokenEndpointError, match="accountId"):
        tokens_from_response({"access_token": make_token(None, kind="access", serial=2, exp=1)}, now=0.0)
    with pytest.raises(TokenEndpointError, match="access_token"):
        tokens_from_response({"id_token": idt}, now=0.0)


def test_token_bundle_round_trip_and_repr():
    t = OpenAITokens(access_token="secret-access-1", refresh_token="secret-refresh-1", id_token="secret-id-1",
                     account_id="acct", expires_at=1900000000.5, saved_at=1800000000.25)
    record = t.to_record()
    assert record["auth_mode"] == "openai_oauth" and record["account_id"] == "acct"
    assert record["tokens"] == {"access_token": "secret-access-1", "refresh_token": "secret-refresh-1",
                                "id_token": "secret-id-1", "account_id": "acct"}
    assert record["expires_at"] == 1900000000 and record["saved_at"].endswith("Z")
    back = OpenAITokens.from_record(record)
    assert back.access_token == t.access_token and back.expires_at == 1900000000 and back.saved_at == 1800000000.25
    assert "secret" not in repr(t)
    assert OpenAITokens.from_record({"tokens": {"access_token": ""}}) is None
    assert OpenAITokens.from_record({"tokens": "x"}) is None and OpenAITokens.from_record(None) is None


def test_refresh_failures_are_classified():
    assert TokenEndpointError("x", status=401).permanent
    assert TokenEndpointError("x", status=400, code="refresh_token_reused").permanent
    assert not TokenEndpointError("x", status=503).permanent
    assert not TokenEndpointError("x", status=429).permanent
    assert not TokenEndpointError("x").permanent
