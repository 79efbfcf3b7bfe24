"""Sessions: the JSONL store, live session state, listing, clone/fork, export, transcript.

This package imports nothing itself: import what you use from the module that defines it,
so that a process that only lists sessions loads only the listing (`listing`).

- ``manager``: `SessionManager`, the process-wide registry of open RPC sessions and every
  ``sessions/*`` operation, in Python terms.
- ``handle``: `SessionHandle`, one RPC session id; what the agent loop and the RPC methods
  use (``append_message``, ``append_record``, ``conversation``, ``read_paths``,
  ``turn_lock``...). Several ids may share one file.
- ``session``: `OpenSession`, one session file this process has open (its file, live
  state, busy/closing bookkeeping, closing and deleting), shared by every handle on it;
  `SessionInfo`, what the faces show of a session.
- ``opening``: `create_session`, `load_session`, `derive_session` (no registry).
- ``store``: `SessionFile`, the append-only file with its presence and turn locks; it has
  a `PooledDescriptor`.
- ``descriptors``: the process-wide bound on the descriptors of open session files
  (`DescriptorPool`, `PooledDescriptor`).
- ``fdretry``: `out_of_descriptors`, and `retrying` an open once idle descriptors were
  given back (the pool is passed in).
- ``presence``: the presence locks that tell other processes a session is open.
- ``format``: the version-1 file format (header, record shapes, one line per record).
- ``codec``: the one converter between the typed messages of ``kward.model`` and the
  records of session files.
- ``lines``, ``reader``: bounded, forgiving reading of session files.
- ``replay``: the live state rebuilt from records (`Replay`).
- ``listing``: recent sessions of a workspace as a tree (`list_workspace`: no open session needed).
- ``entries``: entry ids and the live list after a compaction (no model types).
- ``messages``: helpers over a typed conversation (roles, ids, the texts forks read); the
  texts a listing shows are read from records by ``format``.
- ``paths``: where session files live, and resolving user-given paths.
- ``export``, ``export_target``: Markdown/HTML exports and where they may go.
- ``transcript``: what ``sessions/transcript`` reads of a session.

This package knows nothing of JSON-RPC; it raises the classes of ``kward.errors``.
"""
