"""Progress reports through `LiveOutput.progress` (an MCP tool's notifications/progress)
and the metadata of MCP tool names (`kward.toolcalls.tool_metadata`, the RPC wire form)."""

from __future__ import annotations

import pytest

from kward import toolcalls
from kward.agent.loop import live_output
from kward.model import ToolCall
from kward.rpc.wire.events import tool_metadata, tool_update
from kward.tools.live import INTERVAL, PROGRESS_CHARS, LiveOutput, Update


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_report_goes_at_once_then_waits_for_the_rate_and_the_latest_wins():
    clock, sent = Clock(), []
    live = LiveOutput(sent.append, clock=clock)
    live.progress("step 1", 1, 3)
    assert sent == [Update("stdout", "step 1", "step 1", 0, 1.0, 3.0)]
    live.progress("step 2", 2, 3)  # within INTERVAL: kept
    live.progress("step 3", 3, 3)  # replaces it
    assert len(sent) == 1
    assert live.due_in() == pytest.approx(INTERVAL)
    clock.now += INTERVAL
    live.poll()
    assert [u.delta for u in sent] == ["step 1", "step 3"] and sent[-1].progress == 3.0
    live.close()
    live.progress("late", 4, 4)
    assert len(sent) == 2  # nothing after close


def test_a_kept_report_is_sent_by_close_and_flush_false_never_publishes():
    clock, sent = Clock(), []
    live = LiveOutput(sent.append, clock=clock)
    live.progress(None, 0.5, None, flush=False)
    assert sent == []
    live.close()
    assert sent == [Update("stdout", "", "", 0, 0.5, None)]


def test_a_report_is_scrubbed_and_cut():
    sent: list[Update] = []
    live = LiveOutput(sent.append, scrub=lambda t: t.replace("sk-secret", "[redacted]"))
    live.progress("key sk-secret " + "x" * (2 * PROGRESS_CHARS), 1, None)
    assert sent[0].delta.startswith("key [redacted] ") and "sk-secret" not in sent[0].delta
    assert len(sent[0].delta) <= PROGRESS_CHARS


def test_the_wire_update_carries_the_figures_only_when_there_are_some():
    events = []
    call = ToolCall("c1", "mcp__files__slow", "{}")
    live = live_output(call, lambda kind, payload: events.append(payload), None)
    live.feed_text("stdout", "plain line\n")
    live.close()
    live = live_output(call, lambda kind, payload: events.append(payload), None)
    live.progress("half", 5, 10)
    live.close()
    plain, report = tool_update(events[0]), tool_update(events[1])
    assert "progress" not in plain and "total" not in plain
    assert report["delta"] == "half" and report["progress"] == 5.0 and report["total"] == 10.0


def test_mcp_tool_metadata_is_remembered_or_read_from_the_name():
    assert tool_metadata("read_file") == {"source": "builtin", "displayName": "Read"}
    assert tool_metadata("mcp__gh__search_issues") == {"source": "mcp", "displayName": "search_issues",
                                                       "serverName": "gh", "remoteName": "search_issues"}
    toolcalls.remember_mcp_tool("mcp__gh__x_1a2b", "gh", "x.y", "Search issues")
    assert tool_metadata("mcp__gh__x_1a2b") == {"source": "mcp", "displayName": "Search issues",
                                                "serverName": "gh", "remoteName": "x.y"}
    assert tool_metadata("mcp__broken")["source"] == "builtin"  # not of the form: kward answers it
