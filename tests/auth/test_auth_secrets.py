"""No secret in any payload, page, log record, exception or stderr: plant them, run every
auth path (success and failure), grep everything that came out."""

import json
import logging

import pytest

from kward.auth.credentials import ApiKeySaved, CredentialStatus, LoggedOut, ProviderCards
from kward.auth.login import LoginState
from kward.errors import KwardError
from kward.rpc.protocol import error_object
from kward.rpc.wire import auth as wire_auth
from kward.rpc.wire.auth import login as login_object
from lib.auth_helpers import authorize, make_auth, make_env, open_in_browser
from lib.fake_http import json_response
from lib.fake_oauth import FakeOAuth

API_KEY = "sk-or-v1-planted-secret-key-000000000000"
ENV_KEY = "sk-or-v1-planted-env-key-11111111111"
BAD_CODE = "code-never-issued-9999"


def test_no_secret_leaks_anywhere(caplog, capfd):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    verifiers: list[str] = []

    def keep(value):
        shape = {LoginState: login_object, CredentialStatus: wire_auth.credential_status,  # as the client sees it
                 ProviderCards: wire_auth.provider_cards, ApiKeySaved: wire_auth.api_key_saved,
                 LoggedOut: wire_auth.logged_out}.get(type(value))
        if shape is not None:
            value = shape(value)
        seen.append(json.dumps(value) if not isinstance(value, str) else value)

    def expect_error(fn, *args):
        with pytest.raises(KwardError) as info:
            fn(*args)
        keep(str(info.value))
        keep(error_object(info.value))

    with FakeOAuth() as fake:
        env = make_env(KWARD_OPENAI_AUTH_ISSUER=fake.issuer, KWARD_OAUTH_PORT="0", OPENROUTER_API_KEY=ENV_KEY)
        auth = make_auth(env)
        try:
            # a login through the browser, then one by pasted URL
            login = auth.logins.start(timeout=10, on_finished=keep)
            verifiers.append(login._verifier)
            keep(login.state())
            keep(open_in_browser(login.authorization_url).text)
            assert login.wait(5)
            login = auth.logins.start(timeout=10, on_finished=keep)
            verifiers.append(login._verifier)
            callback = authorize(login.authorization_url)
            keep(auth.logins.submit(login.login_id, callback))
            expect_error(auth.logins.submit, login.login_id, callback)  # already finished
            # state mismatch, a refused code, a denied consent
            fake.authorize_outcome = "wrong_state"
            login = auth.logins.start(timeout=10, on_finished=keep)
            verifiers.append(login._verifier)
            forged = authorize(login.authorization_url)
            keep(open_in_browser(login.authorization_url).text)
            expect_error(auth.logins.submit, login.login_id, forged)
            expect_error(auth.logins.submit, login.login_id, BAD_CODE)
            fake.authorize_outcome = "ok"
            # refreshes: fine, transient failure, permanent failure
            keep(auth.tokens.refresh(force=True))
            fake.script("token", json_response(503, {"error": "temporarily_unavailable"}))
            expect_error(auth.tokens.refresh, True)
            fake.refresh_fails = True
            expect_error(auth.tokens.refresh, True)
            # API keys
            keep(auth.credentials.login_with_api_key("openrouter", API_KEY))
            expect_error(auth.credentials.login_with_api_key, "openrouter", API_KEY + " extra")
            keep(auth.credentials.status())
            keep(auth.credentials.providers())
            keep(auth.credentials.logout("openrouter"))
            keep(auth.credentials.logout("openai"))
            planted = fake.issued + verifiers + [API_KEY, ENV_KEY, BAD_CODE]
        finally:
            auth.close()

    assert len(planted) > 10 and any(p.startswith("rt-") for p in planted)
    out, err = capfd.readouterr()
    assert err == ""
    # kward's records, and urllib3's about kward's own requests (the test's browser GETs the
    # authorize and callback URLs itself: those lines are not kward's)
    ours = [r for r in caplog.records if r.name.startswith("kward") or "/oauth/token" in r.getMessage()]
    assert any(r.name.startswith("kward") and r.levelno >= logging.WARNING for r in ours)  # failures were logged
    logs = "\n".join(r.getMessage() + (r.exc_text or "") for r in ours)
    everything = "\n".join(seen) + "\n" + logs + "\n" + out
    leaked = [p for p in planted if p in everything]
    assert leaked == []


def test_known_secrets_learn_every_value_the_store_reads_or_writes(isolated_home):
    from kward.config.store import ConfigStore, resolve_paths
    from kward.config.secrets import KnownSecrets

    # the store lives elsewhere than the files these KnownSecrets read themselves (a keyring, say)
    elsewhere = ConfigStore(resolve_paths({"KWARD_CONFIG_PATH": str(isolated_home / "other" / "config.json")}))
    with FakeOAuth() as fake:
        auth = make_auth(make_env(KWARD_OPENAI_AUTH_ISSUER=fake.issuer, KWARD_OAUTH_PORT="0"))
        known = KnownSecrets({}, elsewhere, isolated_home / "not-the-login-file")
        auth.credentials.watch_secrets(known.learn)
        try:
            login = auth.logins.start(timeout=10)
            auth.logins.submit(login.login_id, authorize(login.authorization_url))
            auth.tokens.refresh(force=True)
            auth.credentials.login_with_api_key("openrouter", API_KEY)
        finally:
            auth.close()
        tokens = [t for t in fake.issued if not t.startswith("code-")]
    assert known.snapshot().scrub(" ".join(tokens + [API_KEY])) == " ".join(["[REDACTED]"] * (len(tokens) + 1))

    # a value this process never read is learned from the loader when tool output is scrubbed
    later = KnownSecrets({}, elsewhere, isolated_home / "not-the-login-file")
    later.add_loader(auth.credentials.secret_values)
    assert later.snapshot().scrub(API_KEY) == API_KEY  # frames alone never run the loader
    assert later.scrub_output(f"key={API_KEY}") == "key=[REDACTED]"
