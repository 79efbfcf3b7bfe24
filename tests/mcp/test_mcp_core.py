"""The MCP core without kward rpc: config entries, tool names, result mapping, and the
client and manager against the fake server (tests/lib/fake_mcp.py) over both transports."""

from __future__ import annotations

import threading

import pytest

from kward.cancel import CancelToken
from kward.config.settings import resolve_settings
from kward.errors import Canceled
from kward.mcp.client import McpClient, McpError
from kward.mcp.config import ServerConfig, parse_servers, tool_name
from kward.mcp.manager import McpManager
from kward.mcp.results import MAX_IMAGES, tool_result
from lib.fake_mcp import PNG, TOOLS, FakeMcpHttp, read_journal, stdio_command
from lib.waiting import wait_until


def test_parse_servers_reads_both_kinds_and_keeps_bad_entries_with_their_problem():
    servers, problems = parse_servers({
        "local": {"command": "srv", "args": ["-v"], "env": {"A": "1"}, "cwd": "/tmp", "toolTimeoutSeconds": 5},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}, "enabled": False},
        "both": {"command": "a", "url": "http://b"},
        "typo": {"command": "a", "arg": []},
        "wrong": {"url": "ftp://x"},
        "badheader": {"url": "http://x", "headers": {"X": "a\r\nb"}},
    })
    local, remote, both, typo, wrong, badheader = servers
    assert local == ServerConfig("local", ("srv", "-v"), (("A", "1"),), "/tmp", tool_timeout=5.0)
    assert local.transport == "stdio" and remote.transport == "http" and remote.enabled is False
    assert remote.headers == (("Authorization", "Bearer x"),)
    assert "exactly one of command" in both.problem and "unknown key 'arg'" in typo.problem
    assert "http:// or https://" in wrong.problem and "not a usable header" in badheader.problem
    assert len(problems) == 4
    assert parse_servers([]) == ([], ["mcp.servers must be an object of servers by name"])


def test_settings_carry_the_servers_and_web_search():
    settings = resolve_settings({"mcp": {"servers": {"a": {"command": "x"}}},
                                 "web_search": {"enabled": False, "url": "http://127.0.0.1:1/mcp"}}, env={})
    assert [s.name for s in settings.mcp.servers] == ["a"]
    assert settings.mcp.web_search_enabled is False and settings.mcp.web_search_url == "http://127.0.0.1:1/mcp"
    default = resolve_settings({}, env={})
    assert default.mcp.web_search_enabled is True and default.mcp.web_search_url == "https://mcp.exa.ai/mcp"
    assert resolve_settings({}, env={"KWARD_WEB_SEARCH_URL": "http://h/x"}).mcp.web_search_url == "http://h/x"
    assert resolve_settings({"mcp": {"servers": []}}, env={}).warnings  # (not an object: said, and ignored)


def test_tool_names_are_safe_unique_and_at_most_64_characters():
    assert tool_name("fake", "echo") == "mcp__fake__echo"
    odd = tool_name("my server", "do.thing")
    assert odd.startswith("mcp__my_server__do_thing_") and len(odd) <= 64
    assert tool_name("my server", "do.thing") != tool_name("my_server", "do_thing")
    long = tool_name("s" * 60, "t" * 60)
    assert len(long) == 64 and long != tool_name("s" * 60, "t" * 61)
    for name in (odd, long):
        assert all(c.isalnum() or c in "_-" for c in name)


def test_results_map_text_images_resources_and_errors():
    result = tool_result({"content": [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "image", "data": PNG, "mimeType": "image/tiff"},
        {"type": "image", "data": "not base64!", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
        {"type": "resource_link", "uri": "file:///b", "name": "b"},
        {"type": "audio", "data": "", "mimeType": "audio/wav"},
        "junk",
    ]}, "t")
    assert not result.is_error and [i.mime_type for i in result.images] == ["image/png"]
    text = result.content
    for piece in ("hello", "[image 1: image/png]", "image/tiff left out", "not base64", "[resource file:///a.txt]\ninside",
                  "resource link: b file:///b", "audio (audio/wav) left out", "not an object"):
        assert piece in text, piece
    failed = tool_result({"content": [{"type": "text", "text": "bad"}], "isError": True}, "t")
    assert failed.is_error and failed.content == "Error: bad"
    assert tool_result({"content": [], "structuredContent": {"a": 1}}, "t").content == '{\n "a": 1\n}'
    assert tool_result({"content": [{"type": "text", "text": "Error: but fine"}]}, "t").is_error is False
    many = tool_result({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}] * (MAX_IMAGES + 2)}, "t")
    assert len(many.images) == MAX_IMAGES and "at most" in many.content
    assert tool_result("nope", "t").is_error


def _clients(tmp_path):
    servers, _ = parse_servers({"s": stdio_command(tmp_path / "j.jsonl")})
    yield "stdio", servers[0], None
    with FakeMcpHttp() as fake:
        servers, _ = parse_servers({"h": {"url": fake.url}})
        yield "http", servers[0], fake


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_client_calls_reports_progress_times_out_and_cancels(transport, tmp_path):
    for kind, config, fake in _clients(tmp_path):
        if kind != transport:
            continue
        client = McpClient.open(config, client_version="test", timeout=10)
        try:
            assert len(client.list_tools(10)) == len(TOOLS) and client.server_info["name"] == "fake-mcp"
            assert client.call_tool("echo", {"text": "hi"}, timeout=5).content == "echo: hi"
            progress = []
            done = client.call_tool("slow", {"steps": 3, "seconds": 0.01}, timeout=5,
                                    on_progress=lambda *report: progress.append(report))
            assert done.content == "slow done after 3 steps"
            assert progress == [("step 1 of 3", 1, 3), ("step 2 of 3", 2, 3), ("step 3 of 3", 3, 3)]
            timed = client.call_tool("slow", {"steps": 1000, "seconds": 0.05}, timeout=0.3)
            assert timed.is_error and "timed out after 0.3 s" in timed.content
            token = CancelToken()
            timer = threading.Timer(0.2, token.cancel)
            timer.start()
            with pytest.raises(Canceled):
                client.call_tool("slow", {"steps": 1000, "seconds": 0.05}, timeout=10, cancel=token)
            timer.join()
            unknown = client.call_tool("nope", {}, timeout=5)
            assert unknown.is_error and "Unknown tool: nope" in unknown.content
        finally:
            client.close()
        if fake is None:
            seen = read_journal(tmp_path / "j.jsonl")
            assert len([e for e in seen if e["event"] == "cancelled"]) == 2
        else:
            assert len(fake.events("cancelled")) == 2 and fake.events("delete")


def test_a_server_that_cannot_start_is_an_mcp_error(tmp_path):
    config, = parse_servers({"x": {"command": str(tmp_path / "missing")}})[0]
    with pytest.raises(McpError, match="could not start"):
        McpClient.open(config, client_version="test", timeout=5)
    config, = parse_servers({"x": stdio_command(tmp_path / "j", exit_at_start=4)})[0]
    with pytest.raises(McpError, match=r"exited \(status 4\)"):
        McpClient.open(config, client_version="test", timeout=5)


def test_manager_starts_in_the_background_reports_and_retries(tmp_path):
    journal = tmp_path / "m.jsonl"
    servers, _ = parse_servers({"ok": stdio_command(journal), "dead": stdio_command(tmp_path / "d", exit_at_start=2),
                                "off": {"command": "x", "enabled": False}})
    manager = McpManager(servers, client_version="test")
    changes = []
    manager.on_change(lambda: changes.append(1))
    try:
        manager.start()
        wait_until(lambda: {s.name: s.status for s in manager.status()} ==
                   {"ok": "ready", "dead": "failed", "off": "disabled"}, 20, "the servers settled")
        assert len(manager.tools()) == len(TOOLS) and changes
        assert manager.call("mcp__ok__echo", {"text": "m"}).content == "echo: m"
        missing = manager.call("mcp__dead__echo", {"text": "m"})
        assert missing.is_error and "not available" in missing.content and "exited (status 2)" in missing.content
        manager.start(retry=False)  # (a failed server stays failed)
        assert {s.name: s.status for s in manager.status()}["dead"] == "failed"
        crashed = manager.call("mcp__ok__crash", {})
        assert crashed.is_error and "exited" in crashed.content
        wait_until(lambda: manager.status()[0].status == "failed", 10, "the crash reported")
        assert manager.tools() == []
        manager.start()  # retried
        wait_until(lambda: manager.status()[0].status == "ready", 20, "started again")
        assert len([e for e in read_journal(journal) if e["event"] == "started"]) == 2
    finally:
        manager.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("kward-mcp")]


def test_a_server_that_stops_reading_cannot_hold_a_call_past_its_timeout(tmp_path):
    config, = parse_servers({"s": stdio_command(tmp_path / "j.jsonl")})[0]
    client = McpClient.open(config, client_version="test", timeout=10)
    try:
        assert client.call_tool("stop_reading", {}, timeout=5).content == "not reading any more"
        token = CancelToken()
        big = {"text": "x" * (4 << 20)}  # far more than a pipe holds
        timed = client.call_tool("echo", big, timeout=0.5, cancel=token)
        assert timed.is_error and "timed out after 0.5 s" in timed.content
    finally:
        client.close()  # (ends the server that reads no more)
    assert not [t for t in threading.enumerate() if t.name.startswith("kward-mcp-s")]


def test_an_http_session_the_server_ended_is_reported_and_closes_cleanly(tmp_path):
    with FakeMcpHttp() as fake:
        servers, _ = parse_servers({"h": {"url": fake.url}})
        manager = McpManager(servers, client_version="test")
        try:
            manager.start()
            wait_until(lambda: manager.status()[0].status == "ready", 20, "ready")
            fake.expire_sessions()
            result = manager.call("mcp__h__echo", {"text": "x"})
            assert result.is_error
            wait_until(lambda: manager.status()[0].status == "failed", 10, "reported gone")
            assert "ended the session" in manager.status()[0].error
            manager.start()  # (tried again: a new session)
            wait_until(lambda: manager.status()[0].status == "ready", 20, "ready again")
        finally:
            manager.close()
        assert len(fake.events("delete")) >= 1
    assert not [t for t in threading.enumerate() if t.name.startswith("kward-mcp")]
