"""No secret (access token, API key, account id) appears in anything `kward rpc` writes:
stdout frames (events, responses, errors), stderr, the log file or the session file, even
at DEBUG level and when the servers echo the secrets back in failing answers."""

import json

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import TRACEPARENT, create_session, run_turn, start_kward
from lib.rpc_client import RpcError
from lib.turn_events import finished

ACCOUNT = "acct_SECRET_7c1e55aa"
TOKEN = make_jwt(ACCOUNT)
KEY = "sk-or-v1-SECRETSECRET0123456789abcdef"
SECRETS = [TOKEN, TOKEN.split(".")[1], ACCOUNT, KEY, KEY[len("sk-or-v1-"):]]


@pytest.mark.slow
def test_no_secret_in_frames_stderr_or_logs(isolated_home):
    # Each server echoes what it received (and a bit more): the credentials it was sent.
    echo = f"Incorrect credentials: Bearer {TOKEN} token={TOKEN} account {ACCOUNT}"
    key_echo = f"Incorrect credentials: key {KEY} raw={KEY} Authorization: Bearer {KEY}"
    seen = []

    def call(method, params=None):
        try:
            result = client.request(method, params)
        except RpcError as exc:
            result = exc.error
        seen.append(result)
        return result

    with FakeCodex() as codex, FakeOpenRouter() as router:
        codex.script("responses",
                     fc.http_error(401, {"detail": echo}),
                     fc.http_error(429, {"error": {"type": "rate_limit_exceeded", "message": echo}},
                                   {"Retry-After": "0"}),
                     fc.text(["ok after retry"]),
                     fc.http_error(429, {"error": {"type": "usage_limit_reached", "message": echo,
                                                   "plan_type": "plus", "resets_at": 4102444800}}),
                     fc.failed_mid_stream("server_error", echo, ["partial"]),
                     fc.error_event("server_error", echo),
                     fc.http_error(500, {"error": {"message": echo}}),
                     fc.http_error(500, {"error": {"message": echo}}))
        codex.script("models", fc.http_error(401, {"detail": echo}))
        router.script("chat",
                      fo.http_error(401, key_echo),
                      fo.http_error(429, key_echo, {"Retry-After": "0"}),
                      fo.text(["ok"]),
                      fo.http_error(402, key_echo, metadata={"raw": key_echo, "provider_name": "Up"}),
                      fo.mid_stream_error(["partial"], message=key_echo))
        router.script("models_user", fo.http_error(401, key_echo))
        client = start_kward(isolated_home, KWARD_CODEX_BASE_URL=codex.base_url,
                             KWARD_OPENROUTER_BASE_URL=router.base_url, OPENAI_ACCESS_TOKEN=TOKEN,
                             OPENROUTER_API_KEY=KEY, KWARD_LOG_LEVEL="DEBUG")
        with client:
            session = create_session(client, isolated_home)
            sid = session["id"]
            call("initialize")
            # Codex: 401; 429 then ok; usage limit; mid-stream failure; error event, 500, 500
            statuses = [finished(run_turn(client, sid, "hi", trace={"traceparent": TRACEPARENT}))["status"]
                        for _ in range(5)]
            assert statuses == ["failed", "completed", "failed", "failed", "failed"]
            call("models/list")
            call("models/current")
            call("runtime/state", {"sessionId": sid})
            call("runtime/stats", {"sessionId": sid})
            call("config/read")
            call("models/set", {"model": "openai/gpt-5.5", "provider": "OpenRouter"})
            statuses = [finished(run_turn(client, sid, "hi"))["status"] for _ in range(4)]
            assert statuses == ["failed", "completed", "failed", "failed"]
            call("models/list")
            call("openrouter/catalog")
            call("sessions/transcript", {"sessionId": sid})
        assert client.protocol_errors == []

    frames = "\n".join(json.dumps(x) for x in [*client.notifications, *client.null_id_errors, *seen])
    log_file = isolated_home / ".kward" / "logs" / "kward.log"
    log_text = log_file.read_text(encoding="utf-8")
    session_text = open(session["path"], encoding="utf-8").read()
    # The failures did happen and were reported (so the check below is meaningful).
    assert "Incorrect credentials" in frames and "Incorrect credentials" in log_text
    assert "429" in log_text and "DEBUG" in log_text.upper()
    assert len(codex.requests("responses")) == 8 and len(router.requests("chat")) == 5
    for secret in SECRETS:
        assert secret not in frames, f"secret in a stdout frame: {secret[:12]}..."
        assert secret not in client.stderr, f"secret on stderr: {secret[:12]}..."
        assert secret not in log_text, f"secret in kward.log: {secret[:12]}..."
        assert secret not in session_text, f"secret in the session file: {secret[:12]}..."
