"""Seeded params for every method of the method table, for tests/rpc/test_rpc_fuzz.py.

Everything is drawn from the `random.Random` passed in, so a seed replays a run exactly.
Params are missing, null, of the wrong type, huge, deep, hold NUL bytes or lone
surrogates, name paths outside the workspace, or are plausible (real session, turn and
entry ids, existing files) so that calls get past their first check.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kward.config.store import validate_values
from kward.config.rules import KEYS

SCHEMA = sorted({path.split('.')[0] for path in KEYS})  # the top-level config keys kward reads
from kward.errors import KwardError

OMIT = object()  # no `params` member at all


ATOMS: list[Any] = [None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63, -2 ** 63 - 1, 10 ** 30, 1.5, -0.0, 1e308, 1e-308,
                    "", " ", "x", "null", "0", "true", "é✓🙂", "\u202e", "\x00", "a\x00b", "\n", "%s%n",
                    "$(touch pwned)", "${HOME}", "*", "[", "\\", "'", '"', "<script>", "\ufeff", "\ud83d\ude00"]


def path_atoms(home: Path, ws: Path, outside: Path) -> list[str]:
    """Paths for any param: all of them resolve inside the test's temp directory, so even
    a method that wrongly wrote there could do no harm (the suite may run as root)."""
    return ["..", "../", "../outside/x.md", "../../x.md", str(outside), str(outside / "x.md"), str(ws),
            str(ws / "a.txt"), "a.txt", "sub", "sub/../../outside/x.md", "out/secret.txt", "out", "out/x.md",
            "a" * 300, "a/" * 3000, "ws\x00", "a\x00b", "C:\\x", "file:///x.md", "sub/new.md", "x.md", ".", "./",
            str(ws / ".." / "outside"), str(home / ".kward"), str(home / ".kward" / "config.json"),
            str(home / ".kward" / "sessions"), "sub/", "sub/b.txt/x", "\u202eexe.md", "-rf", " a.txt", "a.txt ", "~",
            "~/x.md"]


#: System paths, only for params that are never written to.
READ_ONLY_PATHS = ["/etc/passwd", "/", "/dev/null", "/dev/zero", "/proc/self/fd/0", "/proc/self/environ",
                   "/dev/stdin", "../../../../etc/passwd"]
READ_ONLY_PARAMS = {("sessions/resume", "path"), ("workspace/validate", "workspaceRoot"),
                    ("workspace/info", "workspaceRoot"), ("sessions/list", "workspaceRoot")}


@dataclass
class Known:
    """Real values the fuzz mixes in so that calls get past their first check."""

    session_ids: list[str]
    session_files: list[str]
    turn_ids: list[str]
    entry_ids: list[str]
    paths: list[str]


#: Per param name: what a plausible value looks like (a kind, or values to choose from).
PLAUSIBLE: dict[str, Any] = {
    "sessionId": "session", "turnId": "turn", "entryId": "entry", "workspaceRoot": "path", "path": "path",
    "name": ["renamed", "  ", "x" * 10_001, "é✓🙂"], "limit": [1, 5, 100_000, 100_001, 0],
    "format": ["markdown", "md", "html", "json", "jsonl", "MARKDOWN", "txt"],
    "input": ["hi", "", " ", "x" * 20_001], "streamingBehavior": ["newTurn", "newTurn", "followUp", "steer", "queue"],
    "attachments": [[], [], [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
                    [{"type": "image", "mimeType": "image/png", "data": "!!"}], [{"type": "file"}], [1] * 40],
    "afterSequence": [0, 1, 10 ** 9, -1], "force": [True, False], "redacted": [True, False], "refresh": [True, False],
    "questionRequestId": ["q1", ""], "command": ["plan", "/plan", "", "nope"], "arguments": ["x", "", "x" * 20_001], "answers": [[], [{"answer": "x"}], None],
    "model": ["scripted-model", "gpt-5", "a/b", "", "x" * 300], "provider": ["scripted", "Scripted", "codex", "nope"],
    "effort": ["off", "minimal", "low", "medium", "high", "xhigh", "max", "MAX", "extreme"],
    "settingId": ["defaultModel", "defaultThinkingLevel", "other"],
    "value": ["Scripted/scripted-model", "high", "Nope/x", "Scripted/", "/x", "low"],
    "clientInfo": [{"name": "fuzz", "version": "1"}, {}], "values": "config",
    "memory": [True, False], "includeInactive": [True, False],
    "text": ["we always use pytest", "remember this: tabs", "", " ", "x" * 20_001, "a\x00b"],
    "scope": ["global", "workspace", "workspace:/tmp/nowhere", "workspace:relative", "workspace:/a\x00b", "bogus", ""],
    "tags": [["a"], [], ["a,b c"], [1], ["x" * 2000], ["t"] * 101],
    "id": ["core_001", "soft_001", "soft_002", "soft_999", "core_", "", "x" * 200],
    "range": ["1 week", "2 days", "1 month", "0 days", "3 eons", "999999999 years", ""],
    "bucket": ["day", "hours", "second", "fortnight", ""],
    "capabilities": [{"optOutNotificationMethods": ["turn/event"]}, {"optOutNotificationMethods": [1]},
                     {"experimentalApi": True}, {"experimentalApi": "yes"}, {}],
    "providerId": ["openai", "openrouter", "OpenRouter", "github", ""],
    "apiKey": ["sk-or-v1-fuzz0123456789abcdef", "short", " sk-or-v1-padded0123456789 \n", "x" * 2000, "a b c d e f"],
    "timeoutSeconds": [0.05, 0.2, 0, -1, 3600, 3601, 1e300],
    "loginId": ["nope", "", "x" * 5000],
    "code": ["abc", "http://localhost:1455/auth/callback?code=x&state=y", "?error=access_denied", "", "c#s"],
}

#: Per method: the params its handler reads.
PARAMS: dict[str, list[str]] = {
    "initialize": ["clientInfo", "capabilities"], "initialized": [],
    "workspace/validate": ["workspaceRoot"], "workspace/info": ["workspaceRoot"],
    "config/read": ["redacted"], "config/update": ["values"],
    "sessions/create": ["workspaceRoot", "name", "memory"], "sessions/resume": ["path", "workspaceRoot"],
    "sessions/list": ["workspaceRoot", "limit"], "sessions/rename": ["sessionId", "name"],
    "sessions/clone": ["sessionId"], "sessions/compact": ["sessionId", "customInstructions"],
    "sessions/forkMessages": ["sessionId"], "sessions/fork": ["sessionId", "entryId"],
    "sessions/export": ["sessionId", "path", "format"], "sessions/delete": ["sessionId", "force"],
    "sessions/close": ["sessionId"], "sessions/transcript": ["sessionId"], "sessions/diff": ["sessionId"],
    "sessions/attach": ["sessionId"], "sessions/detach": ["sessionId"],
    "turns/start": ["sessionId", "input", "streamingBehavior", "attachments"], "turns/cancel": ["turnId"],
    "turns/status": ["turnId"], "turns/events": ["turnId", "afterSequence"],
    "ui/answerQuestion": ["sessionId", "questionRequestId", "answers"], "tools/list": [], "mcp/status": [], "$/ping": [],
    "runtime/state": ["sessionId"], "runtime/stats": ["sessionId"], "models/list": ["refresh"],
    "models/current": [], "models/set": ["model", "provider"], "reasoning/set": ["effort"],
    "openrouter/catalog": [], "runtime/updateSetting": ["sessionId", "settingId", "value"],
    "runtime/reload": ["sessionId"],
    "auth/status": [], "auth/providers": [], "auth/loginWithApiKey": ["providerId", "apiKey"],
    "auth/logoutProvider": ["providerId"], "auth/loginWithOAuth": ["providerId", "timeoutSeconds"],
    "auth/startOpenAILogin": ["timeoutSeconds"], "auth/submitOpenAICode": ["loginId", "code"],
    "auth/loginStatus": ["loginId"],
    "memory/status": [], "memory/enable": [], "memory/disable": [], "memory/autoSummary/enable": [],
    "memory/autoSummary/disable": [], "memory/list": ["workspaceRoot", "includeInactive"],
    "memory/add": ["text", "scope", "tags", "workspaceRoot"], "memory/addCore": ["text", "scope", "tags", "workspaceRoot"],
    "memory/forget": ["id"], "memory/promote": ["id"], "memory/relax": ["id", "workspaceRoot"], "memory/inspect": [],
    "memory/why": ["sessionId"], "memory/summarize": ["sessionId"],
    "logging/stats": ["range"], "logging/tokenCsv": ["range", "bucket"],
    "commands/list": ["sessionId"], "commands/run": ["sessionId", "name", "arguments"],
    "resources/startup": ["sessionId"], "prompts/list": [], "prompts/expand": ["command", "arguments"],
}
DESTRUCTIVE = frozenset({"sessions/close", "sessions/delete"})  # end the known sessions
UNFUZZED = {"shutdown": "ends the process; tests/rpc/test_rpc_lifecycle.py covers it",
            "rpc/schema": "reads no params and is experimental; tests/rpc/test_rpc_schema_method.py covers it"}
EXTRAS = ["resumeLast", "currentSessionPath", "fuzzExtra", "__proto__", "constructor", ""]


class ParamsFuzz:
    """Draws the params of one request at a time (`request_params`)."""

    def __init__(self, rng: random.Random, known: Known):
        self.rng = rng
        self.known = known

    def junk(self, depth: int = 0) -> Any:
        """Any JSON value: containers a few levels deep, chains around the nesting limit,
        huge strings, lone surrogates, paths, real ids of the wrong kind, odd atoms."""
        r = self.rng.random()
        if depth < 4 and r < 0.12:
            return [self.junk(depth + 1) for _ in range(self.rng.randrange(4))]
        if depth < 4 and r < 0.24:
            return {self.rng.choice(["a", "é", "", "sessionId", "__proto__"]) + str(i): self.junk(depth + 1)
                    for i in range(self.rng.randrange(4))}
        if r < 0.27:
            deep: Any = 1
            for _ in range(self.rng.choice([10, 63, 64, 65])):
                deep = [deep]
            return deep
        if r < 0.3:
            return self.rng.choice(["a", "é", "\n", "/"]) * self.rng.choice([5_000, 70_000])
        if r < 0.33:
            return "\ud800" + self.rng.choice(["", "x"])  # answered -32602 by the parser
        if r < 0.6:
            return self.rng.choice(self.known.paths)
        if r < 0.7:
            return self.rng.choice(self.known.session_ids + self.known.turn_ids + self.known.entry_ids)
        return self.rng.choice(ATOMS)

    def plausible(self, name: str, method: str) -> Any:
        """A value of the right type for param `name`, mostly valid (system paths only
        where `method` never writes to the path)."""
        kind = PLAUSIBLE.get(name)
        if kind == "session":
            return self.rng.choice(self.known.session_ids * 3 + ["nope"])
        if kind == "turn":
            return self.rng.choice(self.known.turn_ids * 2 + ["turn-999"])
        if kind == "entry":
            return self.rng.choice(self.known.entry_ids + ["e-nope"])
        if kind == "path":
            extra = READ_ONLY_PATHS if (method, name) in READ_ONLY_PARAMS else []
            return self.rng.choice(self.known.paths + self.known.session_files + extra)
        if kind == "config":
            return self.config_values()
        return self.rng.choice(kind) if kind else self.junk()  # (PLAUSIBLE names every param)

    def config_values(self) -> Any:
        """Junk under unknown keys, and values of known keys only when they are invalid:
        a valid one would really change the config (log level, provider) under the test."""
        values: dict[str, Any] = {}
        for _ in range(self.rng.randrange(4)):
            if self.rng.random() < 0.5:
                name = self.rng.choice(["fuzz", "fuzz_api_key", "fuzz.nested", ""]) + str(self.rng.randrange(9))
                values[name] = self.junk()
                continue
            name, value = self.rng.choice(sorted(SCHEMA)), self.junk()
            try:
                validate_values({name: value})
            except KwardError:
                values[name] = value
        return values if self.rng.random() < 0.9 else self.junk()

    def request_params(self, method: str) -> Any:
        """Params for `method`: each missing, plausible or junk, plus unknown extras; now
        and then not an object at all (OMIT: no `params` member)."""
        r = self.rng.random()
        if r < 0.03:
            return OMIT
        if r < 0.06:
            return self.rng.choice([[], [1], "x", 5, None, True])
        names = PARAMS[method]
        if r < 0.5:  # near-valid: all plausible, then at most one param missing or junk
            params = {name: self.plausible(name, method) for name in names}
            if names and self.rng.random() < 0.7:
                name = self.rng.choice(names)
                if self.rng.random() < 0.3:
                    del params[name]
                else:
                    params[name] = self.junk()
        else:
            params = {}
            for name in names:
                roll = self.rng.random()
                if roll < 0.15:
                    continue
                params[name] = self.plausible(name, method) if roll < 0.6 else self.junk()
        if self.rng.random() < 0.3:
            params[self.rng.choice(EXTRAS)] = self.junk()
        return params
