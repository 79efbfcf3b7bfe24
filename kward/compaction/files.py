"""The files a compacted conversation read and modified, from its tracked tool calls, and
the rewrite of the summary's ``## Files & Code`` lists from them.

Read: the paths of successful ``read_file`` calls; modified: those of successful
``write_file`` and ``edit_file`` calls (a result that is an error text does not count).
The lists of the previous summary's `details` carry over; a path modified is not listed
as read. Paths are as the model gave them, sorted, without duplicates.

The summary's ``### Read`` and ``### Modified`` subsections under ``## Files & Code`` are
replaced by these lists (``- (none)`` when empty); a summary without that section gets
one appended. Pure functions: any thread.
"""

from __future__ import annotations

from typing import Sequence

from kward.compaction.serialize import content_text
from kward.model import AssistantMessage, Message, ToolResultMessage, is_error_text
from kward.toolcalls import parse_arguments

READ = frozenset({"read_file"})
MODIFY = frozenset({"write_file", "edit_file"})
FILES_HEADING = "## Files & Code"


def _previous(details: object, key: str) -> list[str]:
    values = details.get(key) if isinstance(details, dict) else None
    return [v for v in values if isinstance(v, str) and v] if isinstance(values, list) else []


def file_details(messages: Sequence[Message], previous: object = None) -> dict[str, list[str]]:
    """``{read_files, modified_files}`` of `messages` merged with `previous` details (a
    summary's `details` as its record held them: anything but such a dict counts as none)."""
    read = set(_previous(previous, "read_files"))
    modified = set(_previous(previous, "modified_files"))
    pending: dict[str | None, tuple[str, str]] = {}  # by tool call id: (tool name, path)
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.name in READ or call.name in MODIFY:
                    path = parse_arguments(call.arguments).get("path")
                    if isinstance(path, str) and path:
                        pending[call.id] = (call.name, path)
        elif isinstance(message, ToolResultMessage):
            found = pending.pop(message.tool_call_id, None)
            if found is None or message.is_error or is_error_text(content_text(message.content)):
                continue
            (modified if found[0] in MODIFY else read).add(found[1])
    return {"read_files": sorted(read - modified), "modified_files": sorted(modified)}


def _lines(paths: list[str]) -> list[str]:
    return [f"- {p}" for p in paths] or ["- (none)"]


def _h2(line: str) -> bool:
    return line.startswith("## ")


def _find(section: list[str], heading: str) -> tuple[int, int] | None:
    """(start, end) of the ``###`` subsection `heading` in `section`, or None."""
    index = next((i for i, line in enumerate(section) if line.strip() == heading), None)
    if index is None:
        return None
    end = next((i for i in range(index + 1, len(section)) if section[i].startswith("### ") or _h2(section[i])),
               len(section))
    return index, end


def _replace(section: list[str], heading: str, lines: list[str], after: str | None = None) -> list[str]:
    """`section` with subsection `heading` holding `lines`; a missing one is put after
    subsection `after` (when there is one), else first."""
    found = _find(section, heading)
    if found is None:
        previous = _find(section, after) if after else None
        at = previous[1] if previous is not None else 0
        return section[:at] + [heading, *lines, ""] + section[at:]
    index, end = found
    tail = section[end:]
    while tail and tail[0] == "":
        tail.pop(0)
    return section[:index] + [section[index], *lines, ""] + tail


def rewrite_files(summary: str, details: dict[str, list[str]]) -> str:
    """`summary` with its Files & Code Read/Modified lists replaced by `details`'."""
    text = summary.rstrip()
    read, modified = _lines(details["read_files"]), _lines(details["modified_files"])
    lines = text.split("\n")
    heading = next((i for i, line in enumerate(lines) if line.strip() == FILES_HEADING), None)
    if heading is None:
        return "\n".join([text, "", FILES_HEADING, "### Read", *read, "", "### Modified", *modified])
    end = next((i for i in range(heading + 1, len(lines)) if _h2(lines[i])), len(lines))
    section = _replace(_replace(lines[heading + 1:end], "### Read", read), "### Modified", modified, "### Read")
    return "\n".join(lines[:heading + 1] + section + lines[end:]).rstrip()
