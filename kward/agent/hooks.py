"""Command hooks: the user's own commands, run on the events of a turn (config `hooks`).

Config: ``hooks: {"<event>": [{"command": "...", "tool": "<regex>", "commandPattern":
"<regex>", "timeoutSeconds": 60}]}`` (`kward.config.rules.hook_rule`), for the events

- ``sessionStart``: before the first turn of each session id this process opened (created,
  opened, resumed or forked), ahead of `userPromptSubmit`;
- ``userPromptSubmit``: before a model turn sends the user's input;
- ``beforeTool``: after a tool call's ``toolCall`` event, before the approval question and
  before it runs; may block it;
- ``afterTool``: after a call ran (not after a blocked, declined or cancelled one),
  before its ``toolResult`` is stored and reported;
- ``turnEnd``: after a model turn ended (completed, failed or canceled), before its
  ``turnDiff`` and ``turnFinished``.

`tool` (searched in the model's tool name, ``run_shell_command``, and in the wire's
``toolName``, ``bash``) and `commandPattern` (searched in a shell call's command; a hook
with one never matches another tool) apply to the tool events; both must match when given.

Each matching hook runs in config order as ``/bin/sh -c <command>`` in the session's
workspace, in its own process group (`kward.tools.process.run_command`, with everything it
started still running killed once it exited), with the event as one JSON object on stdin,
kward's environment without its credentials plus ``KWARD_HOOK_EVENT``,
``KWARD_SESSION_ID`` and ``KWARD_WORKSPACE``, under the shell sandbox when one is
configured (`kward.sandbox.wrap`; unavailable: the hook fails, saying why), and within its
timeout. Its stdout and stderr are kept up to `OUTPUT_BYTES` each.

- Exit 0 goes on; its stdout (stripped, when not empty) is added to the context: to the
  call's result for the tool events, to the user's message for `userPromptSubmit` and
  `sessionStart`; `turnEnd`'s is held for the session's next turn here (in memory).
- A `beforeTool` hook that exits 2 blocks the call: its result is ``Declined: blocked by
  hooks.beforeTool[N]: <stderr>``, the model reads it and the turn goes on. One that does
  not finish in time blocks it the same way. Later hooks of the event do not run.
- Any other failure (another exit status, exit 2 elsewhere, a timeout elsewhere, a command
  that cannot start) is reported and changes nothing.
- The turn's cancel ends a running hook's processes; the turn then ends canceled. The
  `turnEnd` hooks of a canceled turn run to their own timeout; a cancel that comes while
  those of an answered turn run ends them and the turn still completes.

Every run is reported before it starts and when it is over (`HookNotice`, see
`kward.agent.hookruns`) through the runtime's notices, from the turn's thread, so in
order with the turn's events; its output there and in the log (the file only, never a
terminal's stderr: `kward.diagnostics.SHOWN_ELSEWHERE`) is scrubbed of kward's
credentials and of secret-shaped text. Knows nothing of JSON-RPC.

Thread contract: `Hooks` is shared by the engine (any turn's worker); `_lock` guards its
per-session tables (the sessions whose `sessionStart` ran, the `turnEnd` context held).
A `TurnHooks` belongs to one turn and is used on its worker thread only.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kward import sandbox
from kward.agent.hookruns import BLOCKED, COMPLETED, DONE, FAILED, RUNNING, STARTED, TIMED_OUT, HookNotice, \
    HookOutput, HookRun
from kward.cancel import CancelToken
from kward.config.rules import HookSpec
from kward.config.settings import HooksSettings
from kward.diagnostics import SHOWN_ELSEWHERE
from kward.errors import Canceled
from kward.limits import HOOK_OUTPUT_BYTES
from kward.model import ToolCall, ToolResult
from kward.redact import redact_text
from kward.timefmt import now_iso
from kward.toolcalls import normalize_args, normalize_tool_name
from kward.tools.process import child_environment, run_command

log = logging.getLogger(__name__)

OUTPUT_BYTES = HOOK_OUTPUT_BYTES  # of each stream of a run, and so of what it adds to the context
HELD_CONTEXT_CHARS = 4 * OUTPUT_BYTES  # turnEnd context held for a session's next turn
SHELL = "run_shell_command"
BLOCK_STATUS = 2

Notify = Callable[[HookNotice], None]
Scrub = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the hooks of an event said: `blocked` (the reason a call was blocked, or None)
    and the `context` they add (text for the model; empty: nothing)."""

    blocked: str | None = None
    context: str = ""


class Hooks:
    """The engine's hook runner: `notify` receives every run's notices, `scrub` takes
    kward's credentials out of hook output. See the module docstring."""

    def __init__(self, notify: Notify, scrub: Scrub | None = None):
        self.notify = notify
        self.scrub = scrub or (lambda text: text)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._started: set[str] = set()  # session ids whose sessionStart hooks ran
        self._held: dict[str, str] = {}  # turnEnd context for a session id's next turn

    def turn(self, hooks: HooksSettings, *, session_id: str, turn_id: str, cwd: str, cancel: CancelToken,
             sandbox_policy: sandbox.SandboxPolicy | None, session_file: str | None = None) -> "TurnHooks":
        return TurnHooks(self, hooks, session_id, turn_id, cwd, cancel, sandbox_policy, session_file)

    def forget(self, session_id: str) -> None:
        """The session id was closed: its sessionStart runs again should it be opened again."""
        with self._lock:
            self._started.discard(session_id)
            self._held.pop(session_id, None)

    def first_turn(self, session_id: str) -> bool:
        """True once per session id: its sessionStart hooks are due."""
        with self._lock:
            if session_id in self._started:
                return False
            self._started.add(session_id)
            return True

    def hold(self, session_id: str, context: str) -> None:
        if context:
            with self._lock:
                held = (self._held.get(session_id, "") + "\n\n" + context).strip()
                self._held[session_id] = held[-HELD_CONTEXT_CHARS:]

    def take_held(self, session_id: str) -> str:
        with self._lock:
            return self._held.pop(session_id, "")

    def next_id(self) -> str:
        return f"hook-{next(self._ids)}"

    def shown(self, text: str) -> str:
        """Hook output as notices and logs carry it."""
        return redact_text(self.scrub(text))


class TurnHooks:
    """The hooks of one turn (see the module docstring); on the turn's worker thread."""

    def __init__(self, hooks: Hooks, settings: HooksSettings, session_id: str, turn_id: str, cwd: str,
                 cancel: CancelToken, sandbox_policy: sandbox.SandboxPolicy | None, session_file: str | None):
        self.hooks = hooks
        self.settings = settings
        self.session_id = session_id
        self.turn_id = turn_id
        self.cwd = cwd
        self.cancel = cancel
        self.sandbox = sandbox_policy
        self.session_file = session_file

    # --- the events -------------------------------------------------------------------

    def prompt(self, text: str) -> str:
        """The context `sessionStart` (on the session id's first turn here), a previous
        turn's `turnEnd` and `userPromptSubmit` add to the user's input `text`."""
        parts = [self.hooks.take_held(self.session_id)]
        if self.hooks.first_turn(self.session_id) and self.settings.sessionStart:
            parts.append(self._run("sessionStart", self.settings.sessionStart, {}).context)
        if self.settings.userPromptSubmit:
            parts.append(self._run("userPromptSubmit", self.settings.userPromptSubmit, {"prompt": text}).context)
        return "\n\n".join(part for part in parts if part)

    def before_tool(self, call: ToolCall, args: Mapping[str, Any]) -> Verdict:
        specs = self._matching(self.settings.beforeTool, call, args)
        if not specs:
            return Verdict()
        return self._run("beforeTool", specs, _call_fields(call, args))

    def after_tool(self, call: ToolCall, args: Mapping[str, Any], result: ToolResult) -> str:
        specs = self._matching(self.settings.afterTool, call, args)
        if not specs:
            return ""
        fields = {**_call_fields(call, args), "result": {"content": result.content, "isError": result.is_error}}
        return self._run("afterTool", specs, fields).context

    def turn_end(self, status: str, answer: str | None) -> None:
        """Run the `turnEnd` hooks (not cancellable: the turn is over); their context is
        held for the session's next turn."""
        if not self.settings.turnEnd:
            return
        if status == "canceled":  # (its token is cancelled: the hooks run to their own timeout)
            self.cancel = CancelToken()
        try:
            verdict = self._run("turnEnd", self.settings.turnEnd, {"status": status, "answer": answer})
        except Canceled:  # a cancel that came after the turn's answer: the run was reported failed
            return
        self.hooks.hold(self.session_id, verdict.context)

    # --- running ----------------------------------------------------------------------

    @staticmethod
    def _matching(specs: tuple[HookSpec, ...], call: ToolCall, args: Mapping[str, Any]) -> tuple[HookSpec, ...]:
        names = (call.name, normalize_tool_name(call.name))
        command = args.get("command") if call.name == SHELL else None
        chosen = []
        for spec in specs:
            if spec.tool is not None and not any(re.search(spec.tool, name) for name in names):
                continue
            if spec.command_pattern is not None and not (
                    isinstance(command, str) and re.search(spec.command_pattern, command)):
                continue
            chosen.append(spec)
        return tuple(chosen)

    def _run(self, event: str, specs: tuple[HookSpec, ...], fields: dict[str, Any]) -> Verdict:
        """Run `specs` in order (a block stops the rest); raises Canceled after reporting
        the run the turn's cancel ended."""
        payload = {"event": event, "sessionId": self.session_id, "turnId": self.turn_id, "cwd": self.cwd,
                   "sessionFile": self.session_file, **fields}
        try:
            stdin = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a model's broken escape): JSON's own \u escapes
            stdin = json.dumps(payload).encode("ascii")
        context: list[str] = []
        for spec in specs:
            run = self._one(spec, stdin)
            if run.blocked is not None:
                return Verdict(run.blocked, "\n\n".join(context))
            if run.context:
                context.append(f'<hook-output source="{spec.source}">\n{run.context}\n</hook-output>')
        return Verdict(None, "\n\n".join(context))

    def _one(self, spec: HookSpec, stdin: bytes) -> "_Ran":
        hooks = self.hooks
        run = HookRun(hooks.next_id(), spec.event, spec.source, RUNNING, now_iso())
        hooks.notify(HookNotice(STARTED, self.session_id, self.turn_id, run))
        began = time.monotonic()
        ran = _Ran(FAILED, error="canceled with the turn")  # (what a Canceled leaves)
        try:
            ran = self._spawn(spec, stdin)
        except Canceled:
            raise
        except Exception as exc:  # (never expected) reported like any failure: the turn goes on
            log.exception("hook %s could not run", spec.source)
            ran = _Ran(FAILED, error=f"could not run the hook: {type(exc).__name__}")
        finally:
            done = HookRun(run.id, run.event, run.source, ran.status, run.started_at,
                           int((time.monotonic() - began) * 1000), ran.exit_status, ran.output(hooks.shown))
            level = logging.INFO if ran.status == DONE else logging.WARNING
            log.log(level, "hook %s (%s) %s in %d ms%s", spec.source, run.id, ran.status, done.duration_ms,
                    "".join(f"; {o.kind}: {o.text}" for o in done.output),
                    extra=SHOWN_ELSEWHERE)  # (the notice reports it: not on a terminal's stderr too)
            hooks.notify(HookNotice(COMPLETED, self.session_id, self.turn_id, done))
        return ran

    def _spawn(self, spec: HookSpec, stdin: bytes) -> "_Ran":
        env = child_environment({"KWARD_HOOK_EVENT": spec.event, "KWARD_SESSION_ID": self.session_id,
                                 "KWARD_WORKSPACE": self.cwd})
        try:
            argv = sandbox.wrap(["/bin/sh", "-c", spec.command], cwd=self.cwd, env=env, policy=self.sandbox)
        except sandbox.SandboxUnavailable as exc:
            return _Ran(FAILED, error=exc.message)
        import tempfile  # (only once a hook runs)

        with tempfile.TemporaryFile() as payload:
            payload.write(stdin)
            payload.flush()
            payload.seek(0)
            try:
                outcome = run_command(argv, cwd=self.cwd, timeout=spec.timeout, cancel=self.cancel, env=env,
                                      cap=OUTPUT_BYTES, stdin=payload.fileno(), end_group=True)
            except OSError as exc:
                return _Ran(FAILED, error=f"could not start the hook: {exc.strerror or exc}")
        out = _text(outcome.stdout, outcome.stdout_truncated)
        err = _text(outcome.stderr, outcome.stderr_truncated)
        scrub = self.hooks.scrub
        if outcome.timed_out:
            why = f"did not finish within {spec.timeout:g} s"
            if spec.event == "beforeTool":
                return _Ran(BLOCKED, None, out, err, f"{why}; the call was blocked",
                            blocked=f"{spec.source}: the hook {why}")
            return _Ran(TIMED_OUT, None, out, err, why)
        status = outcome.exit_status
        if status == 0:
            return _Ran(DONE, 0, out, err, context=scrub(out.strip()))
        if status == BLOCK_STATUS and spec.event == "beforeTool":
            reason = scrub(err.strip()) or f"the hook exited {BLOCK_STATUS}"
            return _Ran(BLOCKED, status, out, err, "exit status 2: the call was blocked",
                        blocked=f"{spec.source}: {reason}")
        return _Ran(FAILED, status, out, err, f"exit status {status}")


@dataclass(frozen=True, slots=True)
class _Ran:
    """How one run ended: its status, exit status, output texts, kward's `error` word, the
    `blocked` reason (beforeTool) and the `context` it adds (scrubbed)."""

    status: str = FAILED
    exit_status: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    blocked: str | None = None
    context: str = ""

    def output(self, shown: Scrub) -> tuple[HookOutput, ...]:
        parts = (("stdout", self.stdout), ("stderr", self.stderr), ("error", self.error))
        return tuple(HookOutput(kind, shown(text)) for kind, text in parts if text)


def _text(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", "replace")
    return text + f"\n... truncated to {OUTPUT_BYTES} bytes" if truncated else text


def _call_fields(call: ToolCall, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"toolName": normalize_tool_name(call.name), "tool": call.name, "toolCallId": call.id,
            "args": normalize_args(call.name, dict(args))}


def blocked_result(reason: str) -> str:
    """The result text of a call a `beforeTool` hook blocked."""
    return f"Declined: blocked by {reason}"
