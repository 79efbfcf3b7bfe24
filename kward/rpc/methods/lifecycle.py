"""initialize, initialized, shutdown, $/ping, rpc/schema."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Iterable, TypedDict

from kward import __version__
from kward.errors import InvalidParams
from kward.rpc import capabilities
from kward.rpc.method_table import Call

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.lifecycle import InitializeResult, InitializeWarning, PingResult, Platform, RpcSchemaResult


#: what a listening server does with a connection's turns when it closes (initialize's
#: `capabilities.closeBehavior`): they go on (the default), or they are cancelled
CLOSE_BEHAVIORS = ("keepTurns", "cancelTurns")


def initialize(call: Call) -> InitializeResult:
    p = call.params
    p.mapping("clientInfo")  # checked (an object when given), not used
    client_caps = p.mapping("capabilities", {})
    opt_out = client_caps.get("optOutNotificationMethods", [])
    if not isinstance(opt_out, list) or not all(isinstance(m, str) for m in opt_out):
        raise InvalidParams("Invalid params: 'capabilities.optOutNotificationMethods' must be an array of strings",
                            data={"param": "capabilities.optOutNotificationMethods"})
    experimental = client_caps.get("experimentalApi", False)
    if not isinstance(experimental, bool):
        raise InvalidParams("Invalid params: 'capabilities.experimentalApi' must be true or false",
                            data={"param": "capabilities.experimentalApi"})
    answers = client_caps.get("serverRequests", [])
    if not isinstance(answers, list) or not all(isinstance(m, str) for m in answers):
        raise InvalidParams("Invalid params: 'capabilities.serverRequests' must be an array of strings",
                            data={"param": "capabilities.serverRequests"})
    close_behavior = client_caps.get("closeBehavior", "keepTurns")
    if close_behavior not in CLOSE_BEHAVIORS:
        raise InvalidParams("Invalid params: 'capabilities.closeBehavior' must be keepTurns or cancelTurns",
                            data={"param": "capabilities.closeBehavior"})
    conn = call.conn
    conn.close_behavior = close_behavior
    conn.opt_out = frozenset(opt_out)
    conn.server_requests = frozenset(answers)
    conn.experimental = experimental
    changes = conn.runtime_changes
    info = call.runtime.info()  # problems are reported as warnings, never fatal for initialize
    warnings: list[InitializeWarning] = [{"reason": reason, "message": message} for reason, message in info.warnings]
    facts = capabilities.facts(info)._replace(experimental_client=experimental, listening=conn.hub is not None)
    result = _result(facts, warnings, call.methods, str(call.runtime.paths.config_dir))
    # what runtime/capabilitiesChanged compares with, from when the client has it
    call.after_answer(lambda: conn.capabilities_answered(dict(result["capabilities"]), changes))
    return result


def _result(facts: capabilities.RuntimeFacts, warnings: list[InitializeWarning], methods: Iterable[str],
            config_dir: str) -> InitializeResult:
    """The `initialize` result."""
    facts_of_process = handshake(config_dir)
    result: InitializeResult = {
        "protocolVersion": 1,
        "serverName": "kward",
        "serverVersion": __version__,
        "experimental": True,
        "capabilities": capabilities.build(methods, facts),
        "userAgent": facts_of_process["userAgent"],
        "configDir": facts_of_process["configDir"],
        "platform": facts_of_process["platform"],
    }
    if warnings:
        result["warnings"] = warnings
    return result


def platform_facts() -> Platform:
    """`{os, family}`: ``linux``, ``macos``, ``windows`` or the OS's own lower-case name;
    ``unix`` or ``windows``."""
    if sys.platform == "win32":
        return {"os": "windows", "family": "windows"}
    name = os.uname().sysname.lower()
    return {"os": "macos" if name == "darwin" else name, "family": "unix"}


class Handshake(TypedDict):
    userAgent: str
    configDir: str
    platform: Platform


def handshake(config_dir: str) -> Handshake:
    """The facts of the process a client shows or logs (additions): `userAgent`
    (``kward/<version> (<os>; Python <version>)``), `configDir` and `platform`."""
    facts = platform_facts()
    python = ".".join(str(n) for n in sys.version_info[:3])
    return {"userAgent": f"kward/{__version__} ({facts['os']}; Python {python})", "configDir": config_dir,
            "platform": facts}


def schema(call: Call) -> RpcSchemaResult:
    """`rpc/schema` (experimental): `{schema}`, what `kward rpc --print-schema` prints."""
    from kward.rpc import schema as generated  # (the shapes are loaded only now)

    return {"schema": generated.build()}


def initialized(call: Call) -> None:
    """The client's `initialized` notification: nothing to do."""


def ping(call: Call) -> PingResult:
    """`$/ping`: answered on the dispatcher at once, whatever the workers are doing."""
    runtime, hub = call.runtime, call.conn.hub
    return {"pong": True, "pid": os.getpid(), "connections": hub.count() if hub is not None else 1,
            "activeTurns": runtime.turns.active() if runtime.has_service("turns") else 0}


def shutdown(call: Call) -> dict[str, bool]:
    call.conn.request_stop()
    return {"ok": True}
