"""Telemetry through the real processes: off by default, switched on by config or the
KWARD_LOGGING* variables, the records a turn writes (with its trace ids; retries and
failures against the fake OpenRouter), logging/stats and logging/tokenCsv, and the
`kward stats tokens` command."""

import json

import pytest

from lib import fake_openrouter as fo
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import TRACEPARENT, create_session, run_turn, start_kward
from lib.scripted_kward import kward  # noqa: F401 - fixture
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, finished

ALL = {"KWARD_LOGGING": "1", "KWARD_LOGGING_TOKENS": "yes", "KWARD_LOGGING_PERFORMANCE": "on",
       "KWARD_LOGGING_TOOLS": "true", "KWARD_LOGGING_ERRORS": "1"}
KEY = "sk-or-v1-telemetry0123456789abcdef"
TRACE_IDS = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")


def records(home):
    logs = home / ".kward" / "logs"
    return [json.loads(line) for path in sorted(logs.glob("*.jsonl")) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_off_by_default_nothing_is_written_and_stats_say_why(kward, isolated_home):
    k = kward([[tool("list_directory", {"path": "."})], [text("done")]])
    caps = k.request("initialize")["capabilities"]["logging"]
    assert caps["supported"] is True and caps["enabledCategories"] == []
    assert caps["directory"] == str(isolated_home / ".kward" / "logs") and caps["rotation"]["maxBytes"] == 10485760
    _, evs = k.run(k.session()["id"])
    check_turn_events(evs, "completed")
    assert list((isolated_home / ".kward" / "logs").glob("*.jsonl")) == []
    for method in ("logging/stats", "logging/tokenCsv"):
        err = k.error(method, {})
        assert (err.code, err.reason) == (-32602, "logging_disabled")


def test_a_turn_writes_its_records_with_the_trace_ids(kward, isolated_home):
    k = kward([[tool("read_file", {"path": "missing.txt"}), tool("list_directory", {"path": "."})],
               [text("done")]], env=ALL)
    assert k.request("initialize")["capabilities"]["logging"]["enabledCategories"] == \
        ["tokens", "performance", "tools", "errors"]
    session = k.session()
    turn = k.client.request("turns/start", {"sessionId": session["id"], "input": "go"},
                            trace={"traceparent": TRACEPARENT})
    check_turn_events(k.finish(turn["id"]), "completed")
    found = records(isolated_home)
    assert [(r["category"], r["event"]) for r in found] == [
        ("performance", "model_request"), ("tokens", "model_usage"),
        ("tools", "tool_call"), ("performance", "tool_call"), ("errors", "tool_error"),
        ("tools", "tool_call"), ("performance", "tool_call"),
        ("performance", "model_request"), ("tokens", "model_usage"), ("performance", "turn")]
    assert all((r["trace_id"], r["parent_id"]) == TRACE_IDS for r in found)
    assert [r["tool_name"] for r in found if r["event"] == "tool_call"][::2] == ["read_file", "list_directory"]
    assert found[1]["provider"] == "Scripted" and found[1]["usage"]["total_tokens"] > 0
    k.run(session["id"], "again")  # a request without a trace: records without ids
    assert all("trace_id" not in r for r in records(isolated_home)[len(found):])
    stats = k.request("logging/stats", {"range": "1 day"})
    assert stats["recordCount"] == len(records(isolated_home)) > len(found)
    assert stats["tools"] == {"calls": 2, "resultBytes": stats["tools"]["resultBytes"],
                              "byName": {"list_directory": 1, "read_file": 1}, "byStatus": {"completed": 1, "error": 1}}
    assert stats["errors"]["byEvent"]["tool_error"] == 1 and stats["enabledCategories"][0] == "tokens"
    csv = k.request("logging/tokenCsv", {"range": "1 day", "bucket": "hour"})
    assert csv["bucket"] == "hour" and csv["csv"].splitlines()[0].startswith("bucket_start,bucket_end,provider")
    assert len(csv["csv"].splitlines()) == 2 and ",Scripted," in csv["csv"]
    for params in ({"range": "3 fortnights"}, {"range": 5}, {"range": "0 days"}):
        err = k.error("logging/stats", params)
        assert err.code == -32602 and err.error["data"]["param"] == "range"
    err = k.error("logging/stats", {"range": "2 eons"})
    assert "Usage: [N minutes|hours|days|weeks|months|years] (default: 1 week)" in err.error["message"]
    assert k.error("logging/tokenCsv", {"bucket": "fortnight"}).error["data"]["param"] == "bucket"


@pytest.mark.slow
def test_config_switches_categories_and_only_literal_true_counts(kward, isolated_home):
    (isolated_home / ".kward").mkdir()
    config = isolated_home / ".kward" / "config.json"
    config.write_text(json.dumps({"logging": {"enabled": True, "tokens": True, "tools": "yes"}}))
    k = kward([[text("ok")]], loop=True)
    session = k.session()
    k.run(session["id"])
    assert {r["category"] for r in records(isolated_home)} == {"tokens"}
    assert k.request("logging/tokenCsv", {})["csv"].count("\n") == 2
    config.write_text(json.dumps({"logging": {"enabled": True, "tokens": True}}))
    k2 = kward([[text("ok")]], env={"KWARD_LOGGING": "off"})  # a variable wins over config
    k2.run(k2.session()["id"])
    assert len(records(isolated_home)) == 1


@pytest.mark.slow
def test_retries_and_failures_against_a_provider(isolated_home):
    with FakeOpenRouter() as fake, start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url,
                                               OPENROUTER_API_KEY=KEY, **ALL) as c:
        session = create_session(c, isolated_home)
        fake.script("chat", fo.http_error(503, "try later"), fo.text(["ok"]))
        assert finished(run_turn(c, session["id"], "hi"))["status"] == "completed"
        fake.script("chat", *[fo.http_error(500, f"exploded {KEY}")] * 3)
        assert finished(run_turn(c, session["id"], "again"))["status"] == "failed"
    found = records(isolated_home)
    assert [(r["category"], r["event"], r.get("status")) for r in found] == [
        ("performance", "model_request", "failed"), ("performance", "model_retry", None),
        ("errors", "model_retry", None), ("performance", "model_request", "completed"),
        ("tokens", "model_usage", "completed"), ("performance", "turn", "completed"),
        *[("performance", "model_request", "failed"), ("performance", "model_retry", None),
          ("errors", "model_retry", None)] * 2,
        ("performance", "model_request", "failed"), ("errors", "model_request_error", "failed"),
        ("performance", "turn", "failed"), ("errors", "turn_error", "failed")]
    assert found[4]["usage"]["input_tokens"] == 194 and found[4]["provider"] == "OpenRouter"
    final = found[-3]
    assert (final["error_class"], final["provider"], final["error_code"]) == ("ProviderError", "OpenRouter", 500)
    assert KEY not in json.dumps(found)


@pytest.mark.slow
def test_kward_stats_tokens(cli, isolated_home):
    cli.script([[text("ok")]], loop=True)
    off = cli.run("stats", "tokens")
    assert off.returncode == 1 and b"Token telemetry logging is disabled" in off.stderr and off.stdout == b""
    assert cli.run("hello", env=ALL).returncode == 0  # a one-shot turn records its usage too
    out = cli.run("stats", "tokens", env=ALL)
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.decode().splitlines()
    assert header == ("bucket_start,bucket_end,provider,model,events,input_tokens,output_tokens,"
                      "cache_read_tokens,cache_write_tokens,total_tokens")
    assert row.split(",")[2:5] == ["Scripted", "scripted", "1"]
    by_day = cli.run("stats", "tokens", "2", "days", "--bucket=day", "--output", "usage.csv", env=ALL)
    assert (by_day.returncode, by_day.stdout) == (0, b"")
    assert (cli.ws / "usage.csv").read_text().splitlines()[1].split(",")[0].endswith("T00:00:00Z")
    for args in (["stats"], ["stats", "frobs"], ["stats", "tokens", "3", "eons"], ["stats", "tokens", "--bucket"],
                 ["stats", "tokens", "--bucket", "fortnight"], ["stats", "tokens", "--frob"]):
        proc = cli.run(*args, env=ALL)
        assert proc.returncode == 1 and proc.stdout == b"" and proc.stderr, args
    assert b"Usage: [N minutes" in cli.run("stats", "tokens", "3", "eons", env=ALL).stderr
