"""Provider benchmarks: SSE parsing speed and first-delta latency against the loopback fakes.

Run from a checkout: `python3 tools/bench_providers.py [--quick]`. `bench(quick)` returns
rows `{"name", "value", "unit", "target"}` for `tools/bench.py` to merge into its report.

- `sse_parse_events_per_s`: the byte-level SSE parser alone on a large synthetic Codex
  stream fed in 16 KiB chunks (target >= 50,000 events/s).
- `codex_decode_events_per_s`: parser + JSON + the Codex assembler (what a real stream costs).
- `codex_headers_to_first_delta_ms_p50` / `openrouter_...`: from the moment the response
  headers were parsed to the first text delta reaching the sink, p50 over >= 50 requests
  against the fake server on 127.0.0.1 (the RPC framing part is measured elsewhere).
- `cancel_blocked_read_ms_p50`: from `CancelToken.cancel()` to `complete` raising Canceled
  while the read is blocked on a silent stream.

Runs on the calling thread plus the fake servers' threads; nothing is shared.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kward.cancel import CancelToken  # noqa: E402
from kward.errors import Canceled  # noqa: E402
from kward.model import UserMessage  # noqa: E402
from kward.providers.base import ModelRequest, QuietSink  # noqa: E402
from kward.providers.codex import CodexProvider  # noqa: E402
from kward.providers.codex_wire import CodexAssembler  # noqa: E402
from kward.providers.http import HttpClient  # noqa: E402
from kward.providers.openrouter import OpenRouterProvider  # noqa: E402
from kward.providers.retry import RetryPolicy  # noqa: E402
from kward.providers.settings import ProviderSettings  # noqa: E402
from kward.providers.sse import SSEParser  # noqa: E402
from lib import fake_codex as fc  # noqa: E402
from lib import fake_openrouter as fo  # noqa: E402


_NullSink = QuietSink


class _FirstDeltaSink(_NullSink):
    def __init__(self) -> None:
        self.first: float | None = None

    def text_delta(self, delta: str) -> None:
        if self.first is None:
            self.first = time.perf_counter()


class _TimedHttp(HttpClient):
    """Records when each stream's response headers were parsed."""

    headers_at: float = 0.0

    def open_stream(self, *args: Any, **kwargs: Any) -> Any:
        stream = super().open_stream(*args, **kwargs)
        self.headers_at = time.perf_counter()
        return stream


def synthetic_codex_stream(events: int) -> bytes:
    deltas = [f"token{i} \u00e9 " for i in range(events - 2)]
    return b"".join(fc.encode_events([fc.created(), *fc.text_events(deltas)[:2 + len(deltas)]]))


def bench_sse(events: int) -> tuple[float, float]:
    data = synthetic_codex_stream(events)
    chunks = [data[i:i + 16384] for i in range(0, len(data), 16384)]
    best_parse = best_decode = 0.0
    for _ in range(3):
        parser, count = SSEParser(), 0
        t0 = time.perf_counter()
        for c in chunks:
            count += len(parser.feed(c))
        count += len(parser.close())
        best_parse = max(best_parse, count / (time.perf_counter() - t0))
        parser, asm = SSEParser(), CodexAssembler("Codex", "m", _NullSink())
        t0 = time.perf_counter()
        n = 0
        for c in chunks:
            for ev in parser.feed(c):
                asm.on_event(ev)
                n += 1
        best_decode = max(best_decode, n / (time.perf_counter() - t0))
    return best_parse, best_decode


def _p50(values: list[float]) -> float:
    return statistics.median(values) * 1000.0


def bench_first_delta(requests: int) -> tuple[float, float]:
    req = ModelRequest(instructions="bench", messages=[UserMessage("hi")], tools=[], model="m")
    results = []
    with fc.FakeCodex() as codex, fo.FakeOpenRouter() as router:
        http_c, http_o = _TimedHttp(), _TimedHttp()
        pc = CodexProvider(ProviderSettings(base_url=codex.base_url, retry=RetryPolicy(())),
                           lambda: (fc.make_jwt(), None), http=http_c)
        po = OpenRouterProvider(ProviderSettings(base_url=router.base_url, retry=RetryPolicy(())),
                                lambda: "sk-or-v1-bench", http=http_o)
        for provider, fake, route, scenario, http in ((pc, codex, "responses", fc.text(["Hel", "lo"]), http_c),
                                                      (po, router, "chat", fo.text(["Hel", "lo"]), http_o)):
            samples = []
            for i in range(requests + 5):
                fake.script(route, scenario)
                sink = _FirstDeltaSink()
                provider.complete(req, sink, CancelToken())
                if i >= 5:  # warm-up: first connection, imports
                    samples.append(sink.first - http.headers_at)
            results.append(_p50(samples))
    return results[0], results[1]


def bench_cancel(rounds: int) -> float:
    req = ModelRequest(instructions="bench", messages=[UserMessage("hi")], tools=[], model="m")
    samples = []
    with fc.FakeCodex() as codex:
        provider = CodexProvider(ProviderSettings(base_url=codex.base_url, retry=RetryPolicy(())),
                                 lambda: (fc.make_jwt(), None))
        for _ in range(rounds):
            codex.script("responses", fc.hang(["a"]))
            token, started, done = CancelToken(), threading.Event(), {}

            class Sink(_NullSink):
                def text_delta(self, delta: str) -> None:
                    started.set()

            def work() -> None:
                try:
                    provider.complete(req, Sink(), token)
                except Canceled:
                    done["t"] = time.perf_counter()

            thread = threading.Thread(target=work)
            thread.start()
            started.wait(5)
            t0 = time.perf_counter()
            token.cancel()
            thread.join(5)
            samples.append(done["t"] - t0)
    return _p50(samples)


def bench_first_frame_via_rpc(turns: int) -> float:
    """Whole path through the real `kward rpc` child against the loopback fake Codex: from
    the moment the fake server received the model request (it answers at once: headers,
    then the first delta) to the `assistantDelta` frame read from kward's stdout. Both
    instants are time.monotonic() of this process. p50 in ms."""
    import tempfile

    from kward.client import Client
    from lib.rpc_client import kward_env

    with fc.FakeCodex() as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = kward_env(home, KWARD_PROVIDER="codex", KWARD_CODEX_BASE_URL=fake.base_url,
                        OPENAI_ACCESS_TOKEN=fc.make_jwt("acct_bench"), KWARD_RETRY_DELAYS="0")
        arrivals: list[float] = []

        def first_delta(msg: dict[str, Any]) -> bool:  # runs on the client's reader thread: stamp it there
            if msg.get("params", {}).get("type") == "assistantDelta":
                arrivals.append(time.monotonic())
            return False

        with Client.spawn(None, env=env, cwd=tmp) as client:
            client.subscribe(first_delta)
            client.request("initialize", {})
            sid = client.request("sessions/create", {"name": "bench"})["id"]
            samples = []
            for i in range(turns + 5):
                fake.script("responses", fc.text(("Hel", "lo")))
                del arrivals[:]
                for event in client.turn(sid, f"turn {i}", timeout=60):
                    pass
                received = fake.requests("responses")[-1].t
                if i >= 5:  # the first turns warm up imports and the connection pool
                    samples.append(arrivals[0] - received)
        return _p50(samples)


def bench(quick: bool = False) -> list[dict[str, Any]]:
    """Run every provider benchmark; rows of {name, value, unit, target}."""
    parse, decode = bench_sse(50_000 if quick else 200_000)
    codex_p50, router_p50 = bench_first_delta(50 if quick else 200)
    cancel_p50 = bench_cancel(10 if quick else 30)
    rpc_p50 = bench_first_frame_via_rpc(30 if quick else 100)
    return [
        {"name": "sse_parse_events_per_s", "value": round(parse), "unit": "events/s", "target": ">= 50000"},
        {"name": "codex_decode_events_per_s", "value": round(decode), "unit": "events/s", "target": ">= 50000"},
        {"name": "codex_headers_to_first_delta_ms_p50", "value": round(codex_p50, 3), "unit": "ms",
         "target": "<= 5"},
        {"name": "openrouter_headers_to_first_delta_ms_p50", "value": round(router_p50, 3), "unit": "ms",
         "target": "<= 5"},
        {"name": "cancel_blocked_read_ms_p50", "value": round(cancel_p50, 3), "unit": "ms", "target": "<= 200"},
        {"name": "kward rpc: fake Codex got the request -> assistantDelta frame on stdout, p50", "value": round(rpc_p50, 3),
         "unit": "ms", "target": "<= 5"},
    ]


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'name':<{width}}  {'value':>12}  {'unit':<9}  target"]
    lines += [f"{r['name']:<{width}}  {r['value']:>12}  {r['unit']:<9}  {r['target']}" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(_table(bench(quick="--quick" in sys.argv)) + "\n")
    sys.stdout.write(json.dumps({"quick": "--quick" in sys.argv}) + "\n")
