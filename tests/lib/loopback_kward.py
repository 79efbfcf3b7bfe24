"""A `kward rpc` whose every provider endpoint is on 127.0.0.1: the end-to-end tests of
the model providers (and of logins, memory, telemetry, ... that need a real provider).

`start_kward(home, **env)` starts `kward rpc` with every provider endpoint pointed at
127.0.0.1 (at a dead port unless a test passes a fake server's base URL), fast retry
delays, and a workspace holding `a.txt`. `run_turn` starts a turn and waits for its
`turnFinished`, returning the turn's events in arrival order (lib/turn_events.py reads
them). Waiting is on conditions with timeouts (`RpcClient.wait`), never on sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .rpc_client import RpcClient, kward_env
from .turn_events import wait_turn

DEAD = "http://127.0.0.1:9"  # the discard port: connection refused, never the internet
FILE_TEXT = "hello file\n"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def workspace(home: Path) -> Path:
    ws = home / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text(FILE_TEXT, encoding="utf-8")
    return ws


def env_for(home: Path, **extra: str) -> dict[str, str]:
    """kward_env plus safe endpoints and fast retries; `extra` wins (None values are dropped)."""
    values = {
        "KWARD_CODEX_BASE_URL": DEAD + "/backend-api/codex",
        "KWARD_OPENROUTER_BASE_URL": DEAD + "/api/v1",
        "KWARD_OPENAI_AUTH_ISSUER": DEAD,
        "KWARD_OAUTH_PORT": "0",  # a login never takes the machine's real callback port
        "KWARD_RETRY_DELAYS": "0.01,0.02",
        **extra,
    }
    env = kward_env(home, **{k: v for k, v in values.items() if v is not None})
    for key in ("OPENAI_MODEL", "OPENROUTER_MODEL", "OPENAI_REASONING_EFFORT", "OPENROUTER_REASONING_EFFORT",
                "KWARD_OPENAI_COMPAT_BASE_URL", "KWARD_SCRIPT"):
        if key not in values:
            env.pop(key, None)
    return env


def start_kward(home: Path, **env: str) -> RpcClient:
    workspace(home)
    return RpcClient(home, env=env_for(home, **env))


def create_session(client: RpcClient, home: Path) -> dict[str, Any]:
    return client.request("sessions/create", {"workspaceRoot": str(home / "ws")})


def start_turn(client: RpcClient, session_id: str, text: str = "hi", **extra: Any) -> dict[str, Any]:
    """turns/start (extra top-level members such as `trace=` go into the request)."""
    return client.request("turns/start", {"sessionId": session_id, "input": text}, **extra)


def run_turn(client: RpcClient, session_id: str, text: str = "hi", timeout: float = 10.0,
             **extra: Any) -> list[dict[str, Any]]:
    """Start a turn (see `start_turn`) and return its events once it finished."""
    turn = start_turn(client, session_id, text, **extra)
    return wait_turn(client, turn["id"], timeout)


def chat_schemas(client: RpcClient) -> list[dict[str, Any]]:
    """The tool schemas kward gives the model, as `tools/list` reports them (chat form;
    without the `metadata` that is for clients only)."""
    return [{k: v for k, v in t.items() if k != "metadata"} for t in client.request("tools/list")["tools"]]


def responses_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flat Responses API form of chat-style tool schemas."""
    return [{"type": "function", "name": s["function"]["name"], "description": s["function"]["description"],
             "parameters": s["function"]["parameters"], "strict": False} for s in schemas]
