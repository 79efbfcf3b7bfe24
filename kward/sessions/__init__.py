"""Sessions: the JSONL store, live session state, listing, clone/fork, export, transcript.

Public entry points:

- `SessionManager` (``kward.sessions.manager``): the process-wide registry of open RPC
  sessions and every ``sessions/*`` operation, in Python terms.
- `SessionHandle` (``kward.sessions.handle``): one RPC session id; what the agent loop and
  the RPC methods use (``append_message``, ``append_record``, ``conversation``,
  ``read_paths``, ``turn_lock``...). Several ids may share one file.
- `OpenSession` (``kward.sessions.session``): one session file this process has open
  (descriptor, live state, locks), shared by every handle on it.
- ``kward.sessions.opening``: `create_session`, `load_session`, `derive_session` (no registry).
- `SessionFile` (``kward.sessions.store``): the append-only file with its locks.
- ``kward.sessions.codec``: the one converter between the typed messages of
  ``kward.model`` and the records of session files.

This package knows nothing of JSON-RPC; it raises the classes of ``kward.errors``.
"""

from kward.sessions.handle import SessionHandle
from kward.sessions.manager import SessionManager
from kward.sessions.opening import create_session, derive_session, load_session
from kward.sessions.session import OpenSession
from kward.sessions.store import SessionFile

__all__ = ["OpenSession", "SessionFile", "SessionHandle", "SessionManager", "create_session", "derive_session", "load_session"]
