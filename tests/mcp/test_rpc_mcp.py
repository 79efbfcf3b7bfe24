"""MCP servers over the real `kward rpc` (Scripted provider): the fake MCP server of
tests/lib/fake_mcp.py as a stdio child and over Streamable HTTP on 127.0.0.1.

A turn calling an MCP tool (result, metadata, the session file), tools/list metadata,
mcp/status and the capability, a slow server not delaying initialize or a turn, a server
that exits at start or mid-call (reported, the turn going on, retried next turn),
cancellation and timeouts reaching the server, progress as toolUpdate, images, the
traceparent header, a changed tool list, approval of MCP tools, the server's stderr kept
off kward's, and the server's process ended with kward."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lib.config_files import write_config
from lib.fake_mcp import TOOLS, FakeMcpHttp, read_journal, stdio_command
from lib.scripted_kward import kward  # noqa: F401 (fixture)
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, payload, payloads
from lib.waiting import wait_until

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def configure(home: Path, servers: dict, **more) -> None:
    write_config(home / ".kward", {"mcp": {"servers": servers}, **more})


def status(k) -> dict:
    return {s["name"]: s for s in k.request("mcp/status")["servers"]}


def wait_status(k, name: str, wanted: str, timeout: float = 20.0) -> dict:
    return wait_until(lambda: (s := status(k).get(name)) and s["status"] == wanted and s, timeout,
                      f"MCP server {name} {wanted}")


def ready(kward, home, steps, servers, *, usable=None, **more):  # noqa: F811
    """A kward with these MCP servers, a session, and the `usable` ones (default: every
    one) available."""
    configure(home, servers, **more)
    k = kward(steps)
    session = k.session()
    for name in usable if usable is not None else servers:
        wait_status(k, name, "available")
    return k, session


def test_a_turn_calls_an_mcp_tool_over_stdio(kward, isolated_home, tmp_path):
    journal = tmp_path / "journal.jsonl"
    k, s = ready(kward, isolated_home, [[tool("mcp__fake__echo", {"text": "hi"}, id="m1")], [text("done")]],
                 {"fake": stdio_command(journal)})
    _, events = k.run(s["id"], "echo it", timeout=20)
    check_turn_events(events, "completed")
    call, result = payload(events, "toolCall"), payload(events, "toolResult")
    metadata = {"source": "mcp", "displayName": "Echo", "serverName": "fake", "remoteName": "echo"}
    assert call["metadata"] == metadata and result["metadata"] == metadata
    assert result["content"] == "echo: hi" and result["result"]["isError"] is False
    tool_messages = [m for m in k.messages(s) if m.get("role") == "tool"]
    assert [m["content"] for m in tool_messages] in (["echo: hi"], [[{"type": "text", "text": "echo: hi"}]])
    seen = read_journal(journal)
    calls = [e for e in seen if e.get("method") == "tools/call"]
    assert [c["params"]["name"] for c in calls] == ["echo"] and calls[0]["params"]["arguments"] == {"text": "hi"}
    init = next(e for e in seen if e.get("method") == "initialize")
    assert init["params"]["protocolVersion"] == "2025-06-18"
    assert init["params"]["clientInfo"]["name"] == "kward"
    assert any(e.get("method") == "notifications/initialized" for e in seen)


def test_tools_list_mcp_status_and_the_capability(kward, isolated_home, tmp_path):
    k, _ = ready(kward, isolated_home, None, {
        "fake": stdio_command(tmp_path / "j.jsonl", page_size=2),
        "off": {"command": "/nonexistent", "enabled": False},
        "bad": {"command": "x", "url": "http://127.0.0.1:9/"},
    }, usable=["fake"])
    discovery = k.request("initialize")["capabilities"]["mcp"]["discovery"]
    assert discovery == {"supported": True, "methods": ["tools/list", "mcp/status"], "toolMetadata": True}
    servers = status(k)
    assert list(servers) == ["fake", "off", "bad"]
    assert servers["fake"] == {"name": "fake", "transport": "stdio", "status": "available", "toolCount": len(TOOLS),
                               "error": None, "enabled": True}
    assert servers["off"]["status"] == "unavailable" and servers["off"]["enabled"] is False
    assert "disabled" in servers["off"]["error"]
    assert servers["bad"]["status"] == "unavailable" and "exactly one of command" in servers["bad"]["error"]
    listed = {t["function"]["name"]: t for t in k.request("tools/list")["tools"]}
    echo = listed["mcp__fake__echo"]  # (listed over five pages of two)
    assert echo["metadata"] == {"source": "mcp", "displayName": "Echo", "serverName": "fake", "remoteName": "echo"}
    assert echo["function"]["parameters"]["required"] == ["text"]
    assert echo["function"]["description"] == "Echo the text back."
    assert len([n for n in listed if n.startswith("mcp__fake__")]) == len(TOOLS)
    assert listed["read_file"]["metadata"]["source"] == "builtin"


def test_a_slow_server_delays_neither_initialize_nor_a_turn(kward, isolated_home, tmp_path):
    journal = tmp_path / "slow.jsonl"
    configure(isolated_home, {"slow": stdio_command(journal, init_delay=60)})
    k = kward([[text("answered without it")]])
    began = time.monotonic()
    assert k.request("initialize")["serverName"] == "kward"
    s = k.session()
    wait_until(lambda: any(e.get("method") == "initialize" for e in read_journal(journal)), 20, "the server started")
    assert status(k)["slow"]["status"] == "starting"
    _, events = k.run(s["id"], "go", timeout=20)
    check_turn_events(events, "completed")
    assert time.monotonic() - began < 30  # nothing waited for the server's 60 s
    assert not [t for t in k.request("tools/list")["tools"] if t["function"]["name"].startswith("mcp__")]


def test_a_server_that_exits_is_reported_and_the_turn_goes_on(kward, isolated_home, tmp_path):
    configure(isolated_home, {"dead": stdio_command(tmp_path / "d.jsonl", exit_at_start=3)})
    k = kward([[tool("mcp__dead__echo", {"text": "x"})], [text("carried on")]])
    s = k.session()
    dead = wait_status(k, "dead", "unavailable")
    assert "exited (status 3)" in dead["error"] and dead["toolCount"] == 0
    _, events = k.run(s["id"], "go", timeout=20)
    check_turn_events(events, "completed")
    result = payload(events, "toolResult")
    assert result["result"]["isError"] is True and result["content"].startswith("Unknown tool")  # (not offered)


def test_a_server_dying_mid_call_is_an_error_result_and_it_is_started_again(kward, isolated_home, tmp_path):
    journal = tmp_path / "c.jsonl"
    k, s = ready(kward, isolated_home, [[tool("mcp__fake__crash", {})], [text("it died")],
                                        [tool("mcp__fake__echo", {"text": "again"})], [text("back")]],
                 {"fake": stdio_command(journal)})
    _, events = k.run(s["id"], "crash it", timeout=20)
    check_turn_events(events, "completed")
    result = payload(events, "toolResult")
    assert result["result"]["isError"] is True and "exited (status 3)" in result["content"]
    assert status(k)["fake"]["status"] in ("unavailable", "starting", "available")
    wait_until(lambda: len([e for e in read_journal(journal) if e["event"] == "started"]) == 1 and
               status(k)["fake"]["status"] == "unavailable", 20, "the server reported gone")
    k.request("tools/list")  # (a turn or tools/list starts it again)
    wait_status(k, "fake", "available")
    _, events = k.run(s["id"], "again", timeout=20)
    check_turn_events(events, "completed")
    assert payload(events, "toolResult")["content"] == "echo: again"
    assert len([e for e in read_journal(journal) if e["event"] == "started"]) == 2


def test_cancelling_the_turn_cancels_the_call_at_the_server_and_progress_is_forwarded(kward, isolated_home,
                                                                                     tmp_path):
    journal = tmp_path / "cancel.jsonl"
    k, s = ready(kward, isolated_home, [[tool("mcp__fake__slow", {"steps": 2000, "seconds": 0.05}, id="sl")]],
                 {"fake": stdio_command(journal)})
    turn = k.start(s["id"], "be slow")
    update = k.wait_event(turn["id"], "toolUpdate")["payload"]
    assert update["toolCallId"] == "sl" and update["toolName"] == "mcp__fake__slow"
    assert update["delta"].startswith("step ") and update["total"] == 2000 and update["progress"] >= 1
    assert update["metadata"]["source"] == "mcp"
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"], 20)
    assert payload(events, "turnFinished")["status"] == "canceled"
    seen = wait_until(lambda: [e for e in read_journal(journal) if e["event"] in ("cancelled", "stopped")] and
                      read_journal(journal), 10, "the server told of the cancel")
    call = next(e for e in seen if e.get("method") == "tools/call")
    cancelled = next(e for e in seen if e["event"] == "cancelled")
    assert cancelled["requestId"] == call["id"]
    assert status(k)["fake"]["status"] == "available"  # the server lives on


def test_a_call_past_its_timeout_is_cancelled_at_the_server(kward, isolated_home, tmp_path):
    journal = tmp_path / "t.jsonl"
    k, s = ready(kward, isolated_home, [[tool("mcp__fake__slow", {"steps": 2000, "seconds": 0.05})], [text("ok")]],
                 {"fake": {**stdio_command(journal), "toolTimeoutSeconds": 0.5}})
    _, events = k.run(s["id"], "go", timeout=20)
    check_turn_events(events, "completed")
    result = payload(events, "toolResult")
    assert result["result"]["isError"] is True and "timed out after 0.5 s" in result["content"]
    wait_until(lambda: any(e["event"] == "cancelled" for e in read_journal(journal)), 10, "the cancel")


def test_over_http_images_traceparent_sessions_and_a_changed_tool_list(kward, isolated_home):
    with FakeMcpHttp() as fake:
        k, s = ready(kward, isolated_home, [[tool("mcp__web__image", {}, id="i"), tool("mcp__web__change_tools", {})],
                                            [text("seen")]],
                     {"web": {"url": fake.url, "headers": {"X-Team": "kward-tests"}}})
        assert status(k)["web"]["transport"] == "http"
        turn = k.request("turns/start", {"sessionId": s["id"], "input": "show me"}, trace={"traceparent": TRACEPARENT})
        events = k.finish(turn["id"], 20)
        check_turn_events(events, "completed")
        image = next(p for p in payloads(events, "toolResult") if p["toolCallId"] == "i")
        assert image["result"]["images"][0]["mimeType"] == "image/png" and image["result"]["images"][0]["data"]
        assert "a pixel" in image["content"]
        calls = [e for e in fake.events("request") if e["method"] == "tools/call"]
        assert {c["headers"].get("traceparent") for c in calls} == {TRACEPARENT}
        assert all(c["headers"]["x-team"] == "kward-tests" and c["headers"].get("mcp-session-id") for c in calls)
        assert all(c["headers"].get("mcp-protocol-version") == "2025-06-18" for c in calls)
        # the model got the image with the result; the session file keeps it
        tool_messages = [m for m in k.messages(s) if m.get("role") == "tool"]
        assert any(isinstance(m["content"], list) and any(p.get("type") == "image" for p in m["content"])
                   for m in tool_messages)
        # notifications/tools/list_changed: the new tool is listed
        wait_until(lambda: "mcp__web__added" in {t["function"]["name"] for t in k.request("tools/list")["tools"]},
                   10, "the added tool")
        k.close()
        assert fake.events("delete"), "the session was ended"


def test_approval_asks_for_mcp_tools_unless_they_are_read_only(kward, isolated_home, tmp_path):
    request = "tool/requestApproval"
    configure(isolated_home, {"fake": stdio_command(tmp_path / "a.jsonl")}, security={"approvalMode": "ask"})
    k = kward([[tool("mcp__fake__look", {}, id="l")], [tool("mcp__fake__echo", {"text": "x"}, id="e")],
               [text("done")]])
    k.request("initialize", {"capabilities": {"serverRequests": [request]}})
    s = k.session()
    wait_status(k, "fake", "available")
    turn = k.start(s["id"], "go")
    asked = k.wait_server_request(request)
    assert asked["params"]["toolCallId"] == "e" and asked["params"]["tool"] == "mcp__fake__echo"
    k.reply(asked["id"], {"decision": "approve"})
    events = k.finish(turn["id"], 20)
    check_turn_events(events, "completed")
    assert [p["toolCallId"] for p in payloads(events, "approvalRequested")] == ["e"]
    assert [p["content"] for p in payloads(events, "toolResult")] == ["looked", "echo: x"]


def test_the_servers_stderr_goes_to_the_log_and_its_process_ends_with_kward(kward, isolated_home, tmp_path):
    journal = tmp_path / "e.jsonl"
    k, _ = ready(kward, isolated_home, None, {"noisy": stdio_command(journal, stderr="a line on stderr")})
    started = next(e for e in read_journal(journal) if e["event"] == "started")
    assert started["pgid"] == started["pid"] != os.getpgid(0)  # its own process group
    log = isolated_home / ".kward" / "logs" / "kward.log"
    wait_until(lambda: log.exists() and "a line on stderr" in log.read_text(), 10, "the stderr line in the log")
    assert k.close() == 0  # (the fixture checks kward's own stderr stayed empty)
    wait_until(lambda: not Path(f"/proc/{started['pid']}").exists() or
               Path(f"/proc/{started['pid']}/stat").read_text().split(") ")[1].startswith("Z"),
               10, "the server's process gone")


def test_web_search_asks_the_mcp_endpoint_and_filters(kward, isolated_home):
    with FakeMcpHttp() as fake:
        k = kward([[tool("web_search", {"queries": ["python mcp"], "max_results": 2,
                                        "domain_filter": ["-nothing.example"]}, id="w")], [text("found")]],
                  env={"KWARD_WEB_SEARCH_URL": fake.url})
        s = k.session()
        _, events = k.run(s["id"], "search", timeout=20)
        check_turn_events(events, "completed")
        result = payload(events, "toolResult")
        assert result["result"]["isError"] is False, result["content"]
        assert "## python mcp" in result["content"] and "1. Result 1 for python mcp" in result["content"]
        assert "https://example.com/2/python-mcp" in result["content"]
        assert "3. " not in result["content"]
        searches = [e for e in fake.events("request") if e["method"] == "tools/call"]
        assert searches[0]["params"] == {"name": "web_search_exa", "arguments": {"query": "python mcp", "numResults": 4},
                                         "_meta": searches[0]["params"]["_meta"]}


def test_web_search_that_cannot_reach_its_endpoint_is_a_tool_error(kward, isolated_home):
    # (the tests' environment points KWARD_WEB_SEARCH_URL at a closed loopback port)
    k = kward([[tool("web_search", {"queries": ["anything"]})], [text("no web today")]])
    s = k.session()
    _, events = k.run(s["id"], "search", timeout=30)
    check_turn_events(events, "completed")
    result = payload(events, "toolResult")
    assert result["result"]["isError"] is True and "could not be reached" in result["content"]


def test_web_search_can_be_switched_off(kward, isolated_home):
    configure(isolated_home, {}, web_search={"enabled": False})
    k = kward()
    assert "web_search" not in {t["function"]["name"] for t in k.request("tools/list")["tools"]}
    assert k.request("initialize")["capabilities"]["mcp"]["webSearch"] is False


def test_web_search_sends_the_turns_traceparent_to_its_endpoint(kward, isolated_home):
    with FakeMcpHttp() as fake:
        k = kward([[tool("web_search", {"queries": ["one", "two"]})], [text("found")]],
                  env={"KWARD_WEB_SEARCH_URL": fake.url})
        s = k.session()
        turn = k.request("turns/start", {"sessionId": s["id"], "input": "search"}, trace={"traceparent": TRACEPARENT})
        check_turn_events(k.finish(turn["id"], 20), "completed")
        posts = fake.events("request")
        assert [e["params"]["arguments"]["query"] for e in posts if e["method"] == "tools/call"] == ["one", "two"]
        assert {e["headers"].get("traceparent") for e in posts} == {TRACEPARENT}
        assert len([e for e in posts if e["method"] == "initialize"]) == 1  # (the endpoint's session is kept)
