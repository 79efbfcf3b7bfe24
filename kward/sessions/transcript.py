"""What ``sessions/transcript`` reads of a session: the live conversation, and the diff
and changed files of its tool results from the file's ``tool_execution_end`` records (the
file is streamed again for those records only: they are not kept in memory). The RPC
face shapes it (`kward.rpc.wire.transcript`: Tauren's ``tauren-transcript-v1``).

Pure functions (plus one streaming file read): safe from any thread.
"""

from __future__ import annotations

import json
import logging
from typing import Iterable, Iterator, NamedTuple

from kward.model import Message, ToolResultMessage
from kward.sessions.descriptors import DEFAULT_POOL
from kward.sessions.fdretry import out_of_descriptors, retrying
from kward.sessions.lines import LineScanner, too_deep
from kward.sessions.session import SessionInfo

log = logging.getLogger(__name__)

_TOOL_END_MARK = b'"tool_execution_end"'


class ToolDetails(NamedTuple):
    """What a tool_execution_end record adds to a tool result: its diff and changed files."""

    diff: str | None
    changed_files: list[object] | None


class Transcript(NamedTuple):
    """A session's live conversation for `sessions/transcript`: the session, its
    non-system messages, and the details of their tool results by call id."""

    session: SessionInfo
    messages: list[Message]
    tool_details: dict[str, ToolDetails]


def tool_details_from_file(path: str, wanted: set[str]) -> dict[str, ToolDetails]:
    """``{toolCallId: ToolDetails}`` from the file's tool_execution_end records."""
    found: dict[str, ToolDetails] = {}
    if not wanted:
        return found
    try:
        with retrying(lambda: open(path, "rb"), pool=DEFAULT_POOL) as f:
            for line in _all_lines(LineScanner(f.read)):
                if _TOOL_END_MARK not in line:
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # the reader reports bad lines; here they just add nothing
                if not isinstance(record, dict) or record.get("type") != "tool_execution_end" \
                        or too_deep(record, line):
                    continue
                call_id = record.get("toolCallId")
                result = record.get("result")
                if call_id not in wanted or not isinstance(result, dict):
                    continue
                diff, changed = result.get("diff"), result.get("changedFiles")
                found[call_id] = ToolDetails(diff if isinstance(diff, str) else None,
                                             changed if isinstance(changed, list) else None)
    except OSError as exc:
        if out_of_descriptors(exc):
            raise
        log.warning("Cannot read tool details from %s: %s", path, exc)
    return found


def _all_lines(scanner: LineScanner) -> Iterator[bytes]:
    """Every line `scanner` yields, then its unterminated last line (bounded memory)."""
    for line, _start in scanner:
        yield line
    if scanner.tail:
        yield scanner.tail


def wanted_tool_call_ids(messages: Iterable[Message]) -> set[str]:
    """Tool-call ids of the tool results among `messages` (what to look up in the file)."""
    ids = (m.shown_call_id() for m in messages if isinstance(m, ToolResultMessage))
    return {call_id for call_id in ids if call_id is not None}
