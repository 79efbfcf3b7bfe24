"""Opening sessions: create a new file, load an existing one, derive a clone or fork.

Each function returns an OpenSession that no registry knows yet (SessionManager registers
it). Safe from any thread; the work happens on the calling thread.
"""

from __future__ import annotations

import contextlib
import gc
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from kward.errors import PathNotAllowed
from kward.model import Message
from kward.sessions.descriptors import DEFAULT_POOL
from kward.sessions.fdretry import out_of_descriptors
from kward.sessions.format import SessionHeader, clean_name
from kward.sessions.paths import workspace_session_dir
from kward.sessions.presence import PROCESS_TABLE, PresenceTable
from kward.sessions.reader import SessionReader
from kward.sessions.replay import Replay
from kward.sessions.session import OpenSession
from kward.sessions.store import SessionFile
from kward.timefmt import iso_ms


def new_session_name(now: datetime | None = None) -> tuple[str, str, str]:
    """(file name, session uuid, header timestamp) for a session created now."""
    now = now or datetime.now(timezone.utc)
    stamp = iso_ms(now)
    session_id = str(uuid.uuid4())
    return f"{stamp.replace(':', '-')}_{session_id}.jsonl", session_id, stamp

def create_session(sessions_dir: Path, workspace_root: str, *, name: str | None = None,
                   model: str | None = None, reasoning_effort: str | None = None,
                   parent: OpenSession | None = None, presence: PresenceTable = PROCESS_TABLE) -> OpenSession:
    """A new session file in the workspace's session directory (header fsynced)."""
    file_name, session_id, stamp = new_session_name()
    header = SessionHeader(id=session_id, timestamp=stamp, cwd=workspace_root, model=model,
                           reasoning_effort=reasoning_effort,
                           parent_id=parent.persistent_id if parent else None,
                           parent_path=parent.path if parent else None)
    file = SessionFile.create(workspace_session_dir(sessions_dir, workspace_root), file_name, header, presence)
    session = OpenSession(file, header, Replay(header, workspace_root), file.descriptor.size(), workspace_root)
    if clean_name(name) is not None:
        session.rename(name)
        session.sync()
    return session


@contextlib.contextmanager
def _opening(path: str) -> Iterator[None]:
    """An OSError opening `path` is PathNotAllowed, unless the process is out of
    descriptors (that goes up as it is: ``too_many_open_files``, nothing wrong with the file)."""
    try:
        yield
    except OSError as exc:
        if out_of_descriptors(exc):
            raise
        raise PathNotAllowed(f"Cannot open session file {path}: {exc.strerror}", data={"path": path}) from None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the block, when it was running.

    A replay makes one GC-tracked object per message and no cycles; on a file of many
    short messages the collector's full passes over all of them so far would double the
    load. Other threads only get their cyclic garbage collected a little later. Loads on
    several threads leave it running: only one that found it running resumes it."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def load_session(path: str, root: str | Callable[[SessionHeader], str], *,
                 presence: PresenceTable = PROCESS_TABLE) -> OpenSession:
    """Open an existing session file (InvalidParams when it is not a kward session).

    The header is checked read-only first: only a kward session is then opened for
    appending and gets a presence lock (a README.md is refused untouched). `root` is the
    workspace root, or a function of the header that decides it (`paths.resume_root`).
    An unopenable file (e.g. not writable) is PathNotAllowed.
    """
    reader = SessionReader(path, DEFAULT_POOL)
    with _opening(path):
        reader.__enter__()
    try:
        header = reader.header
        assert header is not None
        workspace_root = root(header) if callable(root) else root
        with _opening(path):
            file = SessionFile.open(Path(path), reader.identity, presence)
        try:
            replay = Replay(header, workspace_root)
            with _collector_paused():
                for record in reader.records():
                    if not replay.apply(record):
                        reader.report.note("invalid", reader.where)
            reader.report.emit()
        except BaseException:
            file.close()
            raise
    finally:
        reader.__exit__(None, None, None)
    return OpenSession(file, header, replay, reader.end_offset, workspace_root, skipping=reader.skipping)


def derive_session(sessions_dir: Path, source: OpenSession, messages: list[Message],
                   read_paths: set[str] | None = None, presence: PresenceTable = PROCESS_TABLE, *,
                   keep_name: bool = True) -> OpenSession:
    """A clone/fork of `source`: new file with parentId/parentPath, the source's name (unless
    not `keep_name`) and runtime, then `messages` re-appended. `read_paths` replaces the
    rebuilt read state when given. The source file is untouched."""
    session = create_session(sessions_dir, source.workspace_root, name=source.name if keep_name else None,
                             model=source.model,
                             reasoning_effort=source.reasoning_effort, parent=source, presence=presence)
    try:
        for message in messages:
            session.append_message(message)
        if read_paths is not None:
            session.read_paths.clear()
            session.read_paths.update(read_paths)
        session.sync()
    except BaseException:
        session.delete()
        raise
    return session
