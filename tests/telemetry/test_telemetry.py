"""Telemetry on real files with an injected clock: the daily files and their rotation,
redaction of every record, the range grammar at month and year boundaries, the stats
and the token CSV made from crafted logs, and the recorder's records of a turn."""

import json
import os
import stat
from datetime import datetime, timezone

import pytest

from kward.errors import Canceled, InvalidParams
from kward.providers.base import ModelResponse, Provider, ProviderError, RetryInfo, Usage
from kward.rpc.wire.telemetry import stats, time_range
from kward.config.secrets import Snapshot
from kward.telemetry.log import MAX_BYTES, TelemetryLog
from kward.telemetry.ranges import USAGE, bucket_bounds, parse_bucket, parse_range
from kward.telemetry.recorder import TurnRecorder, trace_fields
from kward.telemetry.stats import collect
from kward.telemetry.tokens import HEADER, export
from kward.config.settings import LoggingSettings
from kward.tools.base import ToolResult
from lib.session_records import recorded, typed

UTC = timezone.utc


def at(*parts):
    return datetime(*parts, tzinfo=UTC)


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_categories_need_the_switch_and_their_own_flag():
    assert LoggingSettings().enabled_categories == ()
    assert LoggingSettings(tokens=True, tools=True).enabled_categories == ()  # logging.enabled is off
    assert LoggingSettings(enabled=True).enabled_categories == ()
    assert LoggingSettings(enabled=True, tokens=True, errors=True).enabled_categories == ("tokens", "errors")


def test_records_go_to_daily_files_that_roll_at_the_limit_and_are_never_deleted(tmp_path):
    now = [at(2026, 1, 31, 23, 59, 0).timestamp()]
    log = TelemetryLog(tmp_path / "logs", max_bytes=400, clock=lambda: now[0])
    for i in range(12):
        assert log.write("tools", "tool_call", {"tool_name": "read_file", "i": i, "pad": "x" * 60})
    names = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert names[:2] == ["2026-01-31-1.jsonl", "2026-01-31-2.jsonl"] and names[-1] == "2026-01-31.jsonl"
    files = [tmp_path / "logs" / n for n in ["2026-01-31.jsonl"] + sorted(n for n in names if "-" in n[10:])]
    assert [r["i"] for f in files for r in lines(f)] == list(range(12))  # in order, nothing lost
    for f in files:
        assert os.path.getsize(f) < 400 + 200  # a file stops taking records once it holds the limit
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "logs").st_mode) == 0o700
    now[0] = at(2026, 2, 1, 0, 0, 1).timestamp()  # a new UTC day: a new file
    log.write("tools", "tool_call", {"i": 99})
    assert lines(tmp_path / "logs" / "2026-02-01.jsonl")[0]["timestamp"] == "2026-02-01T00:00:01.000Z"
    assert len(list((tmp_path / "logs").iterdir())) == len(names) + 1
    (tmp_path / "logs" / "2026-02-01.jsonl").unlink()  # deleted by someone: a new file, nothing lost
    log.write("tools", "tool_call", {"i": 100})
    assert [r["i"] for r in lines(tmp_path / "logs" / "2026-02-01.jsonl")] == [100]
    log.close()
    assert MAX_BYTES == 10 * 1024 * 1024


def test_every_record_is_redacted_and_known_secrets_are_scrubbed(tmp_path):
    secret = "corp-internal-credential-value-1234"
    log = TelemetryLog(tmp_path, clock=lambda: 0.0, scrub=Snapshot.of([secret]).scrub_value)
    log.write("errors", "turn_error", {
        "error_message": f"failed with Authorization: Bearer abcdefghijkl and sk-proj-0123456789abcdef and {secret}",
        "api_key": "plain-key-value", "usage": {"input_tokens": 12, "total_tokens": 30},
        "nested": {"password": "pw-123456789"}, "estimated": True, "duration_ms": 1.5})
    text = (tmp_path / "1970-01-01.jsonl").read_text()
    for leaked in ("abcdefghijkl", "sk-proj-0123456789abcdef", secret, "plain-key-value", "pw-123456789"):
        assert leaked not in text
    [record] = lines(tmp_path / "1970-01-01.jsonl")
    assert record["usage"] == {"input_tokens": 12, "total_tokens": 30}  # numbers stay readable
    assert (record["estimated"], record["duration_ms"]) == (True, 1.5)
    assert (record["timestamp"], record["category"], record["event"]) == ("1970-01-01T00:00:00.000Z", "errors",
                                                                           "turn_error")


def test_a_write_that_fails_is_ignored(tmp_path):
    blocker = tmp_path / "logs"
    blocker.write_text("a file where the directory should be")
    log = TelemetryLog(blocker)
    assert log.write("tools", "tool_call", {}) is False and log.write("tools", "tool_call", {}) is False


@pytest.mark.parametrize("text, now, start, unit, count", [
    (None, at(2026, 3, 12, 10, 30), at(2026, 3, 9), "week", 1),  # default: this week, from Monday
    ("", at(2026, 3, 15, 23, 59), at(2026, 3, 9), "week", 1),  # a Sunday is still the same week
    ("1 week", at(2026, 3, 16, 0, 0), at(2026, 3, 16), "week", 1),  # a Monday starts a new one
    ("2 weeks", at(2026, 1, 2, 8), at(2025, 12, 22), "week", 2),  # across the year
    ("10 minutes", at(2026, 1, 1, 0, 3, 30), at(2025, 12, 31, 23, 54), "minute", 10),
    ("1 hour", at(2026, 3, 12, 10, 30), at(2026, 3, 12, 10), "hour", 1),
    ("3 Hours", at(2026, 3, 12, 1, 5), at(2026, 3, 11, 23), "hour", 3),
    ("1 day", at(2026, 3, 12, 10, 30), at(2026, 3, 12), "day", 1),
    ("2 days", at(2026, 3, 1, 0, 0, 1), at(2026, 2, 28), "day", 2),
    ("2 days", at(2024, 3, 1, 12), at(2024, 2, 29), "day", 2),  # a leap day
    ("1 month", at(2026, 1, 31, 23), at(2026, 1, 1), "month", 1),
    ("2 months", at(2026, 1, 15), at(2025, 12, 1), "month", 2),  # the previous month and this one
    ("13 months", at(2026, 1, 15), at(2025, 1, 1), "month", 13),
    ("1 MONTH", at(2026, 12, 31, 23, 59), at(2026, 12, 1), "month", 1),
    ("1 year", at(2026, 1, 1, 0, 0), at(2026, 1, 1), "year", 1),
    ("2 years", at(2026, 6, 1), at(2025, 1, 1), "year", 2),
    ("  5   days  ", at(2026, 3, 12), at(2026, 3, 8), "day", 5),
])
def test_ranges_are_utc_calendar_periods(text, now, start, unit, count):
    rng = parse_range(text, now)
    assert (rng.start, rng.end, rng.unit, rng.count) == (start, now, unit, count)
    assert time_range(rng)["startAt"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("text", ["0 days", "-1 days", "1", "days", "1 fortnight", "1.5 days", "two days",
                                  "1 day ago", "1days", "9999 years", "999999999 weeks", "99999999999 days",
                                  "1 " + "s" * 200])
def test_invalid_ranges_are_refused_with_the_usage(text):
    with pytest.raises(InvalidParams) as info:
        parse_range(text, at(2026, 3, 12))
    assert USAGE in info.value.message and info.value.data == {"param": "range", "usage": USAGE}


def test_buckets():
    assert parse_bucket(None, "week") == "week" and parse_bucket("Hours", "day") == "hour"
    with pytest.raises(InvalidParams, match="Bucket must be one of: second, minute"):
        parse_bucket("fortnight", "day")
    assert bucket_bounds(at(2026, 12, 31, 23, 59, 59, 500000), "month") == (at(2026, 12, 1), at(2027, 1, 1))
    assert bucket_bounds(at(2026, 12, 31, 23), "year") == (at(2026, 1, 1), at(2027, 1, 1))
    assert bucket_bounds(at(2026, 3, 15, 12), "week") == (at(2026, 3, 9), at(2026, 3, 16))  # Monday to Monday
    assert bucket_bounds(at(2026, 3, 15, 12, 30, 5, 9), "second") == (at(2026, 3, 15, 12, 30, 5),
                                                                      at(2026, 3, 15, 12, 30, 6))


def write_log(directory, name, records):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / name, "a") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def rec(ts, category, event, **fields):
    return {**fields, "timestamp": ts, "category": category, "event": event}


@pytest.fixture
def logs(tmp_path):
    d = tmp_path / "logs"
    usage = {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 5, "cache_write_tokens": 0,
             "total_tokens": 120, "estimated": False}
    write_log(d, "2026-02-28.jsonl", [rec("2026-02-28T23:00:00.000Z", "tokens", "model_usage", usage=usage,
                                          provider="Codex", model="gpt-5.5")])  # before the range
    write_log(d, "2026-03-01.jsonl", [
        rec("2026-03-01T08:00:00.000Z", "tokens", "model_usage", usage=usage, provider="Codex", model="gpt-5.5"),
        rec("2026-03-01T08:00:00.000Z", "performance", "model_request", duration_ms=100.0, status="completed"),
        rec("2026-03-01T09:00:00.000Z", "performance", "model_request", duration_ms=300.0, status="failed"),
        "{torn line", "", "[1, 2]",
        rec("2026-03-01T09:00:00.000Z", "errors", "model_request_error", error_class="ProviderError",
            provider="Codex", error_code=429, error_message="secret-ish text"),
    ])
    write_log(d, "2026-03-01-1.jsonl", [
        rec("2026-03-01T10:00:00.000Z", "tools", "tool_call", tool_name="read_file", status="completed",
            result_bytes=10, duration_ms=2.0),
        rec("2026-03-01T10:00:01.000Z", "tools", "tool_call", tool_name="bash", status="error", result_bytes=5),
        rec("2026-03-01T11:00:00+00:00", "tokens", "model_usage", usage={**usage, "cost": 0.5},
            provider="OpenRouter", model="a,b"),  # another timestamp form, a model name to quote
    ])
    write_log(d, "2026-03-02.jsonl", [rec("2026-03-02T00:00:00.000Z", "tokens", "model_usage", usage=usage,
                                          provider="Codex", model="gpt-5.5")])  # after "now"
    (d / "kward.log").write_text("not telemetry\n")
    return d


def test_stats_count_the_enabled_categories_of_the_range(logs):
    rng = parse_range("1 day", at(2026, 3, 1, 23, 59))
    result = stats(collect(logs, rng, ("tokens", "performance", "tools", "errors")))
    assert result["range"] == {"input": "1 day", "count": 1, "unit": "day", "startAt": "2026-03-01T00:00:00Z",
                               "endAt": "2026-03-01T23:59:00Z"}
    assert (result["logDir"], result["recordCount"]) == (str(logs), 7)
    assert result["recordsByCategory"] == {"errors": 1, "performance": 2, "tokens": 2, "tools": 2}
    assert result["recordsByEvent"] == {"model_request": 2, "model_request_error": 1, "model_usage": 2, "tool_call": 2}
    assert result["usageStats"] == {"modelUsageEvents": 2, "totals": {
        "cache_read_tokens": 10, "cache_write_tokens": 0, "cost": 0.5, "input_tokens": 200, "output_tokens": 40,
        "total_tokens": 240}}  # booleans are not summed
    assert result["performance"] == {"events": {"model_request": {
        "count": 2, "statuses": {"completed": 1, "failed": 1}, "durationMs": {"min": 100.0, "avg": 200.0, "max": 300.0}}}}
    assert result["tools"] == {"calls": 2, "resultBytes": 15, "byName": {"bash": 1, "read_file": 1},
                               "byStatus": {"completed": 1, "error": 1}}
    assert result["errors"] == {"count": 1, "byEvent": {"model_request_error": 1}, "byClass": {"ProviderError": 1},
                                "byProvider": {"Codex": 1}, "byCode": {"429": 1}}
    assert "secret-ish" not in json.dumps(result)  # error messages never reach the stats
    only_tools = stats(collect(logs, rng, ("tools",)))
    assert only_tools["recordCount"] == 2 and only_tools["usageStats"]["modelUsageEvents"] == 0
    assert stats(collect(logs.parent / "missing", rng, ("tools",)))["recordCount"] == 0


def test_the_token_csv(logs):
    rng = parse_range("2 days", at(2026, 3, 1, 23, 59))
    assert export(logs, rng, "hour").csv.splitlines() == [
        ",".join(HEADER),
        "2026-02-28T23:00:00Z,2026-03-01T00:00:00Z,Codex,gpt-5.5,1,100,20,5,0,120",  # yesterday is in "2 days"
        "2026-03-01T08:00:00Z,2026-03-01T09:00:00Z,Codex,gpt-5.5,1,100,20,5,0,120",
        '2026-03-01T11:00:00Z,2026-03-01T12:00:00Z,OpenRouter,"a,b",1,100,20,5,0,120',
    ]
    assert export(logs, parse_range("1 month", at(2026, 3, 31)), "month").csv.splitlines()[1:] == [
        "2026-03-01T00:00:00Z,2026-04-01T00:00:00Z,Codex,gpt-5.5,2,200,40,10,0,240",
        '2026-03-01T00:00:00Z,2026-04-01T00:00:00Z,OpenRouter,"a,b",1,100,20,5,0,120',
    ]
    assert export(logs, parse_range("1 day", at(2026, 1, 1)), "day").csv == ",".join(HEADER) + "\n"


class FakeProvider(Provider):
    name = "Fake"

    def __init__(self, outcome):
        self.outcome = outcome

    def complete(self, request, sink, cancel):
        sink.retry(RetryInfo("Fake", request.model, 2, 3, 0.0, "Fake answered HTTP 503: Bearer abcdefghijkl"))
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class FakeTools:
    def __init__(self, result):
        self.result = result

    def schemas(self, has_ui):
        return []

    def run(self, name, arguments, ctx):
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def test_the_recorder_writes_the_events_of_a_turn_with_its_trace_ids(tmp_path):
    from kward.providers.base import ModelRequest

    log = TelemetryLog(tmp_path, clock=lambda: 0.0)
    headers = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    rec_ = TurnRecorder(log, ("tokens", "performance", "tools", "errors"), headers)
    request = ModelRequest(instructions="sys", messages=[typed({"role": "user", "content": "hi"})], tools=[], model="m1")
    ok = ModelResponse("hi", "", [], Usage(input_tokens=3, output_tokens=4, total_tokens=7), "Fake", "m1")
    with rec_.turn():
        assert rec_.provider(FakeProvider(ok)).complete(request, _Sink(), None) is ok
        rec_.tools(FakeTools(ToolResult.error("no such file"))).run("read_file", "{}", None)
    with pytest.raises(ProviderError), rec_.turn():
        rec_.provider(FakeProvider(ProviderError("boom", provider="Fake", kind="server", status=500))).complete(
            request, _Sink(), None)
    with pytest.raises(Canceled), rec_.turn():
        rec_.tools(FakeTools(Canceled("stop"))).run("run_shell_command", "{}", None)
    records = lines(tmp_path / "1970-01-01.jsonl")
    assert [(r["category"], r["event"], r.get("status")) for r in records] == [
        ("performance", "model_request", "failed"), ("performance", "model_retry", None),
        ("errors", "model_retry", None), ("performance", "model_request", "completed"),
        ("tokens", "model_usage", "completed"),
        ("tools", "tool_call", "error"), ("performance", "tool_call", "error"), ("errors", "tool_error", "error"),
        ("performance", "turn", "completed"),
        ("performance", "model_request", "failed"), ("performance", "model_retry", None),
        ("errors", "model_retry", None), ("performance", "model_request", "failed"),
        ("errors", "model_request_error", "failed"), ("performance", "turn", "failed"), ("errors", "turn_error", "failed"),
        ("tools", "tool_call", "canceled"), ("performance", "tool_call", "canceled"), ("performance", "turn", "canceled"),
    ]
    assert all((r["trace_id"], r["parent_id"]) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
               for r in records)
    usage = records[4]
    assert usage["usage"]["total_tokens"] == 7 and usage["request_bytes"] == len(
        json.dumps(["sys", recorded(request.messages), []], separators=(",", ":")))
    assert "abcdefghijkl" not in json.dumps(records) and records[1]["attempt"] == 2
    error = records[13]
    assert (error["error_class"], error["provider"], error["error_code"], error["reason"]) == \
        ("ProviderError", "Fake", 500, "provider_error")
    assert error["error_message"] == "Fake request failed: 500"
    assert records[7]["error_message"] == "Error: no such file"


class _Sink:
    def text_delta(self, delta):
        pass

    def reasoning_delta(self, delta):
        pass

    def retry(self, info):
        pass


def test_only_the_enabled_categories_are_written_and_nothing_is_wrapped_without_them(tmp_path):
    log = TelemetryLog(tmp_path, clock=lambda: 0.0)
    provider, tools = FakeProvider(None), FakeTools(None)
    only_tools = TurnRecorder(log, ("tools",))
    assert only_tools.provider(provider) is provider and only_tools.tools(tools) is not tools
    only_tokens = TurnRecorder(log, ("tokens",))
    assert only_tokens.tools(tools) is tools and only_tokens.provider(provider) is not provider


@pytest.mark.parametrize("value", ["garbage", "01-short-x-01", "", None, "00-" + "z" * 32 + "-" + "1" * 16 + "-01"])
def test_a_malformed_traceparent_adds_nothing(value):
    assert trace_fields({"traceparent": value} if value is not None else {}) == {}
