"""`runtime.memory`: the memory operations of the runtime facade, and what normal session
turns get of them (the runtime's planner, `kward.runtime.planner`, calls `prepare` and
`after_turn`).

The store is `kward.memory.store.MemoryStore` in `<config dir>/memory`. The switches are
config.json `memory.enabled` and `memory.auto_summary` (read live; each must be literally
`true`), written through `ConfigStore.update`.

A turn (`prepare`, when its instructions are first built) retrieves the memories
for its input when memory is enabled, records the retrieval in the session (a
`memory_state` record: the ids and reasons, never texts) and returns the `<kward_memory>`
block for the system prompt. After a completed turn (`after_turn`) auto-summary infers
soft memories from the user's messages when both switches are on; quietly: nothing is
reported to the client or printed, failures go to the log only. A session opened with
memory off (`exclude`, e.g. the one a one-shot prompt runs in) gets none of this.

Results are typed (`MemoryStatus`, `MemoryListing`, `MemoryInspection`, `MemoryWhy`, and
the `kward.memory.records.Memory` values of adds, promotions and relaxations): the RPC
face shapes them (`kward.rpc.wire.memory`).

Thread contract: any thread; the store locks itself, `_latest` is one reference written
and read whole.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kward.config.settings import LiveSettings, MemorySettings
from kward.errors import InvalidParams, MemoryStoreError
from kward.memory import infer, records, retrieval
from kward.memory.records import Memory
from kward.memory.retrieval import RetrievalState
from kward.memory.store import MemoryStore
from kward.model import UserMessage
from kward.redact import redact_text
from kward.sessions.messages import content_text

if TYPE_CHECKING:  # pragma: no cover
    from kward.config.store import ConfigStore
    from kward.sessions.handle import SessionHandle

log = logging.getLogger(__name__)

MAX_TAG_ITEMS = 100


@dataclass(frozen=True, slots=True)
class MemoryStatus:
    """The switches (as read now) and the store's files."""

    enabled: bool
    auto_summary: bool
    core_path: Path
    soft_path: Path
    events_path: Path


@dataclass(frozen=True, slots=True)
class MemoryListing:
    """Every core and (active, or all) soft memory, and the hierarchy of one workspace."""

    core: list[Memory]
    soft: list[Memory]
    global_core: list[Memory]
    workspace_core: list[Memory]
    workspace_soft: list[Memory]
    global_soft: list[Memory]


@dataclass(frozen=True, slots=True)
class MemoryInspection:
    status: MemoryStatus
    core: list[Memory]
    soft: list[Memory]  # the inactive ones too


@dataclass(frozen=True, slots=True)
class MemoryWhy:
    """What `why` explains: `state` the retrieval (None: none has run, or memory was off
    for it), `core` and `soft` its memories still in the store; `message` and
    `explanation` are words for people."""

    enabled: bool
    message: str
    explanation: str
    state: RetrievalState | None
    core: list[Memory]
    soft: list[Memory]


class MemoryRuntime:
    """`workspace(root)` resolves a workspace root (None: the default one, the workspace of
    the client's current session, else the launch directory); `session(id)`
    gives an open session (SessionNotFound); `scrub` masks known secrets in a text."""

    def __init__(self, memory_dir: Path, config: ConfigStore, env: Mapping[str, str], *,
                 workspace: Callable[[str | None], Path], session: Callable[[str], SessionHandle],
                 scrub: Callable[[str], str]):
        self._config = config
        self._resolve_workspace = workspace
        self._session = session
        self._scrub = scrub
        self.store = MemoryStore(memory_dir)
        self._live = LiveSettings(config, env)
        self._latest: RetrievalState | None = None  # the last retrieval of this process
        self._off: weakref.WeakSet[SessionHandle] = weakref.WeakSet()

    # --- switches -----------------------------------------------------------------------

    def settings(self) -> MemorySettings:
        return self._live.current().memory

    def status(self) -> MemoryStatus:
        s = self.settings()
        store = self.store
        return MemoryStatus(s.enabled, s.auto_summary, store.core_path, store.soft_path, store.events_path)

    def set_enabled(self, enabled: bool) -> None:
        """Turning memory on creates the files first: a store that cannot be used fails it
        (MemoryStoreError) before config.json is written. The audit line after the switch
        is best-effort."""
        if enabled:
            self.store.ensure()
        self._write("enabled", enabled)
        self._audit("enable" if enabled else "disable")

    def set_auto_summary(self, enabled: bool) -> None:
        before = self.settings().auto_summary
        self._write("auto_summary", enabled)
        if before != enabled:
            self._audit("auto_summary_enable" if enabled else "auto_summary_disable")

    def _audit(self, event_type: str) -> None:
        """An events.jsonl line for a switch already written: a failure is logged, never
        answered (the switch is changed)."""
        try:
            self.store.event(event_type)
        except (OSError, MemoryStoreError) as exc:
            log.warning("memory event %s not written: %s", event_type, getattr(exc, "message", None) or exc)

    def _write(self, name: str, value: bool) -> None:
        group = self._config.load().get("memory")
        group = dict(group) if isinstance(group, dict) else {}
        group[name] = value
        self._config.update({"memory": group})

    # --- the store ----------------------------------------------------------------------

    def _workspace(self, root: str | None) -> str:
        return records.workspace_scope(str(self._resolve_workspace(root)))

    def _scope(self, scope: str | None, root: str | None) -> str:
        if (scope or "").strip() == "workspace":
            return self._workspace(root)
        return records.resolve_scope(scope, "")

    @staticmethod
    def _tags(tags: list[str] | None) -> list[str]:
        if tags is not None and (len(tags) > MAX_TAG_ITEMS or any(len(t) > 1000 for t in tags)):
            raise InvalidParams(f"Invalid params: 'tags' must be at most {MAX_TAG_ITEMS} strings of at most 1000 "
                                "characters", data={"param": "tags"})
        return records.clean_tags(tags)

    def listing(self, workspace_root: str | None = None, include_inactive: bool = False) -> MemoryListing:
        """Every memory (`core`, `soft`), and the hierarchy of one workspace."""
        workspace = self._workspace(workspace_root)
        core, soft = self.store.core(), self.store.soft(include_inactive)
        return MemoryListing(core, soft, [m for m in core if m.scope == "global"],
                             [m for m in core if m.scope == workspace], [m for m in soft if m.scope == workspace],
                             [m for m in soft if m.scope == "global"])

    def add(self, text: str, scope: str | None = None, tags: list[str] | None = None,
            workspace_root: str | None = None) -> Memory:
        """A new soft memory."""
        return self.store.add_soft(text, self._scope(scope, workspace_root), self._tags(tags))

    def add_core(self, text: str, scope: str | None = None, tags: list[str] | None = None,
                 workspace_root: str | None = None) -> Memory:
        return self.store.add_core(text, self._scope(scope, workspace_root), self._tags(tags))

    def forget(self, memory_id: str) -> bool:
        return self.store.forget(memory_id)

    def promote(self, memory_id: str) -> Memory:
        return self.store.promote(memory_id)

    def relax(self, memory_id: str, workspace_root: str | None = None) -> Memory:
        return self.store.relax(memory_id, self._workspace(workspace_root))

    def inspect(self) -> MemoryInspection:
        return MemoryInspection(self.status(), self.store.core(), self.store.soft(include_inactive=True))

    # --- why and summarize --------------------------------------------------------------

    def why(self, session_id: str | None = None) -> MemoryWhy:
        """The session's last retrieval (kept in its file: it survives a resume and is seen
        by other processes), else this process's last one, else a no-retrieval message."""
        state = None
        if session_id is not None:
            memory_state = self._session(session_id).memory_state
            state = retrieval.read_state(memory_state.get("lastRetrieval") if memory_state is not None else None)
        return self._explain(state if state is not None else self._latest)

    def _explain(self, state: RetrievalState | None) -> MemoryWhy:
        if state is None or not state.enabled:
            enabled = self.settings().enabled if state is None else False
            message = retrieval.NO_RETRIEVAL if state is None else "Memory was disabled: nothing was retrieved."
            return MemoryWhy(enabled, message, message, None, [], [])
        core = [m for m in (self.store.find(i) for i in state.core_ids) if m is not None]
        soft = [m for m in (self.store.find(i) for i in state.soft_ids) if m is not None]
        return MemoryWhy(True, f"The last turn was given {len(core)} core and {len(soft)} soft memories.",
                         retrieval.explain(state.reasons), state, core, soft)

    def summarize(self, session_id: str) -> list[Memory]:
        """Infer soft memories from the user's messages of the session (see kward.memory.infer)."""
        return self._summarize(self._session(session_id))

    def _summarize(self, session: SessionHandle) -> list[Memory]:
        text = "\n".join(content_text(m.content, "\n") for m in session.entry_messages() if isinstance(m, UserMessage))
        state = session.memory_state
        known = [m for m in _session_memories(state) if isinstance(m, dict)]
        scope = records.workspace_scope(session.workspace_root)
        scrub = self._scrub
        added = []
        for candidate in infer.candidates(text):
            candidate = redact_text(scrub(candidate))
            if any(records.same_text(m.get("text"), candidate) for m in known):
                continue
            memory = self.store.add_soft_if_new(candidate, scope, ["workflow"], confidence=records.INFERRED_CONFIDENCE,
                                                source="inferred")
            if memory is not None:
                added.append(memory)
                known.append({"id": memory.id, "text": memory.text, "scope": memory.scope, "tags": list(memory.tags)})
        if added:
            session.append_record("memory_state", sessionMemories=known,
                                  lastRetrieval=state.get("lastRetrieval") if state is not None else None)
        return added

    # --- what turns get (the planner's calls, on the turn's worker thread) ------------

    def exclude(self, session: SessionHandle) -> None:
        """Turns of this session (an RPC id's handle) use no memory at all."""
        self._off.add(session)

    def prepare(self, query: str, session: SessionHandle) -> str | None:
        """Retrieve the memories for a turn's input; the prompt block, or None. Never raises."""
        if session in self._off:
            return None
        try:
            if not self.settings().enabled:
                self._latest = RetrievalState(False)
                return None
            result = self.store.retrieve(query, ["global", records.workspace_scope(session.workspace_root)])
            state = result.state()
            self._latest = state
            session.append_record("memory_state", sessionMemories=list(_session_memories(session.memory_state)),
                                  lastRetrieval=retrieval.state_record(state))
            return retrieval.memory_block(result)
        except Exception as exc:  # memory must never stop a turn
            log.warning("memory retrieval failed: %s", getattr(exc, "message", None) or repr(exc))
            return None

    def after_turn(self, session: SessionHandle) -> None:
        """After a completed turn: auto-summary (both switches on), pending hit counts."""
        if session in self._off:
            return
        try:
            settings = self.settings()
            if settings.enabled and settings.auto_summary:
                self._summarize(session)
            self.store.flush_if_due()
        except Exception:
            log.debug("memory after the turn failed", exc_info=True)

    def shutdown(self) -> None:
        try:
            self.store.flush()
        except Exception:
            log.warning("could not write the memory hit counts", exc_info=True)


def _session_memories(state: Mapping[str, object] | None) -> list[object]:
    """The `sessionMemories` of a session's `memory_state` (JSON values; [] when it holds none)."""
    memories = state.get("sessionMemories") if state is not None else None
    return memories if isinstance(memories, list) else []
