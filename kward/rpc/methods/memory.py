"""memory/*: thin adapters onto `runtime.memory` (kward.runtime.memory).

`workspaceRoot` (optional, default the workspace of the session this connection created or
resumed last, else the launch directory: `Runtime.current_workspace`) names the workspace of the
hierarchy of `memory/list`, of the `workspace` scope of `memory/add` / `memory/addCore`
and of `memory/relax`. Unknown params are ignored. `memory/status` is answered on the
dispatcher thread, the others (`slow` in the method table) on the worker pool; the memory
runtime locks what it shares. The four switches answer the whole status, as it is after
the change (`memory/status`'s shape).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.memory.records import MAX_TEXT_CHARS
from kward.rpc.method_table import Call
from kward.rpc.wire import memory as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.memory import (MemoryForgetResult, MemoryInspectResult, MemoryListResult, MemoryRecordResult,
                                         MemoryStatus, MemorySummarizeResult, MemoryWhyResult)

_MAX_ID = 100


def status(call: Call) -> MemoryStatus:
    return wire.status(call.runtime.memory.status())


def enable(call: Call) -> MemoryStatus:
    call.runtime.memory.set_enabled(True)
    return status(call)


def disable(call: Call) -> MemoryStatus:
    call.runtime.memory.set_enabled(False)
    return status(call)


def auto_summary_enable(call: Call) -> MemoryStatus:
    call.runtime.memory.set_auto_summary(True)
    return status(call)


def auto_summary_disable(call: Call) -> MemoryStatus:
    call.runtime.memory.set_auto_summary(False)
    return status(call)


def list_(call: Call) -> MemoryListResult:
    p = call.params
    return wire.listing(call.runtime.memory.listing(p.text("workspaceRoot"), p.flag("includeInactive", False)))


def add(call: Call) -> MemoryRecordResult:
    p = call.params
    memory = call.runtime.memory.add(p.text("text", required=True, max_len=MAX_TEXT_CHARS * 2),
                                     p.text("scope", max_len=10_000), p.array("tags", of=str), p.text("workspaceRoot"))
    return {"memory": wire.memory(memory)}


def add_core(call: Call) -> MemoryRecordResult:
    p = call.params
    memory = call.runtime.memory.add_core(p.text("text", required=True, max_len=MAX_TEXT_CHARS * 2),
                                          p.text("scope", max_len=10_000), p.array("tags", of=str),
                                          p.text("workspaceRoot"))
    return {"memory": wire.memory(memory)}


def forget(call: Call) -> MemoryForgetResult:
    return {"forgotten": call.runtime.memory.forget(call.params.text("id", required=True, max_len=_MAX_ID))}


def promote(call: Call) -> MemoryRecordResult:
    return {"memory": wire.memory(call.runtime.memory.promote(call.params.text("id", required=True, max_len=_MAX_ID)))}


def relax(call: Call) -> MemoryRecordResult:
    p = call.params
    return {"memory": wire.memory(call.runtime.memory.relax(p.text("id", required=True, max_len=_MAX_ID),
                                                            p.text("workspaceRoot")))}


def inspect(call: Call) -> MemoryInspectResult:
    return wire.inspection(call.runtime.memory.inspect())


def why(call: Call) -> MemoryWhyResult:
    return wire.why(call.runtime.memory.why(call.params.text("sessionId")))


def summarize(call: Call) -> MemorySummarizeResult:
    return {"memories": wire.memories(call.runtime.memory.summarize(call.params.text("sessionId", required=True)))}
