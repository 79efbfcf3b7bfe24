"""Session files written by real turns, and what kward makes of them: the fixtures of
tests/sessions/test_session_fixtures.py (tests/data/sessions/).

`generate(root)` runs real turns through `kward rpc` (the Scripted provider, the fake
Codex and OpenRouter backends) covering every record kind a session file holds: user
text, a user message with an image attachment, a prompt template's `display_content`, a
plugin command's turn, steered input, assistant messages with reasoning, tool calls,
usage, Codex `reasoning_items` and OpenRouter `reasoning_details`, interrupted partial
answers (canceled, and failed with `errorMessage`), tool results (errors among them),
`tool_execution_end`, `session_info` renames, `memory_state`, and a compaction record
written by hand as the original writes them. It returns, per session, the normalized
records and the turn events (and what a plugin observer saw) the turns produced.

`observe(fixtures, root)` loads session files with kward and returns what it shows of
each: the transcript, the fork entries, the Markdown export, the stats, the messages a
clone re-appends, and the next model request body for the fake Codex and OpenRouter.

Run ``python3 -m tests.lib.session_fixtures`` from the repository root to write the
files again (only when the format really changes: the point of the files is that they
were written by an earlier kward).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, "", "tests.lib"):  # run as a script: make `lib` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib import paths
from lib.config_files import write_config
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import env_for
from lib.resources_helpers import write_plugin, write_prompt
from lib.rpc_client import RpcClient
from lib.scripts import delay, model_error, reasoning, step, text, tool, usage, wait_for_steer, write_script
from lib.session_records import parse_records
from lib.turn_events import wait_event, wait_turn

DATA = paths.DATA / "sessions"
NAMES = ("scripted", "slash", "codex", "openrouter", "compacted", "variants")
WS = "/fixture/ws"  # the workspace path as the committed files show it
HOME = "/fixture/home"
TOKEN = make_jwt("acct_fixture")
OPENROUTER_KEY = "sk-or-v1-fixture-key-0123456789"
#: A 1x1 PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
NOTES = "alpha line\nbeta line\n"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME_KEYS = {"timestamp", "createdAt", "created_at", "updated_at", "last_seen_at", "startedAt", "finishedAt"}


# --- normalization ---------------------------------------------------------------------

def _paths(root: Path) -> list[tuple[str, str]]:
    ws, home = root / "ws", root / "home"
    pairs = [(str(ws), WS), (os.path.realpath(ws), WS), (str(home), HOME), (os.path.realpath(home), HOME)]
    return sorted(set(pairs), key=lambda p: -len(p[0]))


def normalize(value: Any, root: Path) -> Any:
    """`value` with times, uuids and the temp paths under `root` replaced by placeholders."""
    pairs = _paths(root)

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            if key in _TIME_KEYS:
                return "<time>"
            for real, shown in pairs:
                v = v.replace(real, shown)
            return _UUID.sub("<uuid>", v)
        return v

    return walk(value)


def file_text(path: Path, root: Path) -> str:
    """A session file as committed: the temp paths replaced, times and ids kept."""
    text = path.read_text(encoding="utf-8")
    for real, shown in _paths(root):
        text = text.replace(json.dumps(real)[1:-1], shown)
    return text


# --- one kward process -------------------------------------------------------------------

def _kward(root: Path, **env: str) -> RpcClient:
    home = root / "home"
    return RpcClient(home, cwd=root / "ws", env=env_for(home, KWARD_LOG_LEVEL="ERROR", **env))


def _start(client: RpcClient, session_id: str, text: str, **params: Any) -> dict[str, Any]:
    return client.request("turns/start", {"sessionId": session_id, "input": text, **params})


class Run:
    """The turns of one fixture session: its events, turn payloads and results."""

    def __init__(self, client: RpcClient):
        self.client = client
        self.turns: list[dict[str, Any]] = []  # {start, events}
        self.results: dict[str, Any] = {}

    def turn(self, session_id: str, text: str, **params: Any) -> dict[str, Any]:
        start = _start(self.client, session_id, text, **params)
        events = wait_turn(self.client, start["id"], 20)
        self.turns.append({"start": start, "events": [{"type": e["type"], "payload": e["payload"]} for e in events]})
        return start


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "notes.txt").write_text(NOTES, encoding="utf-8")
    (ws / "src").mkdir(exist_ok=True)
    (ws / "src" / "main.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "home" / ".kward").mkdir(parents=True, exist_ok=True)
    return ws


OBSERVER = '''
    import json

    def register(kward):
        @kward.on_transcript_event
        def seen(event, ctx):
            with open("{out}", "a", encoding="utf-8") as f:
                f.write(json.dumps(event) + "\\n")
'''

HELLO = '''
    import json

    def register(kward):
        @kward.command("hello", description="Greets")
        def hello(args, ctx):
            ctx.say("Hello, " + args + "!")
            return json.dumps([[m["role"], m.get("content")] for m in ctx.transcript])
'''


def _scripted(root: Path) -> tuple[Path, Run]:
    """Tools (list, read, a missing file, edit, write), usage with cost, memory, renames,
    an image attachment, a failed partial answer, steered input and a canceled one."""
    config = root / "home" / ".kward"
    write_config(config, {"memory": {"enabled": True}})
    write_plugin(config, "observer", OBSERVER, out=root / "observed.jsonl")
    steps = [
        step(reasoning("The notes first."), text("Looking."), tool("list_directory", id="call_list", path="."),
             tool("read_file", id="call_read", path="notes.txt"), usage=usage(100, 10, reasoning_tokens=3)),
        step(tool("read_file", id="call_missing", path="missing.txt"),
             tool("edit_file", id="call_edit", path="notes.txt",
                  edits=[{"old_text": "alpha line", "new_text": "ALPHA line"}]),
             tool("write_file", id="call_write", path="new.txt", content="fresh\n"), usage=usage(200, 20, cost=0.01)),
        step(text("Edited "), text("the notes."),
             usage=usage(300, 5, cache_read_tokens=50, cache_write_tokens=7, total_tokens=305, cost=0.02)),
        step(text("A tiny picture."), usage=usage(400, 4)),
        step(text("Partial ans"), text("wer"), model_error("upstream broke", kind="server", status=500)),
        step(text("Working"), wait_for_steer(30), usage=usage(500, 3)),
        step(text("Steered answer."), usage=usage(600, 3)),
        step(text("Half"), delay(30)),
    ]
    with _kward(root, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(write_script(root, steps))) as client:
        run = Run(client)
        session = client.request("sessions/create", {"workspaceRoot": str(root / "ws")})
        sid = session["id"]
        run.turn(sid, "Look at the notes. I prefer tabs over spaces.")
        run.results["summarize"] = client.request("memory/summarize", {"sessionId": sid})
        client.request("sessions/rename", {"sessionId": sid, "name": ""})
        client.request("sessions/rename", {"sessionId": sid, "name": "Fixture session"})
        run.turn(sid, "What is in this picture?",
                 attachments=[{"type": "image", "data": PNG, "mimeType": "image/png", "name": "dot.png"}])
        run.turn(sid, "Tell me more")
        start = _start(client, sid, "Go on")
        wait_event(client, start["id"], "assistantDelta", 20)  # "Working" is streaming
        steered = _start(client, sid, "Also this", streamingBehavior="steer",
                         attachments=[{"type": "image", "data": PNG, "mimeType": "image/png"}])
        events = wait_turn(client, start["id"], 20)
        run.turns.append({"start": start, "steered": steered,
                          "events": [{"type": e["type"], "payload": e["payload"]} for e in events]})
        start = _start(client, sid, "Stop soon")
        wait_event(client, start["id"], "assistantDelta", 20)  # "Half" is streaming
        client.request("turns/cancel", {"turnId": start["id"]})
        events = wait_turn(client, start["id"], 20)
        run.turns.append({"start": start, "events": [{"type": e["type"], "payload": e["payload"]} for e in events]})
        client.wait(lambda: _observed_types(root).count("answer") == 3, 20, "the observer", poll=0.02)
        run.results["observed"] = [json.loads(line) for line in
                                   (root / "observed.jsonl").read_text(encoding="utf-8").splitlines()]
        client.request("sessions/close", {"sessionId": sid})
    return Path(session["path"]), run


def _observed_types(root: Path) -> list[str]:
    try:
        lines = (root / "observed.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line)["type"] for line in lines if line.endswith("}")]


def _slash(root: Path) -> tuple[Path, Run]:
    """A prompt template (`display_content`) and a plugin command's turn."""
    config = root / "home" / ".kward"
    write_prompt(config, "review", "Review $ARGUMENTS carefully.", description="Review a file")
    write_plugin(config, "hello", HELLO)
    steps = [step(text("Reviewed."), usage=usage(50, 2))]
    with _kward(root, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(write_script(root, steps))) as client:
        run = Run(client)
        session = client.request("sessions/create", {"workspaceRoot": str(root / "ws"), "name": "Slash"})
        run.turn(session["id"], "/review src/main.py")
        run.turn(session["id"], "/hello world")
        client.request("sessions/close", {"sessionId": session["id"]})
    return Path(session["path"]), run


def _codex(root: Path) -> tuple[Path, Run]:
    """Reasoning with encrypted content (`reasoning_items`), a tool call, then text."""
    with FakeCodex() as fake:
        fake.script("responses",
                    fc.stream([fc.created(), *fc.reasoning_events(["Read ", "the notes."]),
                               *fc.call_events("read_file", '{"path":"notes.txt"}', "call_codex", index=1),
                               fc.completed()]),
                    fc.text(["The notes ", "say alpha."]), fc.reasoning_then_text(["Short."], ["Bye."]))
        with _kward(root, KWARD_PROVIDER="codex", KWARD_CODEX_BASE_URL=fake.base_url,
                    OPENAI_ACCESS_TOKEN=TOKEN) as client:
            run = Run(client)
            session = client.request("sessions/create", {"workspaceRoot": str(root / "ws")})
            run.turn(session["id"], "What do the notes say?")
            run.turn(session["id"], "Thanks")
            client.request("sessions/close", {"sessionId": session["id"]})
    return Path(session["path"]), run


def _openrouter(root: Path) -> tuple[Path, Run]:
    """`reasoning_details`, a tool call, text, cost."""
    with FakeOpenRouter() as fake:
        fake.script("chat", fo.reasoning_then_text(["Thinking ", "hard."], ["Let me read."]),
                    fo.tool_call("read_file", '{"path":"notes.txt"}', "call_or"), fo.text(["Alpha ", "it is."]))
        with _kward(root, KWARD_PROVIDER="openrouter", KWARD_OPENROUTER_BASE_URL=fake.base_url,
                    OPENROUTER_API_KEY=OPENROUTER_KEY) as client:
            run = Run(client)
            session = client.request("sessions/create", {"workspaceRoot": str(root / "ws")})
            run.turn(session["id"], "Think first")
            run.turn(session["id"], "Now read the notes")
            client.request("sessions/close", {"sessionId": session["id"]})
    return Path(session["path"]), run


COMPACTION = {"role": "compactionSummary", "summary": "## Goal\nRead the notes.\n\n## Progress\n- Done: read them",
              "first_kept_entry_id": "message:2", "tokens_before": 1234, "from_hook": False,
              "details": {"read_files": ["notes.txt"], "modified_files": []}}


def _compacted(root: Path) -> tuple[Path, Run]:
    """Two turns, a compaction record appended by hand (as the original writes one), then
    a turn after it (the session resumed)."""
    steps = [step(text("First."), usage=usage(10, 1)),
             step(tool("read_file", id="call_c", path="notes.txt"), usage=usage(20, 2)),
             step(text("Second."), usage=usage(30, 3)),
             step(text("After the summary."), usage=usage(40, 4))]
    env = {"KWARD_PROVIDER": "scripted", "KWARD_SCRIPT": str(write_script(root, steps))}
    with _kward(root, **env) as client:
        run = Run(client)
        session = client.request("sessions/create", {"workspaceRoot": str(root / "ws")})
        run.turn(session["id"], "one")
        run.turn(session["id"], "two")
        client.request("sessions/close", {"sessionId": session["id"]})
    path = Path(session["path"])
    stamp = parse_records(path.read_text(encoding="utf-8"))[-1]["timestamp"]
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": "compaction", "timestamp": stamp, "message": COMPACTION}) + "\n")
    with _kward(root, **env) as client:
        run.client = client
        resumed = client.request("sessions/resume", {"path": str(path), "workspaceRoot": str(root / "ws")})
        run.turn(resumed["id"], "three")
        client.request("sessions/close", {"sessionId": resumed["id"]})
    return path, run


_IMAGE_URL = "data:image/png;base64," + PNG
#: Shapes other writers (the original kward, pi-style transcripts, later format versions)
#: put in a v1 file, which kward reads: written by hand, not by kward.
VARIANTS: list[dict[str, Any]] = [
    {"type": "session", "version": 1, "id": "0e2f9a4c-1111-4222-8333-944455556666",
     "timestamp": "2026-01-02T03:04:05.678Z", "cwd": WS, "model": "other-model", "reasoningEffort": "high"},
    {"type": "message", "timestamp": "2026-01-02T03:04:06.000Z", "message": {"role": "system", "content": "sys text"}},
    {"type": "message", "timestamp": "2026-01-02T03:04:06.100Z", "message": {
        "role": "user", "display_content": [{"type": "text", "text": "/shown command"}],
        "content": [{"type": "input_text", "text": "Hi there"}, "a bare string part",
                    {"type": "image", "mime_type": "image/jpg", "data": PNG, "path": "/pics/cat.jpg"},
                    {"type": "image", "media_type": "image/webp", "data": PNG, "alt": "a webp"},
                    {"type": "image_url", "image_url": {"url": _IMAGE_URL}}, {"type": "input_image", "url": _IMAGE_URL}]}},
    {"type": "message", "timestamp": "2026-01-02T03:04:07.000Z", "message": {
        "role": "assistant", "id": "abcd1234", "model": "other-model", "provider": "Ruby",
        "content": [{"type": "thinking", "thinking": "deep"}, {"type": "output_text", "text": "Answer"},
                    {"type": "toolCall", "id": "tc_part", "name": "read_file", "arguments": {"path": "notes.txt"}}],
        "reasoningSummary": "a summary the thinking part wins over",
        "toolCalls": [{"id": "tc_flat", "name": "run_shell_command", "arguments": "{\"command\":\"ls\"}"},
                      {"id": "tc_edit", "type": "function", "function": {"name": "edit_file", "arguments": {
                          "path": "notes.txt", "edits": [{"old_text": "a", "new_text": "b"}]}}}],
        "error_message": "an old error",
        "reasoning_items": [{"type": "reasoning", "encrypted_content": "enc-1", "summary": []}],
        "reasoning_details": [{"type": "reasoning.text", "text": "rd", "index": 0}]}},
    {"type": "compaction", "timestamp": "2026-01-02T03:04:08.000Z", "message": {
        "role": "compactionSummary", "summary": "Summed up.", "firstKeptEntryId": "abcd1234", "tokensBefore": 99}},
    {"type": "message", "timestamp": "2026-01-02T03:04:09.000Z", "message": {
        "role": "toolResult", "toolCallId": "tc_flat", "toolName": "run_shell_command",
        "content": [{"type": "text", "text": "file1\n"}], "is_error": False}},
    {"type": "message", "timestamp": "2026-01-02T03:04:09.100Z", "message": {
        "role": "tool", "tool_call_id": "tc_edit", "content": "Edited notes.txt\n--- notes.txt\n+++ notes.txt\n-a\n+b"}},
    {"type": "message", "timestamp": "2026-01-02T03:04:09.200Z", "message": {
        "role": "tool", "tool_call_id": "tc_part", "name": "read_file", "isError": True,
        "content": [{"type": "text", "text": "see"}, {"type": "image", "mimeType": "image/png", "data": PNG}]}},
    {"type": "message", "timestamp": "2026-01-02T03:04:09.300Z", "message": "not a message"},
    {"type": "message", "timestamp": "2026-01-02T03:04:10.000Z", "message": {"role": "developer", "content": "dev text"}},
    {"type": "message", "timestamp": "2026-01-02T03:04:10.100Z", "message": {
        "role": "assistant", "content": [{"type": "reasoning", "reasoning": "r2"}, {"type": "text", "text": "Fine."}],
        "interrupted": True, "errorMessage": "cut off", "provider": "Ruby", "model": "other-model"}},
    {"type": "message", "timestamp": "2026-01-02T03:04:11.000Z", "message": {
        "role": "compactionSummary", "summary": "An inline summary.", "tokens_before": 5,
        "first_kept_entry_id": "message:0", "details": {"read_files": [], "modified_files": ["x.txt"]}}},
    {"type": "message", "timestamp": "2026-01-02T03:04:12.000Z", "message": {
        "role": "user", "content": "Last words", "display_content": "/last"}},
    {"type": "message", "timestamp": "2026-01-02T03:04:12.100Z", "message": {
        "role": "assistant", "content": "", "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}],
        "provider": "Ruby", "model": "other-model"}},
    {"type": "tool_execution_end", "timestamp": "2026-01-02T03:04:12.200Z", "toolCallId": "call_x", "toolName": "read",
     "args": {"path": "notes.txt"}, "result": {"content": "x", "isError": False, "images": [],
                                               "diff": "--- notes.txt\n+++ notes.txt", "changedFiles": ["notes.txt"]},
     "isError": False},
    {"type": "session_info", "timestamp": "2026-01-02T03:04:13.000Z", "name": "Variants", "model": "other-model"},
]


def _variants(root: Path) -> tuple[Path, Run]:
    path = root / "variants.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in VARIANTS)
                    .replace(WS, str(root / "ws")), encoding="utf-8")
    run = Run(None)  # type: ignore[arg-type]
    return path, run


SCENARIOS: dict[str, Callable[[Path], tuple[Path, Run]]] = {
    "scripted": _scripted, "slash": _slash, "codex": _codex, "openrouter": _openrouter, "compacted": _compacted,
    "variants": _variants}


def generate(root: Path, names: tuple[str, ...] = NAMES) -> dict[str, dict[str, Any]]:
    """Run every scenario under `root` (a fresh directory each); per name the session
    file's text (paths replaced) and the normalized turns and results."""
    out = {}
    for name in names:
        base = root / name
        _workspace(base)
        path, run = SCENARIOS[name](base)
        out[name] = {"file": file_text(path, base),
                     "turns": normalize(run.turns, base), "results": normalize(run.results, base)}
    return out


# --- what kward shows of a session file ------------------------------------------------

def _install(fixtures: dict[str, str], root: Path) -> dict[str, Path]:
    """Write the fixture files under `root` with the temp workspace in place of WS."""
    ws = _workspace(root)
    placed = {}
    for name, content in fixtures.items():
        path = root / "files" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content.replace(WS, json.dumps(str(ws))[1:-1]), encoding="utf-8")
        placed[name] = path
    return placed


def _shown(client: RpcClient, path: Path, ws: Path, root: Path) -> dict[str, Any]:
    session = client.request("sessions/resume", {"path": str(path), "workspaceRoot": str(ws)})
    sid = session["id"]
    out: dict[str, Any] = {"transcript": client.request("sessions/transcript", {"sessionId": sid})["messages"],
                           "forkMessages": client.request("sessions/forkMessages", {"sessionId": sid})["messages"]}
    target = ws / "exports" / (path.stem + ".md")
    target.parent.mkdir(exist_ok=True)
    client.request("sessions/export", {"sessionId": sid, "path": str(target)})
    out["export"] = target.read_text(encoding="utf-8")
    stats = client.request("runtime/stats", {"sessionId": sid})
    out["stats"] = {k: stats.get(k) for k in ("userMessages", "assistantMessages", "toolCalls", "toolResults",
                                              "totalMessages", "tokens", "cost")}
    out["contextTokens"] = (stats.get("contextUsage") or {}).get("tokens")
    clone = client.request("sessions/clone", {"sessionId": sid})
    out["cloneMessages"] = [r["message"] for r in parse_records(Path(clone["path"]).read_text(encoding="utf-8"))
                            if r.get("type") == "message"]
    client.request("sessions/close", {"sessionId": clone["id"]})
    out["_sid"] = sid
    return out


def _next_body(client: RpcClient, sid: str, route: str, fake: Any) -> dict[str, Any]:
    before = len(fake.requests(route))
    start = _start(client, sid, "next")
    wait_turn(client, start["id"], 20)
    body = dict(fake.requests(route)[before].json)
    body.pop("tools", None)  # the tool schemas are not the session's (other tests check them)
    if route == "responses":
        body["instructions"] = "<instructions>"
    else:
        body["messages"] = [{**m, "content": "<instructions>"} if m.get("role") == "system" else m
                            for m in body["messages"]]
    return body


def observe(fixtures: dict[str, str], root: Path) -> dict[str, dict[str, Any]]:
    """Per fixture (name -> file text): what kward shows of it (module docstring)."""
    out: dict[str, dict[str, Any]] = {}
    for label, route, server, env in (
            ("codex", "responses", FakeCodex, lambda f: {"KWARD_PROVIDER": "codex", "KWARD_CODEX_BASE_URL": f.base_url,
                                                        "OPENAI_ACCESS_TOKEN": TOKEN}),
            ("openrouter", "chat", FakeOpenRouter,
             lambda f: {"KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": f.base_url,
                        "OPENROUTER_API_KEY": OPENROUTER_KEY})):
        base = root / label
        placed = _install(fixtures, base)
        with server() as fake:
            for _ in placed:
                fake.script(route, fc.text(["ok"]) if route == "responses" else fo.text(["ok"]))
            with _kward(base, **env(fake)) as client:
                for name, path in placed.items():
                    shown = _shown(client, path, base / "ws", base)
                    body = _next_body(client, shown.pop("_sid"), route, fake)
                    if label == "codex":
                        out[name] = shown
                    out[name][f"{label}Body"] = body
        for name in placed:
            out[name] = normalize(out[name], base)
    return out


def write(root: Path) -> None:
    """Generate the fixtures under `root` and write them (and their observations) to DATA."""
    generated = generate(root / "generate")
    files = {name: g["file"] for name, g in generated.items()}
    observed = observe(files, root / "observe")
    DATA.mkdir(parents=True, exist_ok=True)
    for name, g in generated.items():
        (DATA / f"{name}.jsonl").write_text(g["file"], encoding="utf-8")
        expected = {"turns": g["turns"], "results": g["results"], "shown": observed[name]}
        (DATA / f"{name}.expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")


if __name__ == "__main__":
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="kward-fixtures-"))
    os.environ["HOME"] = str(scratch)
    try:
        write(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {', '.join(NAMES)} to {DATA}")
