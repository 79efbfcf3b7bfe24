"""The catalog: every prompt template, skill and plugin of the config directory, loaded
together, and how a slash input resolves against them.

Names: built-in command names are reserved (`prompts.RESERVED`); prompt templates take
their names first, then plugin commands in plugin order; a plugin command whose name is
invalid, reserved or taken is skipped with a warning (the rest of its plugin stays).

`Catalog.resolve(text)` turns a turn's input into a `Plan`: `/name args` naming a
template is a `prompt` plan (the expansion, the typed text kept as `display`); naming a
plugin command (and sent without attachments) a `plugin` plan; anything else, unknown
slash commands included, is `literal` input. `/skill:<name> args` is a `prompt` plan too
(the skill's SKILL.md and the arguments, `skills.expand_skill`); a name no skill has is
literal input like any unknown slash command. Expansions are held to the input limit before they are built.

A catalog is immutable once loaded (its `Stuck` counters and observers' queues aside):
any thread may read it. `load_catalog` runs plugin code and belongs on a worker thread.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kward.errors import InvalidParams
from kward.resources import prompts, skills
from kward.resources.observers import Observer, stop_all
from kward.resources.plugins import (
    Plugin,
    PluginCommand,
    PromptContextFn,
    forget_module,
    load_plugins,
)
from kward.resources.prompts import (
    RESERVED,
    PromptTemplate,
    Warning_,
    parse_skill,
    parse_slash,
)
from kward.resources.skills import Skill
from kward.resources.text import NAME_RE

if TYPE_CHECKING:  # pragma: no cover
    from kward.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """How one input runs: `literal` (as typed), `prompt` (`text` is the expansion,
    `display` what was typed) or `plugin` (`command` runs with `arguments`)."""

    kind: Literal["literal", "prompt", "plugin"]
    text: str
    display: str | None = None
    command: PluginCommand | None = None
    arguments: str = ""


@dataclass
class Catalog:
    prompts: tuple[PromptTemplate, ...] = ()
    skills: tuple[Skill, ...] = ()
    plugins: tuple[Plugin, ...] = ()
    commands: dict[str, PluginCommand] = field(default_factory=dict)  # plugin commands by name
    warnings: tuple[Warning_, ...] = ()
    observers: tuple[Observer, ...] = ()
    _tools: tuple[ToolRegistry, ToolRegistry] | None = field(default=None, repr=False)  # (base, with read_skill)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.prompt_map = {p.command: p for p in self.prompts}
        self.skill_map = {s.name: s for s in self.skills}
        self.skills_text = skills.skills_prompt(list(self.skills))

    def resolve(self, text: str, has_attachments: bool = False, limit: int | None = None) -> Plan:
        """The plan of `text` (see the module doc); an expansion over `limit` characters
        raises InputTooLarge, an unreadable SKILL.md
        OSError (reading it is the one I/O here)."""
        skill_call = parse_skill(text)
        if skill_call is not None:
            skill_name, arguments = skill_call
            skill = self.skill_map.get(skill_name)
            if skill is None:
                return Plan("literal", text)  # like any unknown slash command: sent as typed
            try:
                expanded = skills.expand_skill(skill, arguments, limit)
            except ValueError as exc:  # a binary SKILL.md
                raise InvalidParams(f"Skill {skill.name} cannot be used: {exc}") from None
            return Plan("prompt", expanded, display=text, arguments=arguments)
        parsed = parse_slash(text)
        if parsed is None:
            return Plan("literal", text)
        name, arguments = parsed
        template = self.prompt_map.get(name)
        if template is not None:
            return Plan("prompt", template.expand(arguments, limit), display=text, arguments=arguments)
        command = self.commands.get(name)
        if command is not None and not has_attachments:
            return Plan("plugin", text, command=command, arguments=arguments)
        return Plan("literal", text)

    def tools(self, base: ToolRegistry) -> ToolRegistry:
        """`base` plus `read_skill` when there are skills; built once per `base`."""
        if not self.skills:
            return base
        with self._lock:
            if self._tools is None or self._tools[0] is not base:
                skill_map = self.skill_map
                self._tools = (base, base.with_specs(skills.read_skill_spec(lambda: skill_map)))
            return self._tools[1]

    def prompt_contexts(self) -> list[tuple[Plugin, PromptContextFn]]:
        return [(plugin, fn) for plugin in self.plugins for fn in plugin.prompt_contexts]

    def close(self) -> None:
        """Stop the observers and forget the plugin modules (after a reload, at shutdown)."""
        stop_all(self.observers)
        for plugin in self.plugins:
            forget_module(plugin.module)


def _plugin_commands(plugins: list[Plugin], taken: set[str]) -> tuple[dict[str, PluginCommand], list[Warning_]]:
    commands: dict[str, PluginCommand] = {}
    warnings: list[Warning_] = []
    for plugin in plugins:
        for name, description, hint, handler in plugin.commands:
            def skip(why: str) -> None:
                warnings.append(Warning_("plugin", plugin.path, f"Plugin {plugin.name}: command /{name} skipped: {why}"))

            if not NAME_RE.fullmatch(name):
                skip("the name must start with a letter or digit and hold only letters, digits, '_' and '-'")
            elif name in RESERVED:
                skip("it is a built-in command")
            elif name in taken:
                skip("the name is already taken")
            else:
                taken.add(name)
                commands[name] = PluginCommand(name=name, description=" ".join(description.split()),
                                               argument_hint=" ".join(hint.split()), handler=handler, plugin=plugin)
    return commands, warnings


def load_catalog(config_dir: Path, timeout: float) -> Catalog:
    """Read prompts/, skills/ and plugins/ of `config_dir` (plugins bounded by `timeout`
    seconds each); every warning is logged too."""
    taken: set[str] = set()
    templates, warnings = prompts.discover_prompts(Path(config_dir) / "prompts", taken)
    found, skill_warnings = skills.discover_skills(Path(config_dir) / "skills")
    plugins, plugin_warnings = load_plugins(Path(config_dir) / "plugins", timeout)
    commands, command_warnings = _plugin_commands(plugins, taken)
    for warning in [*warnings, *skill_warnings, *command_warnings]:  # plugin load failures are logged already
        log.warning("%s (%s)", warning.message, warning.path)
    observers = tuple(Observer(plugin.name, fn) for plugin in plugins for fn in plugin.observers)
    return Catalog(prompts=tuple(templates), skills=tuple(found), plugins=tuple(plugins), commands=commands,
                   warnings=(*warnings, *skill_warnings, *plugin_warnings, *command_warnings), observers=observers)
