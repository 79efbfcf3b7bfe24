"""tools/list: the tools the model is given (docs/protocol.md "Tools")."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from kward.rpc.shapes.base import OPEN, Doc, Entry
from kward.rpc.shapes.events import ToolMetadata


class ToolSchemaFunction(TypedDict):
    name: str
    description: str
    parameters: Annotated[dict[str, Any], OPEN, Doc("the JSON Schema of the tool's arguments")]


class ToolSchema(TypedDict):
    """A tool as the model is given it (without `metadata`)."""

    type: Literal["function"]
    function: ToolSchemaFunction
    metadata: ToolMetadata


class ToolsListResult(TypedDict):
    tools: list[ToolSchema]


METHODS = {
    "tools/list": Entry(None, ToolsListResult),
}
