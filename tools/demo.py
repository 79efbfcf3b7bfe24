#!/usr/bin/env python3
"""A small example client: start `kward rpc`, run one turn, print its events as they stream.

    python3 tools/demo.py                          # offline Scripted demo in the current directory
    python3 tools/demo.py --workspace ~/src/app "What does this project do?"
    python3 tools/demo.py --provider codex "Fix the failing test"   # a real model, if logged in

With the default `--provider scripted` no account and no network are needed: the demo
"model" lists the workspace, reads its README and summarizes it with the real tools. The
code below is also a minimal reference for UI authors: framing, requests, notifications.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading

DIM, BOLD, CYAN, RESET = "\033[2m", "\033[1m", "\033[36m", "\033[0m"


class Client:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
        self.next_id = 0
        self.responses: dict[int, dict] = {}
        self.cond = threading.Condition()
        self.on_notification = lambda msg: None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self.cond:
                        self.cond.notify_all()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            msg = json.loads(out.read(length))
            if "id" in msg and "method" not in msg:
                with self.cond:
                    self.responses[msg["id"]] = msg
                    self.cond.notify_all()
            else:
                self.on_notification(msg)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"demo: kward rpc exited with status {self.proc.returncode} before the turn finished")

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        rid = self.next_id
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        with self.cond:
            while rid not in self.responses:
                self.check_alive()
                self.cond.wait(1)
            msg = self.responses.pop(rid)
        if "error" in msg:
            raise SystemExit(f"{method} failed: {msg['error']['message']}")
        return msg["result"]


class Printer:
    """Prints a turn's events: reasoning distinct from the answer (dim on a terminal,
    `reasoning:` lines otherwise), one line per tool call and result."""

    def __init__(self, color: bool):
        self.color = color
        self.mode = None  # "reasoning" | "answer" | None: what the current line holds

    def c(self, code: str) -> str:
        return code if self.color else ""

    def _switch(self, mode: str | None) -> None:
        if self.mode != mode:
            if self.mode is not None:
                sys.stdout.write("\n")
            if mode == "reasoning" and not self.color:
                sys.stdout.write("reasoning: ")
            elif mode == "answer" and not self.color:
                sys.stdout.write("answer: ")
            self.mode = mode

    def show(self, event: dict) -> None:
        kind, payload, c = event["type"], event["payload"], self.c
        if kind == "reasoningDelta":
            self._switch("reasoning")
            sys.stdout.write(c(DIM) + payload["delta"].replace("\n", " ") + c(RESET))
        elif kind == "assistantDelta":
            self._switch("answer")
            sys.stdout.write(payload["delta"])
        elif kind == "toolCall":
            self._switch(None)
            sys.stdout.write(f"{c(CYAN)}-> {payload['toolName']} {json.dumps(payload['args'])}{c(RESET)}\n")
        elif kind == "toolResult":
            first = payload["result"]["content"].splitlines()[:3]
            status = "error" if payload["result"]["isError"] else "ok"
            sys.stdout.write(f"{c(DIM)}   {status}: {' | '.join(first)[:120]}{c(RESET)}\n")
        elif kind == "modelRetry":
            self._switch(None)
            sys.stdout.write(f"{c(DIM)}(retrying in {payload['delaySeconds']} s: {payload['error']}){c(RESET)}\n")
        elif kind == "error":
            self._switch(None)
            sys.stdout.write(f"{c(BOLD)}error: {payload['message']}{c(RESET)}\n")
        elif kind in ("turnStarted", "turnFinished"):
            self._switch(None)
            sys.stdout.write(f"{c(BOLD)}[{kind}: {payload['status']}]{c(RESET)}\n")
        sys.stdout.flush()


def kward_command(given: str | None) -> tuple[list[str], dict[str, str]]:
    """The `kward rpc` to start: `--kward`, else the installed console script, else this
    checkout's package (`python3 -m kward`, with the checkout on PYTHONPATH)."""
    env = dict(os.environ)
    if given:
        return shlex.split(given) + ["rpc"], env
    scripts = sysconfig.get_paths()["scripts"]
    found = shutil.which("kward", path=os.pathsep.join([scripts, env.get("PATH", "")]))
    if found:
        return [found, "rpc"], env
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout, env.get("PYTHONPATH")]))
    return [sys.executable, "-m", "kward", "rpc"], env


def main() -> int:
    ap = argparse.ArgumentParser(description="Run one kward turn and print its events.")
    ap.add_argument("input", nargs="?", default="What is in this workspace?")
    ap.add_argument("--workspace", default=os.getcwd())
    ap.add_argument("--provider", default="scripted", help="scripted (default, offline), codex, openrouter, ...")
    ap.add_argument("--kward", help="the kward command to start (default: the installed `kward`)")
    args = ap.parse_args()
    argv, env = kward_command(args.kward)
    env["KWARD_PROVIDER"] = args.provider
    # started outside the workspace, so that `python3 -m kward` cannot pick up a checkout's sources
    client = Client(argv, env, tempfile.gettempdir())
    done = threading.Event()
    status = {}
    printer = Printer(sys.stdout.isatty() and "NO_COLOR" not in os.environ)

    def on_notification(msg: dict) -> None:
        if msg.get("method") == "turn/event":
            event = msg["params"]
            printer.show(event)
            if event["type"] == "turnFinished":
                status.update(event["payload"])
                done.set()

    client.on_notification = on_notification
    info = client.request("initialize", {"clientInfo": {"name": "kward-demo", "version": "1"}})
    print(f"{info['serverName']} {info['serverVersion']}, protocol {info['protocolVersion']} ({' '.join(argv)})")
    session = client.request("sessions/create", {"workspaceRoot": os.path.abspath(args.workspace)})
    print(f"session {session['id']} in {session['workspaceRoot']}")
    print(f"session file {session['path']}")
    print(f"> {args.input}")
    client.request("turns/start", {"sessionId": session["id"], "input": args.input})
    while not done.wait(0.5):
        client.check_alive()
    client.request("shutdown")
    client.proc.wait(10)
    return 0 if status.get("status") == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
