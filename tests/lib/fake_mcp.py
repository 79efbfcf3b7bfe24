"""A fake MCP server speaking the real protocol (2025-06-18) over both transports.

Stdio: run this file (``python3 fake_mcp.py [options]``, `stdio_command` builds the argv)
and it reads newline-delimited JSON-RPC on stdin and answers on stdout, like a real
server. Streamable HTTP: `FakeMcpHttp(**options)` serves it on 127.0.0.1 (port 0) from the
test process: one endpoint (``/mcp``), POST per message, ``Mcp-Session-Id`` given at
``initialize`` and required afterwards (400 without, 404 for an unknown one), ``tools/call``
answered as an SSE stream (progress and list-changed notifications ride on it), other
requests as JSON, notifications with 202, DELETE ends the session.

Tools (`TOOLS`): ``echo {text}``; ``look`` (annotated read-only); ``image`` (a PNG and a
line of text); ``fail`` (``isError``); ``resource`` (an embedded text resource);
``slow {seconds, steps}`` (a progress report per step; stops when cancelled, answering
nothing, as the spec says); ``crash`` (the server dies mid-call); ``change_tools`` (adds
``added`` and sends ``notifications/tools/list_changed``); ``web_search_exa {query,
numResults}`` (Title:/URL: blocks of fake results). Options: ``init_delay`` (seconds
before answering initialize), ``exit_at_start`` (exit with this status before reading
anything), ``page_size`` (tools/list pages), ``search_fail`` (the search tool errors).

Everything the server sees is journaled (`journal`: one JSON object per line in a file
for stdio, a list for HTTP): ``{"event": "request"|"notification"|"cancelled"|...}``
with the method, params and (HTTP) the lower-cased headers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

PROTOCOL = "2025-06-18"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "title": "Echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "look", "description": "Look without touching.", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "image", "description": "Return a tiny PNG.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "resource", "description": "An embedded resource.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "slow", "description": "Report progress, slowly.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}, "steps": {"type": "integer"}}}},
    {"name": "crash", "description": "Die mid-call.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "change_tools", "description": "Add a tool.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "stop_reading", "description": "Stop reading stdin (stdio).", "inputSchema": {"type": "object"}},
    {"name": "web_search_exa", "description": "Search the web.",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "numResults": {"type": "integer"}},
                     "required": ["query"]}},
]
ADDED = {"name": "added", "description": "Added later.", "inputSchema": {"type": "object", "properties": {}}}

Send = Callable[[dict[str, Any]], None]


class FakeMcp:
    """The protocol core both transports share. `handle(message, send)` answers one
    message; `send` carries what the server says (the answer last). Thread-safe."""

    def __init__(self, *, init_delay: float = 0.0, page_size: int | None = None, search_fail: bool = False,
                 journal: Callable[[dict[str, Any]], None] | None = None, crash: Callable[[], None] | None = None,
                 tools: list[dict[str, Any]] | None = None):
        self.init_delay = init_delay
        self.page_size = page_size
        self.search_fail = search_fail
        self.tools = list(tools if tools is not None else TOOLS)
        self._journal = journal or (lambda event: None)
        self._crash = crash or (lambda: os._exit(3))
        self._lock = threading.Lock()
        self._cancelled: dict[Any, threading.Event] = {}
        self.initialized = False  # notifications/initialized came (requests before it are refused, as the SDK does)
        self.reading = threading.Event()  # cleared by stop_reading: the stdio loop reads no more
        self.reading.set()

    def log(self, **event: Any) -> None:
        self._journal(event)

    def cancel_event(self, request_id: Any) -> threading.Event:
        with self._lock:
            return self._cancelled.setdefault(request_id, threading.Event())

    def handle(self, message: dict[str, Any], send: Send, headers: dict[str, str] | None = None) -> None:
        method = message.get("method")
        extra = {"headers": headers} if headers is not None else {}
        if method is None:
            self.log(event="response", message=message, **extra)
            return
        if "id" not in message:
            self.log(event="notification", method=method, params=message.get("params"), **extra)
            if method == "notifications/initialized":
                self.initialized = True
            if method == "notifications/cancelled":
                request_id = (message.get("params") or {}).get("requestId")
                self.log(event="cancelled", requestId=request_id, reason=(message.get("params") or {}).get("reason"))
                self.cancel_event(request_id).set()
            return
        self.log(event="request", method=method, params=message.get("params"), id=message["id"], **extra)
        try:
            result = self._request(method, message.get("params") or {}, message["id"], send)
        except _NoAnswer:
            return
        except _Failure as exc:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": str(exc)}})
            return
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _request(self, method: str, params: dict[str, Any], request_id: Any, send: Send) -> dict[str, Any]:
        if method == "initialize":
            if self.init_delay:
                time.sleep(self.init_delay)  # (the fake is slow on purpose)
            return {"protocolVersion": PROTOCOL, "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "fake-mcp", "version": "1.0"}}
        if method == "ping":
            return {}
        if not self.initialized:
            raise _Failure(-32602, "Received request before initialization was complete")
        if method == "tools/list":
            with self._lock:
                tools = list(self.tools)
            start = int(params.get("cursor") or 0)
            size = self.page_size or len(tools) or 1
            page = tools[start:start + size]
            result: dict[str, Any] = {"tools": page}
            if start + size < len(tools):
                result["nextCursor"] = str(start + size)
            return result
        if method == "tools/call":
            return self._call(params, request_id, send)
        raise _Failure(-32601, f"Method not found: {method}")

    def _call(self, params: dict[str, Any], request_id: Any, send: Send) -> dict[str, Any]:
        name = params.get("name")
        args = params.get("arguments") or {}
        token = (params.get("_meta") or {}).get("progressToken")
        if name == "echo":
            return {"content": [{"type": "text", "text": f"echo: {args.get('text')}"}]}
        if name == "look":
            return {"content": [{"type": "text", "text": "looked"}]}
        if name == "added":
            return {"content": [{"type": "text", "text": "the added tool ran"}]}
        if name == "image":
            return {"content": [{"type": "text", "text": "a pixel"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]}
        if name == "fail":
            return {"content": [{"type": "text", "text": "it failed on purpose"}], "isError": True}
        if name == "resource":
            return {"content": [{"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain",
                                                                  "text": "the notes"}}]}
        if name == "slow":
            steps = int(args.get("steps", 3))
            pause = float(args.get("seconds", 0.05))
            cancelled = self.cancel_event(request_id)
            for step in range(1, steps + 1):
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": step, "total": steps,
                                     "message": f"step {step} of {steps}"}})
                if cancelled.wait(pause):
                    self.log(event="stopped", id=request_id)
                    raise _NoAnswer()
            return {"content": [{"type": "text", "text": f"slow done after {steps} steps"}]}
        if name == "crash":
            self.log(event="crashing")
            self._crash()
            raise _NoAnswer()
        if name == "stop_reading":
            self.reading.clear()
            return {"content": [{"type": "text", "text": "not reading any more"}]}
        if name == "change_tools":
            with self._lock:
                if ADDED not in self.tools:
                    self.tools.append(ADDED)
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return {"content": [{"type": "text", "text": "a tool was added"}]}
        if name == "web_search_exa":
            if self.search_fail:
                return {"content": [{"type": "text", "text": "search backend down"}], "isError": True}
            query = str(args.get("query"))
            count = int(args.get("numResults", 5))
            blocks = [f"Title: Result {i} for {query}\nURL: https://example.com/{i}/{query.replace(' ', '-')}\n"
                      f"Published Date: 2026-11-0{i % 9 + 1}\nText: Some text about {query} number {i}."
                      for i in range(1, count + 1)]
            return {"content": [{"type": "text", "text": "\n\n".join(blocks)}]}
        raise _Failure(-32602, f"Unknown tool: {name}")


class _NoAnswer(Exception):
    pass


class _Failure(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


# --- stdio ------------------------------------------------------------------------------

def stdio_command(journal: Path, **options: Any) -> dict[str, Any]:
    """An `mcp.servers` entry running this file as a stdio server journaling to `journal`."""
    args = [str(Path(__file__).resolve()), "--journal", str(journal)]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return {"command": sys.executable, "args": args}


def read_journal(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _serve_stdio(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--journal")
    parser.add_argument("--init-delay", type=float, default=0.0)
    parser.add_argument("--exit-at-start", type=int)
    parser.add_argument("--page-size", type=int)
    parser.add_argument("--search-fail", default="")
    parser.add_argument("--stderr", default="")
    opts = parser.parse_args(argv)
    journal_lock = threading.Lock()
    out_lock = threading.Lock()

    def journal(event: dict[str, Any]) -> None:
        if opts.journal:
            with journal_lock, open(opts.journal, "a") as f:
                f.write(json.dumps(event) + "\n")

    journal({"event": "started", "pid": os.getpid(), "pgid": os.getpgid(0)})
    if opts.stderr:
        sys.stderr.write(opts.stderr + "\n")
        sys.stderr.flush()
    if opts.exit_at_start is not None:
        return opts.exit_at_start
    out = sys.stdout.buffer

    def send(message: dict[str, Any]) -> None:
        with out_lock:
            out.write(json.dumps(message).encode() + b"\n")
            out.flush()

    server = FakeMcp(init_delay=opts.init_delay, page_size=opts.page_size, search_fail=bool(opts.search_fail),
                     journal=journal)
    threads = []
    for line in sys.stdin.buffer:
        server.reading.wait()  # (stop_reading: blocks for good, the pipe fills up)
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("method") == "tools/call":  # calls run concurrently (cancellation reaches them)
            thread = threading.Thread(target=server.handle, args=(message, send), daemon=True)
            threads.append(thread)
            thread.start()
        else:
            server.handle(message, send)
    journal({"event": "stdin closed"})
    return 0


# --- Streamable HTTP ----------------------------------------------------------------------

class FakeMcpHttp:
    """The fake on 127.0.0.1 over Streamable HTTP (a context manager). `url` is its
    endpoint; `journal` what it saw; `crash()` stops it answering (the socket closes)."""

    def __init__(self, **options: Any):
        self.journal: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.sessions: set[str] = set()
        self.core = FakeMcp(journal=self._record, crash=self.crash, **options)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_DELETE(self) -> None:
                session = self.headers.get("Mcp-Session-Id")
                fake._record({"event": "delete", "session": session})
                with fake._lock:
                    fake.sessions.discard(session or "")
                self._plain(200 if session else 400)

            def do_GET(self) -> None:
                self._plain(405)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                message = json.loads(self.rfile.read(length))
                headers = {k.lower(): v for k, v in self.headers.items()}
                session = headers.get("mcp-session-id")
                if message.get("method") != "initialize":
                    if session is None:
                        return self._plain(400)
                    with fake._lock:
                        known = session in fake.sessions
                    if not known:
                        return self._plain(404)
                if "id" not in message or "method" not in message:
                    fake.core.handle(message, lambda m: None, headers)
                    return self._plain(202)
                if message["method"] == "tools/call":
                    return self._stream(message, headers)
                answers: list[dict[str, Any]] = []
                fake.core.handle(message, answers.append, headers)
                body = json.dumps(answers[-1]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if message["method"] == "initialize":
                    new = uuid.uuid4().hex
                    with fake._lock:
                        fake.sessions.add(new)
                    self.send_header("Mcp-Session-Id", new)
                self.end_headers()
                self.wfile.write(body)

            def _stream(self, message: dict[str, Any], headers: dict[str, str]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def send(answer: dict[str, Any]) -> None:
                    data = f"event: message\ndata: {json.dumps(answer)}\n\n".encode()
                    try:
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    except OSError:  # the client went away (a cancelled call)
                        pass

                fake.core.handle(message, send, headers)
                try:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass
                self.close_connection = True

            def _plain(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def _record(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.journal.append(event)

    def events(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.journal if e.get("event") == kind]

    def expire_sessions(self) -> None:
        """Forget every session: the next POST that names one gets 404."""
        with self._lock:
            self.sessions.clear()

    def crash(self) -> None:
        """Stop listening (connections are refused from now on)."""
        threading.Thread(target=self._server.shutdown, daemon=True).start()
        self._server.socket.close()

    def __enter__(self) -> FakeMcpHttp:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


if __name__ == "__main__":
    sys.exit(_serve_stdio(sys.argv[1:]))
