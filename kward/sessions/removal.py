"""Closing and deleting an open session file: the part of `kward.sessions.session.OpenSession`
that decides whether a file may go, and makes it go.

Rules: a closed session is fsynced and its descriptor released (at once, or when its
running turn ends: `OpenSession.end_work`); an unused one (idle, empty, unnamed, still
ours at its path, and open in no other process) is deleted instead. `delete` removes the
file whatever it holds, refused (`session_in_use`) while another process has it open
unless forced; a file another one replaced at the path is never deleted
(`session_file_gone`). Whether another process has it open is asked under the turn lock
(`SessionFile.exclusive_presence`).

`SessionRemoval` is a base class of OpenSession, not used alone: it works on the
session's state (`_lock`, `_file`, `_busy`, `_closing`, `_finalized`, `_turn_lock_fd`)
under the session's lock, with the thread contract of kward.sessions.session.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Iterator

from kward.errors import SessionInUse, SessionNotFound
from kward.sessions.store import SessionFile, remove_session_files, try_turn_lock

log = logging.getLogger("kward.sessions.session")


class SessionRemoval:
    """Close and delete; see the module docstring (OpenSession sets the state)."""

    _lock: threading.RLock
    _file: SessionFile
    _busy: int
    _closing: bool
    _finalized: bool
    _turn_lock_fd: int | None
    path: str
    is_empty: bool

    def present(self) -> bool:  # pragma: no cover - OpenSession's
        raise NotImplementedError

    def refresh(self) -> None:  # pragma: no cover - OpenSession's
        raise NotImplementedError

    def close(self, *, delete_if_unused: bool = True) -> bool:
        """Stop accepting work; fsync and close the file (at once, or when the running
        turn ends). Returns True when the file was deleted as unused (idle, empty,
        unnamed, no other process has it open)."""
        with self._lock:
            if self._closing:
                return False
            self._closing = True
            if self._busy:
                return False
            return self._finalize(delete_if_unused=delete_if_unused)

    def delete_if_unused(self) -> bool:
        """Close and delete the file if idle, empty and unnamed, re-checked against the
        file under the turn lock (skipped if another process holds it). When it returns
        False the session stays open and usable."""
        with self._lock:
            if self._closing or self._busy or not self._try_delete_unused():
                return False
            self._closing = True
            self._finalized = True
            return True

    def check_deletable(self, *, force: bool = False) -> None:
        """Raise what `delete` would (SessionFileGone when another file is at the path now;
        unless `force`, SessionInUse when another process has it open); changes nothing."""
        with self._lock:
            if self._finalized:  # deleted or closed by a concurrent request
                raise SessionNotFound(self.path)
            if self._gone_state() is None and not force:
                with self._alone() as alone:
                    if not alone:
                        raise self._in_use()

    def delete(self, *, force: bool = False) -> str:
        """Close and remove the file and its sidecars, whatever they hold. Without `force`,
        SessionInUse when another process has it open; SessionFileGone when another file
        is at the path now (both change nothing); a missing file only loses its sidecars."""
        with self._lock:
            if self._finalized:  # deleted or closed by a concurrent request
                raise SessionNotFound(self.path)
            if self._gone_state() == "missing":
                self._closing = self._finalized = True
                self._close_gone()
            elif force:
                self._closing = self._finalized = True
                self._file.delete()
            else:
                with self._alone() as alone:
                    if not alone:
                        raise self._in_use()
                    self._closing = self._finalized = True
                    self._file.delete()  # while nobody else can open it
            return self.path

    def _gone_state(self) -> str | None:
        """Under `_lock`: None while the file is ours at its path, ``missing`` when
        nothing is there; SessionFileGone when another file is there now."""
        state = self._file.state()
        if state == "replaced":
            self._file.check_present()  # raises, naming the path
        return None if state == "present" else state

    def _close_gone(self) -> None:
        """Close a session whose file is missing, removing the sidecars left beside it."""
        try:
            with contextlib.suppress(OSError):  # tidying only
                remove_session_files(self._file.path, sidecars_only=True)
        finally:
            self._file.close()

    def _in_use(self) -> SessionInUse:
        return SessionInUse(f"Session is open in another process: {self.path}; close it there, "
                            "or pass force: true to delete it anyway", data={"path": self.path})

    @contextlib.contextmanager
    def _alone(self) -> Iterator[bool]:
        """Under `_lock`: yield True when no other process has the file open or runs a
        turn on it; while the block runs with True nobody can open it.

        The presence check must run under the turn lock (see
        ``SessionFile.exclusive_presence``): ours when a turn of this process holds it,
        else taken for the check (busy elsewhere: not alone)."""
        lock_fd = None
        if self._turn_lock_fd is None:
            lock_fd = try_turn_lock(self._file.lock_path)
            if lock_fd is None:
                yield False
                return
        try:
            with self._file.exclusive_presence() as alone:
                yield alone
        finally:
            if lock_fd is not None:
                os.close(lock_fd)

    def _finalize(self, *, delete_if_unused: bool) -> bool:
        """Under `_lock`, closing and not busy: delete when unused, else fsync and close."""
        try:
            deleted = delete_if_unused and self._try_delete_unused()
        except OSError as exc:  # e.g. the directory became read-only: keep the file
            log.warning("Could not remove unused session %s: %s", self.path, exc)
            deleted = False
        self._finalized = True
        if not deleted:
            if delete_if_unused and self._file.state() == "missing":
                self._close_gone()
            else:
                self._file.close()
        return deleted

    def _try_delete_unused(self) -> bool:
        """Under `_lock`: delete the file when empty and unnamed, still ours (not gone)
        and no other process runs a turn on it or has it open, re-checking emptiness
        against the file meanwhile. True when deleted."""
        if not self.is_empty or not self.present():
            return False
        with self._alone() as alone:
            if not alone:
                return False  # another process has it open or runs a turn on it
            self.refresh()
            if not self.is_empty:
                return False
            self._file.delete()
        log.info("Deleted unused session %s", self.path)
        return True
