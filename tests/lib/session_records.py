"""Session files in tests: the records they hold, built, written and read back.

- Messages as the records hold them: `user`, `assistant` (with tool calls),
  `tool_result`; records around them: `header` (the first line), `message_record`.
- Writing: `write_lines` writes records (or raw lines, torn ones included) one per line.
- Reading: `read_records` (blank lines skipped), `strict_records` (every line whole JSON
  and an object, the file ending in a newline: what kward's writer guarantees) and
  `lenient_records` (what a crash may leave: the decodable records and the rest), with
  `messages_of` and `names_of` picking the messages and the renames out of them, and
  `session_files` listing a config directory's session files.
- The codec both ways (`kward.sessions.codec`): `typed` / `typed_all` make typed
  messages (kward.model) of record dicts, `recorded` the records of typed messages.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Iterable

from kward.model import Message
from kward.sessions.codec import decode, encode

# --- messages and records ----------------------------------------------------------------


def user(text: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(text: Any = "", *, calls: Iterable[tuple[str, str, dict]] = (), **extra: Any) -> dict[str, Any]:
    """An assistant message; `calls` are (call id, tool name, arguments) tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": text, **extra}
    calls = list(calls)
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ]
    return message


def tool_result(call_id: str, name: str, content: str) -> dict[str, Any]:
    """The result message of tool call `call_id`."""
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def header(session_id: str = "11111111-2222-3333-4444-555555555555", cwd: str = "/nowhere", **extra: Any) -> dict:
    """A session file's first record."""
    return {"type": "session", "version": 1, "id": session_id, "timestamp": "2026-01-02T03:04:05.678Z",
            "cwd": cwd, **extra}


def message_record(message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "timestamp": "2026-01-02T03:04:06.000Z", "message": message}


# --- files -------------------------------------------------------------------------------


def write_lines(path: Path, lines: Iterable[Any], *, trailing_newline: bool = True) -> Path:
    """Write records (dicts are JSON-encoded, bytes/str written as they are) one per line."""
    parts = []
    for line in lines:
        if isinstance(line, dict):
            parts.append(json.dumps(line).encode())
        elif isinstance(line, str):
            parts.append(line.encode())
        else:
            parts.append(line)
    data = b"\n".join(parts) + (b"\n" if trailing_newline else b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def parse_records(text: str) -> list[dict[str, Any]]:
    """The records of a session file's text, blank lines skipped."""
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a session file, blank lines skipped."""
    return parse_records(Path(path).read_text(encoding="utf-8"))


def strict_records(path: str | Path) -> list[dict]:
    """Every line of the file as JSON; fails on a torn, blank or undecodable line."""
    data = Path(path).read_bytes()
    assert data.endswith(b"\n"), f"{path} does not end with a newline"
    out = []
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            record = json.loads(line)
        except ValueError as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"{path}:{number} is not one JSON record ({exc}): {line[:200]!r}") from None
        assert isinstance(record, dict), f"{path}:{number} is not an object"
        out.append(record)
    return out


def lenient_records(path: str | Path) -> tuple[list[dict], list[bytes]]:
    """(decodable records, undecodable lines): what a crash may leave behind."""
    good, bad = [], []
    for line in Path(path).read_bytes().split(b"\n"):
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        (good if isinstance(record, dict) else bad).append(record if isinstance(record, dict) else line)
    return good, bad


def messages_of(records: Iterable[dict]) -> list[dict]:
    return [r["message"] for r in records if r.get("type") == "message"]


def names_of(records: Iterable[dict]) -> list[Any]:
    """The names of the session's renames (`session_info` records), in order."""
    return [r.get("name") for r in records if r.get("type") == "session_info"]


def session_files(home: Path) -> list[Path]:
    """The session files under `home`'s config directory."""
    return sorted((home / ".kward" / "sessions").glob("*/*.jsonl"))


# --- the codec ---------------------------------------------------------------------------


def typed(record: dict[str, Any]) -> Message:
    """The typed message of a record's `message` object (a copy: decoding keeps it)."""
    return decode(copy.deepcopy(record))


def typed_all(records: Iterable[dict[str, Any]]) -> list[Message]:
    return [typed(r) for r in records]


def recorded(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The record objects of `messages` (as the session file holds them)."""
    return [encode(m) for m in messages]
