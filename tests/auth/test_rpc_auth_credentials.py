"""Credentials through the real `kward rpc`: API-key login then an OpenRouter turn (the
selection follows at once), logout keeping environment credentials, bad input, what
redaction leaves readable, and the credential stores: a test keyring backend selected
through keyring's own variable in the subprocess (never the real keyring), a locked one,
and the 0600 files when no keyring backend is usable."""

import json
import stat

import pytest

from lib import fake_openrouter as fo
from lib.fake_http import served
from lib.fake_oauth import FakeOAuth
from lib.fake_openrouter import FakeOpenRouter
from lib.keyring_backend import keyring_env, read_keyring
from lib.loopback_kward import create_session, run_turn
from lib.rpc_auth import auth_env, login, start
from lib.scripts import text, tool, write_script
from lib.turn_events import finished, wait_turn

KEY = "sk-or-v1-stored0123456789abcdef"
ENV_KEY = "sk-or-v1-environment0123456789"


oauth = served(FakeOAuth)
router = served(FakeOpenRouter)


def bearer(fake):
    return [r.headers["authorization"] for r in fake.requests("chat")]


@pytest.mark.slow
def test_an_api_key_login_is_used_by_the_next_turn(isolated_home, oauth, router):
    with start(isolated_home, oauth, KWARD_OPENROUTER_BASE_URL=router.base_url) as c:
        session = create_session(c, isolated_home)
        result = c.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": f" {KEY}\n"})
        assert result == {"providerId": "openrouter", "ok": True, "credentialStore": "file",
                          "message": "Saved the OpenRouter API key in a 0600 file."}
        assert c.request("runtime/state", {"sessionId": session["id"]})["defaultProvider"] == "OpenRouter"
        router.script("chat", fo.text(["via ", "OpenRouter"]))
        assert finished(run_turn(c, session["id"])) == {"status": "completed"}
        assert bearer(router) == [f"Bearer {KEY}"]
        status = c.request("auth/status")
        assert (status["openrouterApiKey"], status["openrouterApiKeySource"]) == (True, "stored")
        card = c.request("auth/providers")["providers"][1]
        assert card == {"id": "openrouter", "name": "OpenRouter", "authType": "api_key", "configured": True,
                        "source": "stored", "storedCredentialType": "api_key", "canLogout": True,
                        "usesCallbackServer": False, "credentialStore": "file"}
        assert c.stderr == ""
    config = isolated_home / ".kward" / "config.json"
    assert json.loads(config.read_text())["openrouter_api_key"] == KEY  # where the original keeps it
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and stat.S_IMODE(config.parent.stat().st_mode) == 0o700


@pytest.mark.slow
def test_logout_removes_stored_credentials_and_keeps_the_environment_ones(isolated_home, oauth, router):
    env = auth_env(isolated_home, oauth, KWARD_OPENROUTER_BASE_URL=router.base_url, OPENROUTER_API_KEY=ENV_KEY,
                   OPENAI_ACCESS_TOKEN="env-access-token-0123456789", KWARD_PROVIDER="openrouter")
    with start(isolated_home, oauth, env=env) as c:
        c.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": KEY})
        login(c)
        before = {card["id"]: card for card in c.request("auth/providers")["providers"]}
        assert before["openrouter"]["source"] == "environment" and before["openrouter"]["canLogout"] is True
        assert before["openai"]["source"] == "environment" and before["openai"]["storedCredentialType"] == "oauth"
        out = c.request("auth/logoutProvider", {"providerId": "openrouter"})
        assert (out["removed"], out["configured"], out["source"]) == (True, True, "environment")
        assert "OPENROUTER_API_KEY is still set" in out["message"]
        out = c.request("auth/logoutProvider", {"providerId": "openai"})
        assert (out["removed"], out["configured"], out["source"]) == (True, True, "environment")
        after = {card["id"]: card for card in c.request("auth/providers")["providers"]}
        for card in after.values():
            assert (card["configured"], card["source"], card["canLogout"], card["storedCredentialType"]) == \
                (True, "environment", False, None)
        status = c.request("auth/status")
        assert (status["openaiOAuth"], status["openaiAccessToken"], status["openrouterApiKeySource"]) == \
            (False, True, "environment")
        again = c.request("auth/logoutProvider", {"providerId": "openrouter"})
        assert again["removed"] is False and "No stored OpenRouter API key" in again["message"]
        router.script("chat", fo.text(["still"]))
        assert finished(run_turn(c, create_session(c, isolated_home)["id"])) == {"status": "completed"}
        assert bearer(router) == [f"Bearer {ENV_KEY}"]
    assert not (isolated_home / ".kward" / "auth.json").exists()
    assert "openrouter_api_key" not in json.loads((isolated_home / ".kward" / "config.json").read_text())


BAD_KEY_LOGINS = [
    ({"apiKey": KEY}, "providerId"),
    ({"providerId": "openai", "apiKey": KEY}, "providerId"),
    ({"providerId": "openrouter"}, "apiKey"),
    ({"providerId": "openrouter", "apiKey": 12345678}, "apiKey"),
    ({"providerId": "openrouter", "apiKey": "sk-sho"}, "apiKey"),
    ({"providerId": "openrouter", "apiKey": "sk-or-v1 with spaces"}, "apiKey"),
    ({"providerId": "openrouter", "apiKey": "sk-" + "x" * 1030}, "apiKey"),
]


def test_bad_api_key_logins_store_nothing(isolated_home, oauth):
    with start(isolated_home, oauth) as c:
        for params, param in BAD_KEY_LOGINS:
            error = c.error("auth/loginWithApiKey", params)
            assert (error.code, error.error["data"]["param"]) == (-32602, param), params
            if isinstance(params.get("apiKey"), str):
                assert params["apiKey"] not in json.dumps(error.error)  # never quoted back
        assert c.request("auth/status")["openrouterApiKey"] is False
        error = c.error("auth/logoutProvider", {"providerId": "github"})
        assert (error.code, error.error["data"]["param"]) == (-32602, "providerId")
    assert not (isolated_home / ".kward" / "config.json").exists()


@pytest.mark.slow
def test_flags_sources_and_the_authorization_url_survive_redaction(isolated_home, oauth):
    with start(isolated_home, oauth, OPENROUTER_API_KEY=ENV_KEY) as c:
        status = c.request("auth/status")
        assert status["openrouterApiKey"] is True and status["openaiOAuth"] is False  # booleans, not [REDACTED]
        assert status["openrouterApiKeySource"] == "environment" and status["credentialStore"] == "file"
        assert "[REDACTED]" not in json.dumps(status)
        started = c.request("auth/startOpenAILogin", {})
        assert "[REDACTED]" not in started["authorizationUrl"] and "code_challenge=" in started["authorizationUrl"]
        assert ENV_KEY not in json.dumps(c.request("auth/providers"))
        error = c.error("auth/logoutProvider", {"providerId": ENV_KEY})  # even a key sent by mistake is not echoed
        assert ENV_KEY not in json.dumps(error.error)


# --- the credential stores ---------------------------------------------------------------

def keyring_kward(home, oauth, file, backend="lib.keyring_backend.MemoryKeyring", **extra):
    return start(home, oauth, env=keyring_env(auth_env(home, oauth, **extra), file, backend))


@pytest.mark.slow
def test_the_keyring_keeps_the_credentials_and_the_providers_use_them(isolated_home, oauth, router, tmp_path):
    from lib import fake_codex as fc
    from lib.fake_codex import FakeCodex

    ring = tmp_path / "keyring.json"
    with FakeCodex() as codex, keyring_kward(isolated_home, oauth, ring, KWARD_OPENROUTER_BASE_URL=router.base_url,
                                             KWARD_CODEX_BASE_URL=codex.base_url) as c:
        status = c.request("auth/status")
        assert status["credentialStore"] == "keyring" and "lib.keyring_backend.MemoryKeyring" in \
            status["credentialStoreDetail"]
        assert c.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": KEY})["message"] == \
            "Saved the OpenRouter API key in the OS keyring."
        session = create_session(c, isolated_home)
        router.script("chat", fo.text(["from the keyring"]))
        assert finished(run_turn(c, session["id"])) == {"status": "completed"}
        assert bearer(router) == [f"Bearer {KEY}"]
        login(c)
        tokens = read_keyring(ring)["kward:openai_oauth"]["tokens"]
        codex.script("responses", fc.text(["ok"]))
        assert finished(run_turn(c, session["id"])) == {"status": "completed"}
        assert codex.requests("responses")[0].headers["authorization"] == f"Bearer {tokens['access_token']}"
        cards = {card["id"]: card for card in c.request("auth/providers")["providers"]}
        assert all(card["source"] == "stored" and card["credentialStore"] == "keyring" for card in cards.values())
        assert c.stderr == ""
    assert read_keyring(ring)["kward:openrouter_api_key"] == KEY
    config = isolated_home / ".kward" / "config.json"
    assert not (isolated_home / ".kward" / "auth.json").exists()  # one place only
    assert not config.exists() or "openrouter_api_key" not in json.loads(config.read_text())
    with keyring_kward(isolated_home, oauth, ring) as c:  # another process: logout empties the keyring
        assert c.request("auth/logoutProvider", {"providerId": "openai"})["removed"] is True
        assert c.request("auth/logoutProvider", {"providerId": "openrouter"})["removed"] is True
    assert read_keyring(ring) == {}


@pytest.mark.slow
def test_tool_output_never_shows_a_keyring_credential(isolated_home, oauth, tmp_path):
    ring = tmp_path / "keyring.json"
    with keyring_kward(isolated_home, oauth, ring) as c:
        c.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": KEY})
    assert KEY in ring.read_text()
    # A new process that never read the key: the model's command prints the keyring's file.
    script = write_script(isolated_home / "scripts", [[tool("run_shell_command", {"command": f"cat {ring}"})],
                                                      [text("done")]])
    with keyring_kward(isolated_home, oauth, ring, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script)) as c:
        session = create_session(c, isolated_home)
        turn = c.request("turns/start", {"sessionId": session["id"], "input": "show me"})
        events = wait_turn(c, turn["id"])
        [result] = [e["payload"]["result"]["content"] for e in events if e["type"] == "toolResult"]
        assert "[REDACTED]" in result and KEY not in result
        assert KEY not in b"".join(c.bodies).decode()
    assert not any(KEY in p.read_text() for p in (isolated_home / ".kward" / "sessions").rglob("*.jsonl"))


def test_a_locked_keyring_falls_back_to_the_files_and_says_so(isolated_home, oauth, tmp_path):
    ring = tmp_path / "keyring.json"
    with keyring_kward(isolated_home, oauth, ring, backend="lib.keyring_backend.LockedKeyring") as c:
        assert c.request("auth/status")["credentialStore"] == "keyring"
        result = c.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": KEY})
        assert result["credentialStore"] == "file" and "0600 file" in result["message"]
        status = c.request("auth/status")
        assert status["credentialStore"] == "file" and "KeyringLocked" in status["credentialStoreDetail"]
        assert status["credentialStoreReason"].startswith("the OS keyring failed (set_password raised KeyringLocked)")
        assert status["openrouterApiKeySource"] == "stored"
    assert json.loads((isolated_home / ".kward" / "config.json").read_text())["openrouter_api_key"] == KEY
    assert read_keyring(ring) == {}


@pytest.mark.parametrize("backend", ["keyring.backends.fail.Keyring", "keyring.backends.null.Keyring"])
@pytest.mark.slow
def test_without_a_usable_keyring_the_files_are_used(isolated_home, oauth, tmp_path, backend):
    with keyring_kward(isolated_home, oauth, tmp_path / "unused.json", backend=backend) as c:
        status = c.request("auth/status")
        assert status["credentialStore"] == "file" and backend in status["credentialStoreReason"]
        login(c)
        assert c.request("auth/status")["openaiOAuthSource"] == "stored"
    auth_file = isolated_home / ".kward" / "auth.json"
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert json.loads(auth_file.read_text())["auth_mode"] == "openai_oauth"
