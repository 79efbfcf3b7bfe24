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
import subprocess
import sys
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

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        rid = self.next_id
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        with self.cond:
            while rid not in self.responses:
                if self.proc.poll() is not None:
                    raise SystemExit(f"kward rpc exited with status {self.proc.returncode}")
                self.cond.wait(1)
            msg = self.responses.pop(rid)
        if "error" in msg:
            raise SystemExit(f"{method} failed: {msg['error']['message']}")
        return msg["result"]


def show(event: dict, color: bool) -> None:
    kind, payload = event["type"], event["payload"]
    c = (lambda code: code) if color else (lambda code: "")
    if kind == "reasoningDelta":
        sys.stdout.write(c(DIM) + payload["delta"] + c(RESET))
    elif kind == "assistantDelta":
        sys.stdout.write(payload["delta"])
    elif kind == "toolCall":
        sys.stdout.write(f"\n{c(CYAN)}-> {payload['toolName']} {json.dumps(payload['args'])}{c(RESET)}\n")
    elif kind == "toolResult":
        first = payload["result"]["content"].splitlines()[:3]
        status = "error" if payload["result"]["isError"] else "ok"
        sys.stdout.write(f"{c(DIM)}   {status}: {' | '.join(first)[:120]}{c(RESET)}\n")
    elif kind == "modelRetry":
        sys.stdout.write(f"\n{c(DIM)}(retrying in {payload['delaySeconds']} s: {payload['error']}){c(RESET)}\n")
    elif kind == "error":
        sys.stdout.write(f"\n{c(BOLD)}error: {payload['message']}{c(RESET)}\n")
    elif kind in ("turnStarted", "turnFinished"):
        sys.stdout.write(f"\n{c(BOLD)}[{kind}: {payload['status']}]{c(RESET)}\n")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description="Run one kward turn and print its events.")
    ap.add_argument("input", nargs="?", default="What is in this workspace?")
    ap.add_argument("--workspace", default=os.getcwd())
    ap.add_argument("--provider", default="scripted", help="scripted (default, offline), codex, openrouter, ...")
    args = ap.parse_args()
    env = dict(os.environ, KWARD_PROVIDER=args.provider)
    client = Client([sys.executable, "-m", "kward", "rpc"], env, args.workspace)
    done = threading.Event()
    status = {}

    def on_notification(msg: dict) -> None:
        if msg.get("method") == "turn/event":
            event = msg["params"]
            show(event, sys.stdout.isatty())
            if event["type"] == "turnFinished":
                status.update(event["payload"])
                done.set()

    client.on_notification = on_notification
    info = client.request("initialize", {"clientInfo": {"name": "kward-demo", "version": "1"}})
    print(f"{info['serverName']} {info['serverVersion']}, protocol {info['protocolVersion']}")
    session = client.request("sessions/create", {"workspaceRoot": os.path.abspath(args.workspace)})
    print(f"session {session['id']} in {session['workspaceRoot']}")
    print(f"> {args.input}")
    client.request("turns/start", {"sessionId": session["id"], "input": args.input})
    done.wait()
    client.request("shutdown")
    client.proc.wait(10)
    return 0 if status.get("status") == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
