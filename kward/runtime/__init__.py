"""The runtime facade: the one core object both faces drive (the RPC server, and through
it the terminal, `kward.client` and embedding tools).

`Runtime` (kward/runtime/facade.py) owns the session manager, the turn manager, the model
service, the question broker, the agent engine and the settings of one process, and
offers what a face needs: open, resume, close and delete sessions (closing cancels the
session's turns and waits for them), start and cancel turns with an event sink, session
state and stats (`kward.runtime.state`, imported on first use), model, reasoning and settings changes, reload,
the tools list, question answers and shutdown. `runtime.memory` (kward.runtime.memory) and
`runtime.telemetry` (kward.runtime.telemetry) are its memory and telemetry parts,
`runtime.auth` (kward.runtime.auth) its credentials and logins, and `runtime.resources`
(kward.runtime.resources) its prompt templates, skills, plugin commands and startup
listing, `runtime.compaction` (kward.runtime.compaction) manual and automatic compaction;
its planner (kward.runtime.planner) resolves what each turn does, and kward.runtime.changes
makes the notices of a session's new name or usage and a session's diff. It knows nothing of
JSON-RPC: it reports
through the callables it is built with (turn events to an event sink, the notices of
`kward.runtime.notices` to `notify`), raises the classes of `kward.errors`, and returns
core objects or plain data the face shapes. Nothing here imports `kward.rpc`.
"""

from kward.runtime.facade import Runtime
from kward.runtime.startup import RuntimeInfo

__all__ = ["Runtime", "RuntimeInfo"]  # notices and state types: kward.runtime.notices, kward.runtime.state
