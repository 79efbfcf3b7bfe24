"""Transport details: lazy `requests` import, connection errors, GET, pool behaviour."""

import socket
import subprocess
import sys

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.providers import jwt_claims
from kward.providers.base import ModelRequest, ProviderError
from kward.providers.codex import CodexProvider
from kward.providers.http import HttpClient, TransportError
from kward.providers.retry import RetryPolicy
from kward.providers.settings import ProviderSettings
from lib import fake_codex as fc
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_sink import RecordingSink
from lib.ports import free_port
from lib.session_records import typed


def test_importing_providers_does_not_import_requests():
    code = ("import sys, kward.providers.codex, kward.providers.openrouter, kward.providers.openai_compat, "
            "kward.providers.catalog, kward.providers.sse, kward.providers.retry; "
            "print('requests' in sys.modules, 'urllib3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_connection_refused_is_a_retryable_network_error():
    sink = RecordingSink()
    provider = CodexProvider(ProviderSettings(base_url=f"http://127.0.0.1:{free_port()}/backend-api/codex",
                                              retry=RetryPolicy((0.0,))), lambda: (make_jwt(), None))
    req = ModelRequest(instructions="", messages=[typed({"role": "user", "content": "x"})], tools=[], model="gpt-5.5")
    with pytest.raises(ProviderError) as info:
        provider.complete(req, sink, CancelToken())
    assert info.value.kind == "network" and "failed after 2 attempts" in info.value.message
    assert len(sink.retries) == 1


def test_get_and_cancelled_token():
    with FakeCodex() as fake:
        http = HttpClient()
        res = http.get(fake.base_url + "/models", headers={"Authorization": "Bearer x"})
        assert res.status == 200 and res.json()["models"][0]["slug"] == "gpt-5.5"
        assert http.get(fake.base_url + "/models").status == 401
        token = CancelToken()
        token.cancel()
        with pytest.raises(Canceled):
            http.get(fake.base_url + "/models", cancel=token)
        http.close()


def test_stream_pool_survives_many_cancels():
    with FakeCodex() as fake:
        provider = CodexProvider(ProviderSettings(base_url=fake.base_url, retry=RetryPolicy(())),
                                 lambda: (make_jwt(), None))
        req = ModelRequest(instructions="", messages=[typed({"role": "user", "content": "x"})], tools=[], model="gpt-5.5")
        for _ in range(5):
            fake.script("responses", fc.hang(["a"]), fc.text(["b"]))
            sink, token = RecordingSink(), CancelToken()

            class CancelOnFirst(RecordingSink):
                def text_delta(self, delta):
                    token.cancel()

            with pytest.raises(Canceled):
                provider.complete(req, CancelOnFirst(), token)
            assert provider.complete(req, sink, CancelToken()).text == "b"


def test_transport_error_attributes():
    err = TransportError("x", timeout=True, phase="body")
    assert err.timeout and err.phase == "body"


def test_jwt_claims():
    token = make_jwt("acct_1", plan="pro", exp=1234)
    assert jwt_claims.account_id(token) == "acct_1"
    assert jwt_claims.plan_type(token) == "pro" and jwt_claims.expires_at(token) == 1234.0
    assert jwt_claims.account_id("not-a-jwt") is None and jwt_claims.decode_claims("a.!!!.c") == {}
    assert jwt_claims.account_id_from_claims({"organizations": [{"id": "org_1"}]}) == "org_1"


def test_concurrent_streams_share_one_provider():
    with FakeCodex() as fake:
        provider = CodexProvider(ProviderSettings(base_url=fake.base_url, retry=RetryPolicy(())),
                                 lambda: (make_jwt(), None))

        def answer(record):
            text = record.json["input"][0]["content"][0]["text"]
            return fc.text([text, "!"], split=(1, 3))

        fake.script("responses", *[answer] * 8)
        results = {}

        def worker(i):
            req = ModelRequest(instructions="", messages=[typed({"role": "user", "content": f"n{i}"})], tools=[],
                               model="gpt-5.5")
            results[i] = provider.complete(req, RecordingSink(), CancelToken()).text

        import threading
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert results == {i: f"n{i}!" for i in range(8)}


def test_sse_body_with_content_length_is_read_incrementally():
    from kward.providers.openai_compat import OpenAICompatibleProvider
    from lib import fake_openrouter as fo
    from lib.fake_http import Scenario

    with fo.FakeOpenRouter() as fake:
        body = b"".join(fo.text(["plain ", "body"]).pieces)
        fake.script("chat", Scenario(headers={"Content-Type": "text/event-stream"}, body=body))
        provider = OpenAICompatibleProvider(ProviderSettings(base_url=fake.base_url))
        req = ModelRequest(instructions="", messages=[typed({"role": "user", "content": "x"})], tools=[], model="local")
        assert provider.complete(req, RecordingSink(), CancelToken()).text == "plain body"


def test_cancel_interrupts_a_tls_handshake_the_server_never_answers():
    """The server accepts TCP and stays silent: the client is stuck in the TLS handshake,
    before any response or pooled connection exists. A cancel must still end it at once."""
    import threading

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        accepted = threading.Event()
        conns = []

        def accept():
            conn, _ = server.accept()
            conns.append(conn)
            accepted.set()

        threading.Thread(target=accept, daemon=True).start()
        http, token, outcome = HttpClient(), CancelToken(), {}

        def request():
            try:
                http.open_stream(f"https://127.0.0.1:{server.getsockname()[1]}/x", headers={}, body={},
                                 cancel=token, connect_timeout=60, idle_timeout=60)
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
                outcome["error"] = exc

        client = threading.Thread(target=request)
        client.start()
        assert accepted.wait(10)
        token.cancel()
        client.join(15)
        try:
            assert not client.is_alive() and isinstance(outcome.get("error"), Canceled), outcome
        finally:
            for conn in conns:
                conn.close()
            http.close()


def test_a_401_whose_body_breaks_off_is_still_a_classified_provider_error():
    import threading

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)

        def serve():
            for _ in range(2):
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 100\r\n\r\n{\"err")

        threading.Thread(target=serve, daemon=True).start()
        provider = CodexProvider(ProviderSettings(base_url=f"http://127.0.0.1:{server.getsockname()[1]}/codex",
                                                  retry=RetryPolicy(())), lambda: (make_jwt(), "acct"))
        req = ModelRequest(instructions="", messages=[typed({"role": "user", "content": "x"})], tools=[], model="gpt-5.5")
        with pytest.raises(ProviderError) as info:
            provider.complete(req, RecordingSink(), CancelToken())
        assert info.value.kind == "auth" and info.value.reason == "not_logged_in" and info.value.status == 401
        assert "could not be read" in info.value.message
