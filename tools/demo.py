#!/usr/bin/env python3
"""A small example client: start `kward rpc`, run one turn, print its events as they stream.

    python3 tools/demo.py                          # offline Scripted demo in the current directory
    python3 tools/demo.py --workspace ~/src/app "What does this project do?"
    python3 tools/demo.py --provider codex "Fix the failing test"   # a real model, if logged in

With the default `--provider scripted` no account and no network are needed: the demo
"model" lists the workspace, reads its README and summarizes it with the real tools. The
code below is also a minimal reference for UI authors, on `kward.client` (docs/client.md):
requests, a turn's events, a server that dies.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import sysconfig
import tempfile

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, CHECKOUT)  # kward.client from this checkout, whichever kward it starts

from kward.client import Client, ClientClosed, RpcError  # noqa: E402

DIM, BOLD, CYAN, RESET = "\033[2m", "\033[1m", "\033[36m", "\033[0m"


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
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [CHECKOUT, env.get("PYTHONPATH")]))
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
    client = Client.spawn(argv, env=env, cwd=tempfile.gettempdir())
    printer = Printer(sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    status = {}
    method = "initialize"
    try:
        info = client.request(method, {"clientInfo": {"name": "kward-demo", "version": "1"}}, timeout=None)
        print(f"{info['serverName']} {info['serverVersion']}, protocol {info['protocolVersion']} ({' '.join(argv)})")
        method = "sessions/create"
        session = client.request(method, {"workspaceRoot": os.path.abspath(args.workspace)}, timeout=None)
        print(f"session {session['id']} in {session['workspaceRoot']}")
        print(f"session file {session['path']}")
        print(f"> {args.input}")
        method = "turns/start"
        for event in client.turn(session["id"], args.input):
            printer.show(event)
            if event["type"] == "turnFinished":
                status.update(event["payload"])
        client.request("shutdown")
    except RpcError as exc:
        client.close()
        raise SystemExit(f"{method} failed: {exc.message}")
    except ClientClosed:
        raise SystemExit(f"demo: kward rpc exited with status {client.close()} before the turn finished")
    client.close()
    return 0 if status.get("status") == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
