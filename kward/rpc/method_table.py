"""The method table: every wire method name beside the handler that serves it.

`METHODS` is the one list of the methods kward serves. Handlers live in
`kward/rpc/methods/<namespace>.py` and are imported on first use, so what a process loads does not
grow with the number of methods. A handler is `def handler(call: Call) -> result` and is a
thin adapter: its params arrive checked against its shape (`kward.rpc.paramcheck`), it
reads them through `call.params`, calls the runtime
(`call.runtime`, kward.runtime.Runtime), and shapes the result. Quick handlers run on the
dispatcher thread: they may do brief local work (a stat, an flock that is not contended,
one appended line) but never wait for the network, the client or another turn; anything
longer is `slow=True` and runs on the worker pool.

`redaction` says how the result is redacted (`kward.rpc.redaction`): in full unless the
method is marked as returning conversation content; errors are always redacted in full.

A server serves a `MethodTable` (`default_table()`: METHODS), which may be extended before
it serves (plugins, an approval mode, tests): `table.register(name, handler, slow=...,
redaction=...)`. The capabilities of `initialize` are derived from the table served.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, NamedTuple

from kward.rpc.params import Params
from kward.rpc.redaction import CONTENT, EVENTS, FULL

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.connection import Connection
    from kward.runtime import Runtime


Handler = Callable[["Call"], Any]


class Method(NamedTuple):
    target: str | Handler  # the handler's full dotted name (imported on first use), or the handler itself
    slow: bool = False
    redaction: str = FULL  # CONTENT: the result is conversation (names, messages, transcripts)
    opens_session: bool = False  # its success gives the client a session: turns may follow (the warm-up)


METHODS: dict[str, Method] = {
    # lifecycle (methods/lifecycle.py)
    "initialize": Method("kward.rpc.methods.lifecycle.initialize"),
    "initialized": Method("kward.rpc.methods.lifecycle.initialized"),
    "shutdown": Method("kward.rpc.methods.lifecycle.shutdown"),
    "$/ping": Method("kward.rpc.methods.lifecycle.ping"),  # the heartbeat: quick, answered on the dispatcher
    # the protocol's schema (experimental; methods/lifecycle.py): built on demand, off the dispatcher
    "rpc/schema": Method("kward.rpc.methods.lifecycle.schema", slow=True, redaction=CONTENT),  # (no secret in it)
    # workspace (methods/workspace.py)
    "workspace/validate": Method("kward.rpc.methods.workspace.validate"),
    "workspace/info": Method("kward.rpc.methods.workspace.info"),
    # config (methods/config.py)
    "config/read": Method("kward.rpc.methods.config.read"),
    "config/update": Method("kward.rpc.methods.config.update", slow=True),
    # sessions (methods/sessions.py)
    "sessions/create": Method("kward.rpc.methods.sessions.create", slow=True, redaction=CONTENT,
                             opens_session=True),
    "sessions/resume": Method("kward.rpc.methods.sessions.resume", slow=True, redaction=CONTENT,
                             opens_session=True),
    "sessions/list": Method("kward.rpc.methods.sessions.list_", slow=True, redaction=CONTENT),
    "sessions/rename": Method("kward.rpc.methods.sessions.rename", redaction=CONTENT),
    "sessions/clone": Method("kward.rpc.methods.sessions.clone", slow=True, redaction=CONTENT,
                             opens_session=True),
    "sessions/compact": Method("kward.rpc.methods.sessions.compact", slow=True, redaction=CONTENT),
    "sessions/forkMessages": Method("kward.rpc.methods.sessions.fork_messages", slow=True, redaction=CONTENT),
    "sessions/fork": Method("kward.rpc.methods.sessions.fork", slow=True, redaction=CONTENT,
                             opens_session=True),
    "sessions/export": Method("kward.rpc.methods.sessions.export", slow=True, redaction=CONTENT),
    "sessions/delete": Method("kward.rpc.methods.sessions.delete", slow=True),
    "sessions/close": Method("kward.rpc.methods.sessions.close", slow=True),
    "sessions/transcript": Method("kward.rpc.methods.transcript.transcript", slow=True, redaction=CONTENT),
    "sessions/diff": Method("kward.rpc.methods.sessions.diff", slow=True, redaction=CONTENT),  # reads files
    "sessions/attach": Method("kward.rpc.methods.sessions.attach", redaction=CONTENT),
    "sessions/detach": Method("kward.rpc.methods.sessions.detach"),
    # turns (methods/turns.py)
    "turns/start": Method("kward.rpc.methods.turns.start"),
    "turns/cancel": Method("kward.rpc.methods.turns.cancel"),
    "turns/status": Method("kward.rpc.methods.turns.status"),
    "turns/events": Method("kward.rpc.methods.turns.events", redaction=EVENTS),
    "ui/answerQuestion": Method("kward.rpc.methods.ui.answer_question"),
    # tools and runtime (methods/tools.py, methods/runtime.py)
    "tools/list": Method("kward.rpc.methods.tools.list_", slow=True),  # may load the skills and plugins
    "mcp/status": Method("kward.rpc.methods.tools.mcp_status"),
    "runtime/state": Method("kward.rpc.methods.runtime.state"),
    "runtime/stats": Method("kward.rpc.methods.runtime.stats", slow=True),
    # models (methods/models.py)
    "models/list": Method("kward.rpc.methods.models.list_", slow=True),
    "models/current": Method("kward.rpc.methods.models.current"),
    "models/set": Method("kward.rpc.methods.models.set_model", slow=True),
    "reasoning/set": Method("kward.rpc.methods.models.set_reasoning", slow=True),
    "openrouter/catalog": Method("kward.rpc.methods.models.openrouter_catalog", slow=True),
    "runtime/updateSetting": Method("kward.rpc.methods.models.update_setting", slow=True),
    "runtime/reload": Method("kward.rpc.methods.models.reload", slow=True),
    # auth (methods/auth.py): the credential store may be the OS keyring (D-Bus), logins bind
    # a port and wait for the token endpoint: all slow but the status of a login
    "auth/status": Method("kward.rpc.methods.auth.status", slow=True),
    "auth/providers": Method("kward.rpc.methods.auth.providers", slow=True),
    "auth/loginWithApiKey": Method("kward.rpc.methods.auth.login_with_api_key", slow=True),
    "auth/logoutProvider": Method("kward.rpc.methods.auth.logout_provider", slow=True),
    "auth/loginWithOAuth": Method("kward.rpc.methods.auth.login_with_oauth", slow=True),
    "auth/startOpenAILogin": Method("kward.rpc.methods.auth.start_openai_login", slow=True),
    "auth/submitOpenAICode": Method("kward.rpc.methods.auth.submit_openai_code", slow=True),
    "auth/loginStatus": Method("kward.rpc.methods.auth.login_status"),
    # memory (methods/memory.py)
    "memory/status": Method("kward.rpc.methods.memory.status"),
    "memory/enable": Method("kward.rpc.methods.memory.enable", slow=True),
    "memory/disable": Method("kward.rpc.methods.memory.disable", slow=True),
    "memory/autoSummary/enable": Method("kward.rpc.methods.memory.auto_summary_enable", slow=True),
    "memory/autoSummary/disable": Method("kward.rpc.methods.memory.auto_summary_disable", slow=True),
    "memory/list": Method("kward.rpc.methods.memory.list_", slow=True),
    "memory/add": Method("kward.rpc.methods.memory.add", slow=True),
    "memory/addCore": Method("kward.rpc.methods.memory.add_core", slow=True),
    "memory/forget": Method("kward.rpc.methods.memory.forget", slow=True),
    "memory/promote": Method("kward.rpc.methods.memory.promote", slow=True),
    "memory/relax": Method("kward.rpc.methods.memory.relax", slow=True),
    "memory/inspect": Method("kward.rpc.methods.memory.inspect", slow=True),
    "memory/why": Method("kward.rpc.methods.memory.why", slow=True),
    "memory/summarize": Method("kward.rpc.methods.memory.summarize", slow=True),
    # telemetry (methods/telemetry.py)
    "logging/stats": Method("kward.rpc.methods.telemetry.stats", slow=True),
    "logging/tokenCsv": Method("kward.rpc.methods.telemetry.token_csv", slow=True),
    # prompt templates, skills, plugins (methods/resources.py): slow, they may load plugins
    "commands/list": Method("kward.rpc.methods.resources.commands", slow=True),
    "commands/run": Method("kward.rpc.methods.resources.run_command", slow=True, redaction=CONTENT),
    "resources/startup": Method("kward.rpc.methods.resources.startup", slow=True),
    "prompts/list": Method("kward.rpc.methods.resources.prompts", slow=True),
    "prompts/expand": Method("kward.rpc.methods.resources.expand", slow=True, redaction=CONTENT),
}


class Call(NamedTuple):
    """One request as a handler sees it. `id` is None for notifications. `runtime` is the
    core; `conn` the client's connection (its initialize state, notifications, the stop
    of `shutdown`, backpressure); `methods` the table being served. `deferred` (the
    server gives each call its own list, and runs it after the answer is queued) holds
    what `after_answer` put off."""

    runtime: "Runtime"
    conn: "Connection"
    methods: "MethodTable"
    params: Params
    deferred: list[Callable[[], None]]
    id: Any = None
    trace: dict[str, str] | None = None

    def after_answer(self, then: Callable[[], None]) -> None:
        """Run `then` once the answer to this call (its response or error) is queued to
        the writer, on the thread that ran the handler: a notification it sends is written
        after the answer."""
        self.deferred.append(then)


class Unredacted(NamedTuple):
    """Wrap a result that must reach the client unredacted (`config/read` with
    `redacted: false`). Nothing else may use it."""

    value: Any


class MethodTable:
    """Wire names and their Methods; handlers resolved on first use.

    Thread contract: `register` before the server serves (or on its dispatcher thread);
    lookups from any thread (a handler is resolved at most a few times, harmlessly)."""

    def __init__(self, methods: Mapping[str, Method] | None = None):
        self._methods: dict[str, Method] = dict(METHODS if methods is None else methods)
        self._handlers: dict[str, Handler] = {}

    def register(self, name: str, handler: str | Handler, *, slow: bool = False, redaction: str = FULL,
                 opens_session: bool = False) -> None:
        """Add (or replace) the method `name`: a handler function or its full dotted name."""
        self._methods[name] = Method(handler, slow=slow, redaction=redaction, opens_session=opens_session)
        self._handlers.pop(name, None)

    def get(self, name: str) -> Method | None:
        return self._methods.get(name)

    def handler(self, name: str) -> Handler:
        """The handler of a registered method (imported on first use). KeyError if unknown."""
        fn = self._handlers.get(name)
        if fn is None:
            target = self._methods[name].target
            if callable(target):
                fn = target
            else:  # a full dotted name
                module, _, function = target.rpartition(".")
                fn = getattr(importlib.import_module(module), function)
            self._handlers[name] = fn
        return fn

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._methods))

    def __len__(self) -> int:
        return len(self._methods)


def default_table() -> MethodTable:
    """A new table of every method in METHODS."""
    return MethodTable(METHODS)
