"""No secret (token, key, account id) reaches an error, a retry event or a log record."""

import json
import logging

from kward.cancel import CancelToken
from kward.providers.base import ModelRequest, ProviderError
from kward.providers.codex import CodexProvider
from kward.providers.openrouter import OpenRouterProvider
from kward.providers.retry import RetryPolicy
from kward.providers.settings import ProviderSettings
from kward.rpc.protocol import error_object
from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.fake_sink import RecordingSink
from lib.session_records import typed

ACCOUNT = "acct_secret_4f9a2b"
TOKEN = make_jwt(ACCOUNT)
KEY = "sk-or-v1-secretsecretsecret0123456789"


def collect(provider, model, scenarios, fake, route, caplog):
    seen = []
    for scenario in scenarios:
        fake.script(route, scenario)
        sink = RecordingSink()
        req = ModelRequest(instructions="", messages=[typed({"role": "user", "content": "hi"})], tools=[], model=model)
        try:
            provider.complete(req, sink, CancelToken())
        except ProviderError as err:
            seen += [err.message, str(err), json.dumps(error_object(err))]
        seen += [r.error for r in sink.retries]
    seen += [r.getMessage() for r in caplog.records]
    seen += [str(r.args) for r in caplog.records]
    return "\n".join(seen)


def test_codex_secrets_never_leak(caplog):
    caplog.set_level(logging.DEBUG)
    echo = f"token {TOKEN} Bearer {TOKEN} account {ACCOUNT} rejected"
    with FakeCodex() as fake:
        provider = CodexProvider(ProviderSettings(base_url=fake.base_url, retry=RetryPolicy((0.0,))),
                                 lambda: (TOKEN, None))
        text = collect(provider, "gpt-5.5", [
            fc.http_error(401, {"detail": echo}),
            fc.http_error(500, {"error": {"message": echo}}),
            fc.http_error(400, {"error": {"message": echo, "code": "context_length_exceeded"}}),
            fc.usage_limit(),
            fc.failed_mid_stream("server_error", echo, ["x"]),
            fc.error_event("bad", echo, []),
            fc.truncated(["x"]),
        ], fake, "responses", caplog)
    assert "rejected" in text  # the messages did arrive
    assert TOKEN not in text and ACCOUNT not in text and TOKEN.split(".")[1] not in text


def test_openrouter_key_never_leaks(caplog):
    caplog.set_level(logging.DEBUG)
    echo = f"key {KEY} is not valid"
    with FakeOpenRouter() as fake:
        provider = OpenRouterProvider(ProviderSettings(base_url=fake.base_url, retry=RetryPolicy((0.0,))),
                                      lambda: KEY)
        text = collect(provider, "openai/gpt-5.5", [
            fo.http_error(401, echo),
            fo.http_error(503, echo, metadata={"raw": echo, "provider_name": "X"}),
            fo.mid_stream_error(["x"], message=echo),
        ], fake, "chat", caplog)
    assert "is not valid" in text
    assert KEY not in text and KEY[10:] not in text
