"""tools/list: the tools the model is given (docs/protocol.md "Tools")."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from kward.rpc.shapes.base import OPEN, Doc, Entry


class ToolSchemaFunction(TypedDict):
    name: str
    description: str
    parameters: Annotated[dict[str, Any], OPEN, Doc("the JSON Schema of the tool's arguments")]


class ToolSchemaMetadata(TypedDict):
    source: Annotated[Literal["builtin", "plugin"], Doc("builtin: kward's own tools")]
    displayName: Annotated[str, Doc("the title a client shows and groups the tool by")]


class ToolSchema(TypedDict):
    """A tool as the model is given it (without `metadata`)."""

    type: Literal["function"]
    function: ToolSchemaFunction
    metadata: ToolSchemaMetadata


class ToolsListResult(TypedDict):
    tools: list[ToolSchema]


METHODS = {
    "tools/list": Entry(None, ToolsListResult),
}
