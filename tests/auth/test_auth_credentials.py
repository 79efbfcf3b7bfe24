"""auth/status and auth/providers (the credential values as the client sees them, shaped
by kward.rpc.wire.auth), API-key login, logout keeping environment credentials, and the
store each reports."""

import json
import os
import subprocess
import sys

import pytest

from kward.auth.credentials import Credentials
from kward.auth.stores import OPENAI_OAUTH, select_store
from kward.config.store import ConfigStore, resolve_paths
from kward.errors import InvalidParams
from kward.redact import redact
from kward.rpc.wire import auth as wire_auth
from lib.auth_helpers import make_env, use_keyring
from lib.keyring_backend import MemoryKeyring
from lib.paths import REPO

KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"
ENV_KEY = "sk-or-v1-from-the-environment-0000"
ENV_TOKEN = "env-access-token-0000000000"
LOGIN = {"auth_mode": "openai_oauth", "tokens": {"access_token": "stored-access-token-0001",
                                                 "refresh_token": "stored-refresh-0001", "account_id": "acct"},
         "account_id": "acct", "saved_at": "2026-01-01T00:00:00.000Z", "expires_at": 4102444800}


class WireCredentials(Credentials):
    """Credentials whose results are the objects the `auth/*` methods return."""

    def status(self):
        return wire_auth.credential_status(super().status())

    def providers(self):
        return wire_auth.provider_cards(super().providers())

    def login_with_api_key(self, provider_id, api_key):
        return wire_auth.api_key_saved(super().login_with_api_key(provider_id, api_key))

    def logout(self, provider_id):
        return wire_auth.logged_out(super().logout(provider_id))


def creds(**env):
    e = make_env(**env)
    paths = resolve_paths(e)
    return WireCredentials(paths, ConfigStore(paths), e)


def cards(c):
    return {card["id"]: card for card in c.providers()["providers"]}


def test_nothing_configured():
    c = creds()
    assert c.status() == {
        "openaiOAuth": False, "openaiOAuthSource": None, "openaiAccessToken": False,
        "openaiAccessTokenSource": None, "openrouterApiKey": False, "openrouterApiKeySource": None,
        "credentialStore": "file", "credentialStoreDetail": c.store.describe(),
        "credentialStoreReason": c.choice.reason, "authFileMode": None, "authFileProblem": None}
    got = cards(c)
    assert got["openai"] == {"id": "openai", "name": "OpenAI", "authType": "oauth", "configured": False,
                             "source": None, "storedCredentialType": None, "canLogout": False,
                             "usesCallbackServer": True, "credentialStore": "file"}
    assert got["openrouter"]["authType"] == "api_key" and got["openrouter"]["usesCallbackServer"] is False
    assert got["openrouter"]["configured"] is False and c.providers()["credentialStore"] == "file"


def test_environment_credentials_are_reported_and_never_written():
    c = creds(OPENAI_ACCESS_TOKEN=ENV_TOKEN, OPENROUTER_API_KEY=ENV_KEY)
    st = c.status()
    assert st["openaiAccessToken"] is True and st["openaiAccessTokenSource"] == "environment"
    assert st["openaiOAuth"] is False and st["openrouterApiKeySource"] == "environment"
    got = cards(c)
    for card in got.values():
        assert card["configured"] is True and card["source"] == "environment"
        assert card["canLogout"] is False and card["storedCredentialType"] is None
    assert c.openrouter_key() == (ENV_KEY, "environment")
    assert not c.paths.config_dir.exists()  # nothing was written anywhere


def test_api_key_login_stores_0600_and_logout_keeps_the_environment_key():
    c = creds()
    changes = []
    c.add_listener(changes.append)
    result = c.login_with_api_key("openrouter", "  " + KEY + "\n")  # a pasted newline is trimmed
    assert result["ok"] is True and result["providerId"] == "openrouter" and KEY not in json.dumps(result)
    assert changes == ["openrouter"]
    assert json.loads(c.paths.config_file.read_text())["openrouter_api_key"] == KEY
    assert os.stat(c.paths.config_file).st_mode & 0o777 == 0o600
    card = cards(c)["openrouter"]
    assert (card["configured"], card["source"], card["storedCredentialType"], card["canLogout"]) == \
        (True, "stored", "api_key", True)

    both = creds(OPENROUTER_API_KEY=ENV_KEY)  # the same files, with the key in the environment too
    assert both.openrouter_key() == (ENV_KEY, "environment")
    card = cards(both)["openrouter"]
    assert card["source"] == "environment" and card["canLogout"] is True
    out = both.logout("openrouter")
    assert out["removed"] is True and out["configured"] is True and out["source"] == "environment"
    assert "OPENROUTER_API_KEY" in out["message"]
    card = cards(both)["openrouter"]
    assert (card["configured"], card["source"], card["canLogout"]) == (True, "environment", False)
    assert both.status()["openrouterApiKeySource"] == "environment"
    assert "openrouter_api_key" not in json.loads(c.paths.config_file.read_text())
    assert both.logout("openrouter")["removed"] is False


def test_openai_logout_removes_the_stored_login_only():
    c = creds(OPENAI_ACCESS_TOKEN=ENV_TOKEN)
    c.store.set(OPENAI_OAUTH, LOGIN)
    st = c.status()
    assert st["openaiOAuth"] is True and st["openaiAccessToken"] is True
    assert cards(c)["openai"]["source"] == "environment" and cards(c)["openai"]["canLogout"] is True
    out = c.logout("OpenAI")
    assert out["removed"] is True and out["configured"] is True and "OPENAI_ACCESS_TOKEN" in out["message"]
    assert not c.paths.auth_file.exists()
    st = c.status()
    assert st["openaiOAuth"] is False and st["openaiAccessToken"] is True
    assert cards(c)["openai"]["configured"] is True and cards(c)["openai"]["canLogout"] is False


@pytest.mark.parametrize("value, words", [
    ("", "non-empty"), ("   \n", "non-empty"), (None, "a string"), (42, "a string"),
    ("sk-or-v1 with-space", "printable ASCII"), ("sk-or-v1\nsecond-line", "printable ASCII"),
    ("sk-or-v1-\u00e9\u00e9\u00e9\u00e9\u00e9", "printable ASCII"), ("short", "8 to 1024"), ("k" * 1025, "8 to 1024"),
])
def test_bad_api_keys_are_refused_and_change_nothing(value, words):
    c = creds()
    with pytest.raises(InvalidParams) as info:
        c.login_with_api_key("openrouter", value)
    assert words in info.value.message and info.value.data == {"param": "apiKey"}
    if isinstance(value, str) and len(value.strip()) > 3:
        assert value.strip() not in info.value.message
    assert not c.paths.config_file.exists()


def test_unknown_providers_are_refused():
    c = creds()
    with pytest.raises(InvalidParams) as info:
        c.login_with_api_key("openai", KEY)
    assert info.value.data == {"param": "providerId"}
    with pytest.raises(InvalidParams):
        c.logout("github")
    with pytest.raises(InvalidParams):
        c.logout(None)


def test_payloads_survive_the_rpc_redaction_unchanged():
    c = creds(OPENAI_ACCESS_TOKEN=ENV_TOKEN)
    c.login_with_api_key("openrouter", KEY)
    for payload in (c.status(), c.providers()):
        assert redact(payload) == payload
        text = json.dumps(payload)
        assert KEY not in text and ENV_TOKEN not in text


def test_keyring_store_is_chosen_and_reported_when_usable():
    with use_keyring(MemoryKeyring()) as mem:
        c = creds()
        assert c.status()["credentialStore"] == "keyring"
        assert "MemoryKeyring" in c.status()["credentialStoreReason"]
        c.login_with_api_key("openrouter", KEY)
        assert json.loads(mem.data[("kward", "openrouter_api_key")]) == KEY
        assert not c.paths.config_file.exists()
        card = cards(c)["openrouter"]
        assert card["credentialStore"] == "keyring" and card["source"] == "stored"
        assert c.secret_values() == [KEY]
        assert c.logout("openrouter")["removed"] is True and mem.data == {}


def test_the_store_is_chosen_once():
    calls = []

    def select(paths, config):
        calls.append(1)
        return select_store(paths, config)

    e = make_env()
    paths = resolve_paths(e)
    c = Credentials(paths, ConfigStore(paths), e, select=select)
    assert calls == []  # nothing chosen (nor keyring imported) before it is needed
    c.status(), c.providers(), c.openrouter_key()
    assert calls == [1]


def test_importing_and_building_auth_imports_neither_keyring_nor_requests(tmp_path):
    code = ("import sys\nfrom kward.auth.service import AuthService\nfrom kward.config.store import ConfigStore, "
            "resolve_paths\np = resolve_paths()\nAuthService(p, ConfigStore(p))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('keyring', 'requests', 'urllib3')))")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
