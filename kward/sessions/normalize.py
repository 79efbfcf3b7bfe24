"""Tool-call normalization as sessions need it, built on the one shared implementation in
``kward.tools.normalize`` (names ``read``/``edit``/``write``/``bash``, camelCased args,
bash ``{command, timeout}``): argument decoding for stored calls and the details of a
tool result. (The fields of a ``tool_execution_end`` record are built by the agent:
``kward.agent.payloads.tool_execution_record``.)

Pure functions: safe from any thread.
"""

from __future__ import annotations

from typing import Any

from kward.tools.base import is_error_text
from kward.tools.normalize import extract_diff, normalize_args, normalize_tool_name, parse_arguments

__all__ = ["call_arguments", "is_error_result", "normalize_tool_name", "parse_arguments", "result_details"]


def is_error_result(text: Any) -> bool:
    """A result text is an error iff it starts with ``Error:``, ``Declined:`` or ``Cancelled.``."""
    return isinstance(text, str) and is_error_text(text)


def call_arguments(raw_name: Any, raw_args: Any) -> dict[str, Any]:
    """Client-facing arguments of a stored tool call (JSON text or dict)."""
    return normalize_args(raw_name if isinstance(raw_name, str) else "", parse_arguments(raw_args))


def result_details(raw_name: Any, raw_args: Any, text: str) -> dict[str, Any]:
    """``{diff?, changedFiles?}`` of a successful edit/write result, derived from its text
    and the call's ``path`` (for results that have no tool_execution_end record)."""
    if is_error_result(text) or normalize_tool_name(raw_name if isinstance(raw_name, str) else "") not in ("edit", "write"):
        return {}
    details: dict[str, Any] = {}
    diff = extract_diff(text)
    if diff is not None:
        details["diff"] = diff
    path = parse_arguments(raw_args).get("path")
    if isinstance(path, str) and path:
        details["changedFiles"] = [path]
    return details

