"""Event payloads for tool calls and results, in the shape UI clients read.

`toolCall`/`toolResult` carry the normalized fields (`toolCallId`, `toolName`
read/edit/write/bash/..., camelCase `args`), the model's original call (`rawToolCall` and
`toolCall`) and the legacy `tool` metadata; `toolResult` adds the raw `content` and
`result {content, isError, images, diff?, changedFiles?}`. Pure functions.
"""

from __future__ import annotations

from typing import Any

from kward.tools import ToolResult, normalize_args, normalize_tool_name, parse_arguments


def _fields(call: dict[str, Any]) -> dict[str, Any]:
    name = call["function"]["name"]
    args = normalize_args(name, parse_arguments(call["function"].get("arguments")))
    return {"toolCallId": call["id"], "toolName": normalize_tool_name(name), "args": args}


def _legacy(call: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    tool = {"name": call["function"]["name"], "displayName": fields["toolName"]}
    for key in ("path", "command"):
        if isinstance(fields["args"].get(key), str):
            tool[key] = fields["args"][key]
    return tool


def tool_call(call: dict[str, Any]) -> dict[str, Any]:
    fields = _fields(call)
    return {**fields, "rawToolCall": call, "toolCall": call, "tool": _legacy(call, fields)}


def tool_result(call: dict[str, Any], result: ToolResult) -> dict[str, Any]:
    return {**tool_call(call), "content": result.content, "result": result.to_payload()}


def tool_execution_record(call: dict[str, Any], result: ToolResult) -> dict[str, Any]:
    """Fields of the session's `tool_execution_end` audit record."""
    fields = _fields(call)
    payload = result.to_payload()
    return {**fields, "result": payload, "isError": payload["isError"]}
