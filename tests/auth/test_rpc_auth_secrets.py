"""No credential ever leaves kward: one `kward rpc` at log level DEBUG goes through logins
(callback and pasted URL), a timed-out login, refreshes before expiry and after a 401, a
failed refresh, a model command that prints the login file, an API-key login, a logout
and an OpenRouter turn; then every frame it wrote, its stderr, its log files and its
session files are searched for every code, token and key it was given."""

import json

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.auth_helpers import authorize
from lib.fake_codex import FakeCodex
from lib.fake_oauth import FakeOAuth
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn
from lib.rpc_auth import finished, login, start
from lib.turn_events import failed_error, finished as turn_finished

KEY = "sk-or-v1-planted0123456789abcdef"


@pytest.mark.slow
def test_no_code_token_or_key_in_any_output(isolated_home):
    config_dir = isolated_home / ".kward"
    with FakeOAuth(expires_in=30) as oauth, FakeCodex() as codex, FakeOpenRouter() as router:
        with start(isolated_home, oauth, KWARD_CODEX_BASE_URL=codex.base_url,
                   KWARD_OPENROUTER_BASE_URL=router.base_url, KWARD_LOG_LEVEL="DEBUG") as c:
            login(c)
            pasted = c.request("auth/startOpenAILogin", {})
            callback = authorize(pasted["authorizationUrl"])
            assert c.request("auth/submitOpenAICode", {"loginId": pasted["loginId"], "code": callback})["status"] == \
                "completed"
            timed_out = c.request("auth/startOpenAILogin", {"timeoutSeconds": 0.2})
            assert finished(c, timed_out["loginId"])["status"] == "failed"
            c.request("auth/status")
            c.request("auth/providers")

            session = create_session(c, isolated_home)["id"]
            codex.script("responses", fc.http_error(401, {"detail": "expired"}),
                         fc.function_call("run_shell_command", json.dumps({"command": f"cat {config_dir}/auth.json"})),
                         fc.text(["done"]))
            events = run_turn(c, session)
            assert turn_finished(events) == {"status": "completed"}
            [output] = [e["payload"]["result"]["content"] for e in events if e["type"] == "toolResult"]
            assert "[REDACTED]" in output and "refresh_token" in output  # the file was read, its values hidden

            oauth.refresh_fails = True
            assert failed_error(run_turn(c, session))["reason"] == "not_logged_in"
            c.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": KEY})
            c.request("auth/logoutProvider", {"providerId": "openai"})
            router.script("chat", fo.text(["ok"]))
            assert turn_finished(run_turn(c, session)) == {"status": "completed"}
            assert c.close() == 0
            frames, stderr = b"".join(c.bodies).decode("utf-8"), c.stderr
        model_saw = json.dumps([r.json for r in codex.requests("responses")] + [r.json for r in router.requests("chat")])
        planted = [s for s in oauth.issued if len(s) >= 8] + [KEY]
        sent = [r.headers["authorization"] for r in codex.requests("responses") + router.requests("chat")]
    # the values searched for are the ones in use, and diagnostics were written
    assert len(planted) > 10 and all(any(s in header for s in planted) for header in sent)
    assert "DEBUG" in stderr and "refreshed" in stderr
    logs = "".join(p.read_text() for p in (config_dir / "logs").glob("kward.log*"))
    sessions = "".join(p.read_text() for p in (config_dir / "sessions").rglob("*") if p.is_file())
    assert logs and sessions
    for name, text in (("frames", frames), ("stderr", stderr), ("log", logs), ("sessions", sessions),
                       ("model requests", model_saw)):
        found = [s[:12] for s in planted if s in text]
        assert found == [], f"{name} holds {found}"
