"""The method table: every wire method name beside the handler that serves it.

`METHODS` is the one list of the methods kward serves. Handlers live in
`kward/rpc/methods/<namespace>.py` and are imported on first use, so start-up cost does not
grow with the number of methods. A handler is `def handler(call: Call) -> result` and is a
thin adapter: it validates params through `call.params`, calls the runtime
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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from kward.rpc.params import Params
from kward.rpc.redaction import CONTENT, EVENTS, FULL, SHAPED

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.connection import Connection
    from kward.runtime import Runtime

    Handler = Callable[["Call"], Any]



@dataclass(frozen=True, slots=True)
class Method:
    target: "str | Handler"  # "module:function" inside kward.rpc.methods, or the handler itself
    slow: bool = False
    redaction: str = FULL  # CONTENT: the result is conversation (names, messages, transcripts)


METHODS: dict[str, Method] = {
    # lifecycle (methods/lifecycle.py)
    "initialize": Method("lifecycle:initialize", redaction=SHAPED),
    "initialized": Method("lifecycle:initialized"),
    "shutdown": Method("lifecycle:shutdown"),
    # workspace (methods/workspace.py)
    "workspace/validate": Method("workspace:validate"),
    "workspace/info": Method("workspace:info"),
    # config (methods/config.py)
    "config/read": Method("config:read"),
    "config/update": Method("config:update", slow=True),
    # sessions (methods/sessions.py)
    "sessions/create": Method("sessions:create", slow=True, redaction=CONTENT),
    "sessions/resume": Method("sessions:resume", slow=True, redaction=CONTENT),
    "sessions/list": Method("sessions:list_", slow=True, redaction=CONTENT),
    "sessions/rename": Method("sessions:rename", redaction=CONTENT),
    "sessions/clone": Method("sessions:clone", slow=True, redaction=CONTENT),
    "sessions/compact": Method("sessions:compact", slow=True, redaction=CONTENT),
    "sessions/forkMessages": Method("sessions:fork_messages", slow=True, redaction=CONTENT),
    "sessions/fork": Method("sessions:fork", slow=True, redaction=CONTENT),
    "sessions/export": Method("sessions:export", slow=True, redaction=CONTENT),
    "sessions/delete": Method("sessions:delete", slow=True),
    "sessions/close": Method("sessions:close", slow=True),
    "sessions/transcript": Method("sessions:transcript", slow=True, redaction=CONTENT),
    # turns (methods/turns.py)
    "turns/start": Method("turns:start"),
    "turns/cancel": Method("turns:cancel"),
    "turns/status": Method("turns:status"),
    "turns/events": Method("turns:events", redaction=EVENTS),
    "ui/answerQuestion": Method("ui:answer_question"),
    # tools and runtime (methods/tools.py, methods/runtime.py)
    "tools/list": Method("tools:list_", slow=True),  # may load the skills and plugins
    "runtime/state": Method("runtime:state"),
    "runtime/stats": Method("runtime:stats", slow=True),
    # models (methods/models.py)
    "models/list": Method("models:list_", slow=True),
    "models/current": Method("models:current"),
    "models/set": Method("models:set_model", slow=True),
    "reasoning/set": Method("models:set_reasoning", slow=True),
    "openrouter/catalog": Method("models:openrouter_catalog", slow=True),
    "runtime/updateSetting": Method("models:update_setting", slow=True),
    "runtime/reload": Method("models:reload", slow=True),
    # auth (methods/auth.py): the credential store may be the OS keyring (D-Bus), logins bind
    # a port and wait for the token endpoint: all slow but the status of a login
    "auth/status": Method("auth:status", slow=True),
    "auth/providers": Method("auth:providers", slow=True),
    "auth/loginWithApiKey": Method("auth:login_with_api_key", slow=True),
    "auth/logoutProvider": Method("auth:logout_provider", slow=True),
    "auth/loginWithOAuth": Method("auth:login_with_oauth", slow=True),
    "auth/startOpenAILogin": Method("auth:start_openai_login", slow=True),
    "auth/submitOpenAICode": Method("auth:submit_openai_code", slow=True),
    "auth/loginStatus": Method("auth:login_status"),
    # memory (methods/memory.py)
    "memory/status": Method("memory:status"),
    "memory/enable": Method("memory:enable", slow=True),
    "memory/disable": Method("memory:disable", slow=True),
    "memory/autoSummary/enable": Method("memory:auto_summary_enable", slow=True),
    "memory/autoSummary/disable": Method("memory:auto_summary_disable", slow=True),
    "memory/list": Method("memory:list_", slow=True),
    "memory/add": Method("memory:add", slow=True),
    "memory/addCore": Method("memory:add_core", slow=True),
    "memory/forget": Method("memory:forget", slow=True),
    "memory/promote": Method("memory:promote", slow=True),
    "memory/relax": Method("memory:relax", slow=True),
    "memory/inspect": Method("memory:inspect", slow=True),
    "memory/why": Method("memory:why", slow=True),
    "memory/summarize": Method("memory:summarize", slow=True),
    # telemetry (methods/telemetry.py)
    "logging/stats": Method("telemetry:stats", slow=True),
    "logging/tokenCsv": Method("telemetry:token_csv", slow=True),
    # prompt templates, skills, plugins (methods/resources.py): slow, they may load plugins
    "commands/list": Method("resources:commands", slow=True),
    "commands/run": Method("resources:run_command", slow=True, redaction=CONTENT),
    "resources/startup": Method("resources:startup", slow=True),
    "prompts/list": Method("resources:prompts", slow=True),
    "prompts/expand": Method("resources:expand", slow=True, redaction=CONTENT),
}


@dataclass(frozen=True, slots=True)
class Call:
    """One request as a handler sees it. `id` is None for notifications. `runtime` is the
    core; `conn` the client's connection (its initialize state, notifications, the stop
    of `shutdown`, backpressure); `methods` the table being served."""

    runtime: "Runtime"
    conn: "Connection"
    methods: "MethodTable"
    params: Params
    id: Any = None
    trace: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Unredacted:
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

    def register(self, name: str, handler: "str | Handler", *, slow: bool = False, redaction: str = FULL) -> None:
        """Add (or replace) the method `name`: a handler function or a "module:function"
        target inside kward.rpc.methods."""
        self._methods[name] = Method(handler, slow=slow, redaction=redaction)
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
            else:
                module, _, func = target.partition(":")
                # __import__ with a fromlist returns the submodule itself (importlib is not imported
                # to answer `initialize`: it imports warnings)
                fn = getattr(__import__(f"kward.rpc.methods.{module}", fromlist=[func]), func)
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
