"""What plugin code is given about the session it runs for: `PluginContext`.

- `workspace_root`, `session_id` (the RPC id), `session_name`, `session_path`,
  `persistent_id`: plain strings (the name may be None);
- `transcript`: the session's conversation as a read-only deep copy (a tuple of
  read-only dicts in the shape of the session file's message records,
  `kward.sessions.codec`; `kward.resources.bounded.freeze`), taken on first access;
- `args`: the text after the command (commands only);
- `say(text)`: a line of the command's output (commands only; elsewhere it is dropped);
- `progress(text)`: a line of progress while a command runs: shown live during a command
  turn (a `toolUpdate` event; `kward.agent.engine`), not part of the output, dropped
  elsewhere (`commands/run`, prompt context, observers).

A context is built for one call on the calling thread and read on the plugin's thread;
`say` and `progress` may be called from any thread (`say` takes a lock; `progress` feeds
the sink without publishing, the sink's own lock orders the text, and sets
`Output.arrived`, which wakes the caller's thread waiting in `run_bounded` to poll the sink:
so progress is published while the command still runs, on the waiting thread). Output is
capped at `MAX_OUTPUT_CHARS` in all; said lines (and progress) after the call returned (or
timed out) are dropped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from kward.model import Message
from kward.resources.bounded import FrozenDict, freeze_dict
from kward.sessions.codec import encode

if TYPE_CHECKING:  # pragma: no cover
    from kward.sessions.handle import SessionHandle

MAX_OUTPUT_CHARS = 1_000_000
_CUT = "[... output truncated]"


class ProgressSink(Protocol):
    """Where a command's progress goes while it runs (`kward.tools.live.LiveOutput`): text
    fed from the plugin's thread (``flush=False``), published by `poll` on the waiting one."""

    def feed_text(self, stream: str, text: str, *, flush: bool = True) -> None: ...

    def poll(self) -> float | None:
        """Publish what is due; the seconds until the next flush is due (None: nothing pending)."""
        ...


class Output:
    """The lines a command says, and where its progress goes (`progress`, or nowhere).
    Thread-safe; `close()` ends it. `arrived` is set whenever progress was fed."""

    def __init__(self, progress: ProgressSink | None = None) -> None:
        self._progress = progress
        self.arrived = threading.Event()
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._size = 0
        self._open = True

    def say(self, text: object = "") -> None:
        line = text if isinstance(text, str) else str(text)
        with self._lock:
            if not self._open or self._size > MAX_OUTPUT_CHARS:
                return
            room = MAX_OUTPUT_CHARS - self._size
            if len(line) > room:
                line = line[:room] + _CUT
            self._lines.append(line)
            self._size += len(line) + 1

    def progress(self, text: object) -> None:
        """One line of progress to the sink (a newline added), unless the call ended."""
        line = text if isinstance(text, str) else str(text)
        with self._lock:
            sink = self._progress if self._open else None
        if sink is not None:
            sink.feed_text("stdout", line if line.endswith("\n") else line + "\n", flush=False)
            self.arrived.set()

    def close(self) -> tuple[str, ...]:
        with self._lock:
            self._open = False
            return tuple(self._lines)


class PluginContext:
    """See the module docstring."""

    def __init__(self, *, workspace_root: str, session_id: str | None = None, session_name: str | None = None,
                 session_path: str | None = None, persistent_id: str | None = None,
                 messages: Callable[[], list[Message]] | None = None, args: str = "",
                 output: Output | None = None):
        self.workspace_root = workspace_root
        self.session_id = session_id
        self.session_name = session_name
        self.session_path = session_path
        self.persistent_id = persistent_id
        self.args = args
        self._messages = messages
        self._output = output
        self._transcript: tuple[FrozenDict, ...] | None = None
        self._lock = threading.Lock()

    @property
    def transcript(self) -> tuple[FrozenDict, ...]:
        with self._lock:
            if self._transcript is None:
                self._transcript = tuple(freeze_dict(encode(m)) for m in (self._messages() if self._messages else []))
            return self._transcript

    def say(self, text: object = "") -> None:
        if self._output is not None:
            self._output.say(text)

    def progress(self, text: object = "") -> None:
        if self._output is not None:
            self._output.progress(text)

    def __repr__(self) -> str:
        return f"PluginContext(session_id={self.session_id!r}, workspace_root={self.workspace_root!r})"


def context_for(session: SessionHandle, *, args: str = "", output: Output | None = None) -> PluginContext:
    """The context of a kward session."""
    return PluginContext(workspace_root=session.workspace_root, session_id=session.id, session_name=session.name,
                         session_path=session.path, persistent_id=session.persistent_id,
                         messages=session.entry_messages, args=args, output=output)


@dataclass(frozen=True)
class CommandOutput:
    """What a plugin command produced: its `say` lines and its return value."""

    command: str
    output: tuple[str, ...]
    result: str | None

    @property
    def text(self) -> str:
        """The lines and the result, joined by newlines (what a `/name args` turn answers)."""
        return "\n".join([*self.output, *([self.result] if self.result else [])])


def result_text(value: object) -> str | None:
    """A handler's return value as text (None stays None), capped at MAX_OUTPUT_CHARS."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + _CUT
