"""One RPC session id: a light handle on the OpenSession this process has on that file.

Resuming a file this process already has open gives a new RPC id on the same OpenSession
(`kward.sessions.manager`): one descriptor, one live state, one writer, and (in
``kward.agent.scheduler``) one turn queue and one cross-process turn lock behind every id.
A handle adds only its id and whether that id was closed; everything else is the shared
session's. Closing an id closes the file only when it was the last id on it.

Thread contract: `detach` is called by the SessionManager under its lock; everything
else delegates to the OpenSession, whose own lock guards the state (any thread).
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from kward.errors import SessionNotFound
from kward.model import Message, ToolCall, ToolResult, Usage
from kward.sessions.replay import MemoryState
from kward.sessions.session import OpenSession, SessionInfo


class SessionHandle:
    """The RPC session `id` over `shared`. `opened` is the session as it was when the id
    was opened (what sessions/create, resume, clone and fork answer), taken before any
    cleanup of another request could remove the file."""

    def __init__(self, shared: OpenSession, rpc_id: str | None = None):
        self.id = rpc_id or str(uuid.uuid4())
        self.shared = shared
        self._opened: SessionInfo | None = None  # set by the manager before it hands the id out
        self._detached = False

    @property
    def opened(self) -> SessionInfo:
        """The session as it was when this id was opened (the manager takes it before the
        handle leaves it)."""
        assert self._opened is not None, "a SessionHandle is handed out once it was announced"
        return self._opened

    @opened.setter
    def opened(self, info: SessionInfo) -> None:
        self._opened = info

    def detach(self) -> None:
        """This id is closed (the file may stay open for other ids)."""
        self._detached = True

    @property
    def closed(self) -> bool:
        return self._detached or self.shared.closed

    def info(self) -> SessionInfo:
        """The session with this RPC id; SessionNotFound once the id is closed."""
        if self.closed:
            raise SessionNotFound(self.id)
        return replace(self.shared.info(), id=self.id)

    # --- the shared session's views (see OpenSession) --------------------------------

    @property
    def path(self) -> str:
        return self.shared.path

    @property
    def persistent_id(self) -> str:
        return self.shared.persistent_id

    @property
    def workspace_root(self) -> str:
        return self.shared.workspace_root

    @property
    def name(self) -> str | None:
        return self.shared.name

    @property
    def conversation(self) -> list[Message]:
        return self.shared.conversation

    @property
    def read_paths(self) -> set[str]:
        return self.shared.read_paths

    @property
    def memory_state(self) -> MemoryState | None:
        return self.shared.memory_state

    @property
    def model(self) -> str | None:
        return self.shared.model

    @property
    def reasoning_effort(self) -> str | None:
        return self.shared.reasoning_effort

    @property
    def is_empty(self) -> bool:
        return self.shared.is_empty

    @property
    def busy(self) -> bool:
        return self.shared.busy

    def entry_messages(self) -> list[Message]:
        return self.shared.entry_messages()

    def snapshot(self) -> tuple[list[Message], set[str]]:
        return self.shared.snapshot()

    def spent(self) -> Usage:
        return self.shared.spent()

    def refresh(self) -> None:
        self.shared.refresh()

    # --- writing (the agent loop's SessionPort) --------------------------------------

    def append_message(self, message: Message) -> None:
        self.shared.append_message(message)

    def append_tool_execution(self, call: ToolCall, result: ToolResult) -> None:
        self.shared.append_tool_execution(call, result)

    def append_record(self, record_type: str, **fields: object) -> dict[str, Any]:
        return self.shared.append_record(record_type, **fields)

    def rename(self, name: str | None) -> None:
        self.shared.rename(name)

    def sync(self) -> None:
        """fsync; SessionFileGone when the file is no longer at its path."""
        self.shared.sync()

    def turn_lock(self) -> AbstractContextManager[OpenSession]:
        """The shared session's cross-process turn lock (kward.agent.scheduler takes it once
        per lane, for every id on the file)."""
        return self.shared.turn_lock()
