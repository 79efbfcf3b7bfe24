"""config/read, config/update (docs/protocol.md "Config methods"). config.json's values are
free-form (unknown keys are stored as given): the `config` objects are open."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from kward.rpc.shapes.base import OPEN, Doc, Entry


class ConfigReadParams(TypedDict, total=False):
    redacted: Annotated[bool | None, Doc("false: the stored values, secrets included (default true)")]


class ConfigUpdateParams(TypedDict):
    values: Annotated[dict[str, Any], OPEN, Doc("keys to merge into config.json; a null value removes the key")]


class ConfigFile(TypedDict):
    """config.json: where it is and what it holds (redacted unless asked otherwise)."""

    path: str
    config: Annotated[dict[str, Any], OPEN]


METHODS = {
    "config/read": Entry(ConfigReadParams, ConfigFile),
    "config/update": Entry(ConfigUpdateParams, ConfigFile),
}
