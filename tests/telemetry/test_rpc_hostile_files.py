"""Telemetry and the diagnostic log with hostile files in their place, through `kward rpc`:
a FIFO, a symlink (to a file elsewhere, to /dev/zero) or a 300 MB file where a day file or
kward.log should be never hangs logging/stats, a turn, EOF or SIGTERM, and is never
written through; lines a day file should not hold are skipped and counted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lib.rpc_client import kward_env
from lib.scripted_kward import Kward, kward  # noqa: F401 - fixture
from lib.scripts import text, tool, write_script
from lib.turn_events import check_turn_events

ALL = {"KWARD_LOGGING": "1", "KWARD_LOGGING_TOKENS": "1", "KWARD_LOGGING_PERFORMANCE": "1",
       "KWARD_LOGGING_TOOLS": "1", "KWARD_LOGGING_ERRORS": "1"}
HOSTILE = ("fifo", "symlink", "dev_zero", "huge")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def plant(path: Path, kind: str, elsewhere: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        elsewhere.write_text("untouched\n")
        path.symlink_to(elsewhere)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as f:  # sparse: costs no disk
            f.truncate(300 << 20)


def start(home: Path, env: dict[str, str]) -> Kward:
    ws = home / "ws"
    ws.mkdir(exist_ok=True)
    script = write_script(home / "scripts", [[tool("list_directory", {"path": "."})], [text("done")]], loop=True)
    return Kward(home, ws, kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script), **env))


@pytest.mark.parametrize("end", ["eof", "sigterm"])
@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_day_file_and_log_file(isolated_home, kind, end):
    logs = isolated_home / ".kward" / "logs"
    day = logs / f"{_now():%Y-%m-%d}.jsonl"
    plant(day, kind, isolated_home / "elsewhere-day")
    plant(logs / "kward.log", kind, isolated_home / "elsewhere-log")
    k = start(isolated_home, {**ALL, "KWARD_LOG_LEVEL": "DEBUG"})
    try:
        k.request("initialize")
        session = k.session()
        _, events = k.run(session["id"])
        check_turn_events(events, "completed")
        stats = k.request("logging/stats", {"range": "2 days"})
        assert stats["skippedFiles"] == 1 and stats["recordCount"] > 0  # the turn's records went to -1
        assert stats["recordsByEvent"]["turn"] == 1
        csv = k.request("logging/tokenCsv", {"range": "2 days"})
        assert csv["skippedFiles"] == 1 and ",Scripted," in csv["csv"]
        if end == "eof":
            k.close_stdin()
        else:
            k.proc.send_signal(signal.SIGTERM)
        try:
            code = k.proc.wait(2)
        except subprocess.TimeoutExpired:
            pytest.fail(f"kward rpc did not end within 2 s after {end}")
        assert code == 0
        k.wait_exit()
    finally:
        k.release()
    if kind == "symlink":
        assert (isolated_home / "elsewhere-day").read_text() == "untouched\n"
        assert (isolated_home / "elsewhere-log").read_text() == "untouched\n"
    if kind != "huge":  # a big kward.log is a regular file: it is rotated, not refused
        assert k.stderr.count("not logging to") == 1, k.stderr
        assert str(logs / "kward.log") in k.stderr
    assert (logs / f"{day.stem}-1.jsonl").is_file()


def test_a_day_file_over_the_cap_is_counted_not_read(kward, isolated_home):
    logs = isolated_home / ".kward" / "logs"
    logs.mkdir(parents=True, mode=0o700)
    now = _now()
    good = {"timestamp": _stamp(now), "category": "tools", "event": "tool_call", "tool_name": "read_file"}
    (logs / f"{now:%Y-%m-%d}-1.jsonl").write_text(json.dumps(good) + "\n")
    with open(logs / f"{now:%Y-%m-%d}.jsonl", "wb") as f:
        f.write((json.dumps(good) + "\n").encode())
        f.truncate(300 << 20)
    k = kward([[text("ok")]], env=ALL)
    stats = k.request("logging/stats", {"range": "1 day"})
    assert (stats["skippedFiles"], stats["recordCount"], stats["tools"]["byName"]) == (1, 1, {"read_file": 1})


def hostile_lines(now: datetime) -> list[bytes]:
    stamp = _stamp(now)

    def rec(**fields: object) -> str:
        return json.dumps({"timestamp": stamp, **fields})

    lines = [
        '{"timestamp": "%s", "category": "tokens", "event": "model_usage", "usage": {"input_tokens": 1e999}}' % stamp,
        '{"timestamp": "%s", "category": "tokens", "event": "model_usage", "usage": {"input_tokens": %s}}'
        % (stamp, "9" * 5000),
        '{"timestamp": "%s", "category": "tools", "event": "tool_call", "result_bytes": -Infinity}' % stamp,
        '{"timestamp": "%s", "category": "tools", "event": "tool_call", "result_bytes": NaN}' % stamp,
        '{"timestamp": "%s", "category": "tokens", "event": "model_usage", "usage": {"input_tokens": 1e300}}' % stamp,
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' * 50_000 + "1" + "}" * 50_000,
        rec(category=["tools"], event="tool_call"),
        rec(category={"x": 1}, event="tool_call"),
        json.dumps({"timestamp": 5, "category": "tools", "event": "tool_call"}),
        json.dumps({"timestamp": "yesterday-ish", "category": "tools", "event": "tool_call"}),
        json.dumps({"timestamp": "9999-12-31T23:59:59.000-10:00", "category": "tokens", "event": "model_usage"}),
        json.dumps({"timestamp": "0001-01-01T00:00:00+10:00", "category": "tokens", "event": "model_usage"}),
        json.dumps({"timestamp": stamp[:11] + "garbage.....Z", "category": "tokens", "event": "model_usage"}),
        "[1, 2, 3]", '"a string"', "42", "null", "not json at all", '{"unterminated": ',
    ]
    out = [line.encode() for line in lines]
    out.append(b'{"timestamp": "' + stamp.encode() + b'", "category": "tools", "event": "tool_call", '
               b'"tool_name": "\xff\xfe bad utf-8"}')
    out.append(b"x" * (3 << 20))  # a line over the line cap
    return out


def good_lines(now: datetime) -> list[bytes]:
    stamp = _stamp(now)
    lines = [
        {"timestamp": stamp, "category": "tools", "event": "tool_call", "tool_name": "read_file", "status": {"odd": 1},
         "result_bytes": "many"},
        {"timestamp": stamp, "category": "tokens", "event": "model_usage", "provider": "P", "model": "m",
         "usage": {"input_tokens": 7, "output_tokens": [1], "total_tokens": 7}},
        {"timestamp": stamp, "category": "performance", "event": {"nested": True}, "duration_ms": "slow"},
        {"timestamp": stamp, "category": "errors", "event": "tool_error", "error_class": ["x"], "provider": 5},
    ]
    return [json.dumps(line).encode() for line in lines]


def test_bad_lines_are_skipped_and_counted(kward, isolated_home):
    logs = isolated_home / ".kward" / "logs"
    logs.mkdir(parents=True, mode=0o700)
    now = _now()
    bad = hostile_lines(now)
    (logs / f"{now:%Y-%m-%d}.jsonl").write_bytes(b"\n".join(bad + good_lines(now)) + b"\n")
    k = kward([[text("ok")]], env=ALL)
    stats = k.request("logging/stats", {"range": "1 day"})
    # (before 3.11 a 5000-digit integer parses: that line is then a record, its number not summed)
    unusable = len(bad) - (0 if hasattr(sys, "get_int_max_str_digits") else 1)
    assert stats["skippedLines"] == unusable and stats["skippedFiles"] == 0
    assert stats["recordCount"] == 4 + len(bad) - unusable and stats["droppedKeys"] == 0
    assert stats["tools"] == {"calls": 1, "resultBytes": 0, "byName": {"read_file": 1}, "byStatus": {}}
    assert stats["usageStats"] == {"modelUsageEvents": 1, "totals": {"input_tokens": 7, "total_tokens": 7}}
    assert stats["errors"]["byEvent"] == {"tool_error": 1} and stats["errors"]["byProvider"] == {"5": 1}
    csv = k.request("logging/tokenCsv", {"range": "1 day"})
    not_tokens = 2  # (the timestamps of other categories' lines are not looked at)
    assert csv["skippedLines"] == unusable - not_tokens and csv["droppedKeys"] == 0
    assert csv["csv"].splitlines()[1].split(",")[2:] == ["P", "m", "1", "7", "0", "0", "0", "7"]


def test_a_timestamp_of_kwards_length_but_not_its_shape_is_no_record(kward, isolated_home):
    logs = isolated_home / ".kward" / "logs"
    logs.mkdir(parents=True, mode=0o700)
    now = _now()
    yesterday = datetime.fromtimestamp(now.timestamp() - 86400, timezone.utc)
    bogus = f"{yesterday:%Y-%m-%d}Tgarbage......"  # 24 characters, within "2 days" as text
    assert len(bogus) == 24
    lines = [{"timestamp": bogus, "category": "tokens", "event": "model_usage", "provider": "P", "model": "bogus",
              "usage": {"input_tokens": 5}},
             {"timestamp": f"{yesterday:%Y-%m-%d}T99:99:99.999Z", "category": "tokens", "event": "model_usage",
              "provider": "P", "model": "bogus", "usage": {"input_tokens": 3}},
             {"timestamp": _stamp(now), "category": "tokens", "event": "model_usage", "provider": "P", "model": "m",
              "usage": {"input_tokens": 7}}]
    (logs / f"{now:%Y-%m-%d}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    k = kward([[text("ok")]], env=ALL)
    stats = k.request("logging/stats", {"range": "2 days"})
    assert (stats["recordCount"], stats["skippedLines"]) == (1, 2)
    assert stats["usageStats"] == {"modelUsageEvents": 1, "totals": {"input_tokens": 7}}
    csv = k.request("logging/tokenCsv", {"range": "2 days"})
    assert csv["skippedLines"] == 2 and len(csv["csv"].splitlines()) == 2 and ",bogus," not in csv["csv"]


def test_the_maps_of_the_answer_are_capped(kward, isolated_home):
    logs = isolated_home / ".kward" / "logs"
    logs.mkdir(parents=True, mode=0o700)
    now = _now()
    stamp = _stamp(now)
    n = 10_005
    lines = [json.dumps({"timestamp": stamp, "category": "tools", "event": "tool_call", "tool_name": f"t{i}"})
             for i in range(n)]
    lines += [json.dumps({"timestamp": stamp, "category": "tokens", "event": "model_usage", "model": f"m{i}",
                          "usage": {f"u{i}": 1}}) for i in range(n)]
    (logs / f"{now:%Y-%m-%d}.jsonl").write_text("\n".join(lines) + "\n")
    k = kward([[text("ok")]], env=ALL)
    stats = k.request("logging/stats", {"range": "1 day"})
    assert stats["recordCount"] == 2 * n and stats["tools"]["calls"] == n
    assert len(stats["tools"]["byName"]) == 10_000 and len(stats["usageStats"]["totals"]) == 10_000
    assert stats["droppedKeys"] == 2 * (n - 10_000)
    csv = k.request("logging/tokenCsv", {"range": "1 day"})
    assert len(csv["csv"].splitlines()) == 1 + 10_000 and csv["droppedKeys"] == n - 10_000
