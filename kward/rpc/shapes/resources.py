"""commands/list, commands/run, resources/startup, prompts/list, prompts/expand: prompt
templates, skills and plugin commands (docs/protocol.md "Commands, prompt templates,
skills and plugins")."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from kward.rpc.shapes.base import AN_ADDITION, Doc, Entry


class CommandsListParams(TypedDict, total=False):
    sessionId: Annotated[str | None, Doc("RPC session id (checked when given)")]


class _PromptCommandEntryRequired(TypedDict):
    name: Annotated[str, Doc("the template's command, without the slash")]
    description: str
    source: Literal["prompt"]
    location: Literal["user"]
    path: str


class PromptCommandEntry(_PromptCommandEntryRequired, total=False):
    argumentHint: Annotated[str, Doc("when the template gives one")]


class SkillCommandEntry(TypedDict):
    name: Annotated[str, Doc("skill:<name>")]
    description: str
    source: Literal["skill"]
    location: Literal["user"]
    path: Annotated[str, Doc("its SKILL.md")]


class PluginCommandEntry(TypedDict):
    name: Annotated[str, Doc("the command, without the slash")]
    description: str
    argumentHint: str
    source: Literal["plugin"]
    path: Annotated[str, Doc("the plugin's file")]
    executable: Literal[True]


class CommandsListResult(TypedDict):
    commands: list[PromptCommandEntry | SkillCommandEntry | PluginCommandEntry]


class _CommandsRunParamsRequired(TypedDict):
    sessionId: str
    name: Annotated[str, Doc("a plugin command, with or without the slash")]


class CommandsRunParams(_CommandsRunParamsRequired, total=False):
    arguments: Annotated[str | None, Doc("the text after the command")]


class CommandsRunResult(TypedDict):
    command: str
    output: Annotated[list[str], Doc("the lines the command said")]
    result: Annotated[str | None, Doc("its return value")]


class ResourcesStartupParams(TypedDict, total=False):
    sessionId: Annotated[str | None, Doc("its workspace's AGENTS.md is listed (default: the launch directory's)")]


class StartupSection(TypedDict):
    name: Literal["Context", "Skills", "Prompts", "Plugins"]
    items: list[str]


class StartupWarning(TypedDict):
    """A resource that was skipped, and why."""

    source: Annotated[str, Doc("prompt, skill or plugin")]
    path: str
    message: str


class _ResourcesStartupResultRequired(TypedDict):
    sections: Annotated[list[StartupSection], Doc("Context, Skills, Prompts and Plugins, in this order")]


class ResourcesStartupResult(_ResourcesStartupResultRequired, total=False):
    warnings: Annotated[list[StartupWarning], AN_ADDITION]


class PromptTemplateEntry(TypedDict):
    command: Annotated[str, Doc("without the slash")]
    description: Annotated[str, Doc("empty when not given")]
    argumentHint: Annotated[str, Doc("empty when not given")]
    path: str


class PromptsListResult(TypedDict):
    prompts: list[PromptTemplateEntry]


class _PromptsExpandParamsRequired(TypedDict):
    command: Annotated[str, Doc("a prompt template, with or without the slash")]


class PromptsExpandParams(_PromptsExpandParamsRequired, total=False):
    arguments: Annotated[str | None, Doc("replaces $ARGUMENTS")]


class PromptsExpandResult(TypedDict):
    command: Annotated[str, Doc("without the slash")]
    text: str


METHODS = {
    "commands/list": Entry(CommandsListParams, CommandsListResult),
    "commands/run": Entry(CommandsRunParams, CommandsRunResult),
    "resources/startup": Entry(ResourcesStartupParams, ResourcesStartupResult),
    "prompts/list": Entry(None, PromptsListResult),
    "prompts/expand": Entry(PromptsExpandParams, PromptsExpandResult),
}
