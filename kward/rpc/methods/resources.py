"""commands/list, commands/run, resources/startup, prompts/list, prompts/expand."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.resources import (
        CommandsListResult,
        CommandsRunResult,
        PluginCommandEntry,
        PromptCommandEntry,
        PromptsExpandResult,
        PromptsListResult,
        ResourcesStartupResult,
        SkillCommandEntry,
    )


def commands(call: Call) -> CommandsListResult:
    catalog = call.runtime.resources.catalog(call.params.text("sessionId"))
    out: list[PromptCommandEntry | SkillCommandEntry | PluginCommandEntry] = []
    for p in catalog.prompts:
        entry: PromptCommandEntry = {"name": p.command, "description": p.description, "source": "prompt",
                                     "location": "user", "path": p.path}
        if p.argument_hint:
            entry["argumentHint"] = p.argument_hint
        out.append(entry)
    out += [{"name": f"skill:{s.name}", "description": s.description, "source": "skill", "location": "user",
             "path": s.path} for s in catalog.skills]
    out += [{"name": c.name, "description": c.description, "argumentHint": c.argument_hint, "source": "plugin",
             "path": c.plugin.path, "executable": True} for c in catalog.commands.values()]
    return {"commands": out}


def run_command(call: Call) -> CommandsRunResult:
    p, rt = call.params, call.runtime
    session_id = p.text("sessionId", required=True)
    name = p.text("name", required=True, non_empty=True)
    arguments = rt.check_input(p.text("arguments") or "")
    done = rt.resources.run_command(session_id, name, arguments)
    return {"command": done.command, "output": list(done.output), "result": done.result}


def startup(call: Call) -> ResourcesStartupResult:
    info = call.runtime.resources.startup(call.params.text("sessionId"))
    out: ResourcesStartupResult = {"sections": [{"name": "Context", "items": info.context},
                                        {"name": "Skills", "items": info.skills},
                                        {"name": "Prompts", "items": info.prompts},
                                        {"name": "Plugins", "items": info.plugins}]}
    if info.warnings:
        out["warnings"] = [{"source": w.source, "path": w.path, "message": w.message} for w in info.warnings]
    return out


def prompts(call: Call) -> PromptsListResult:
    catalog = call.runtime.resources.catalog()
    return {"prompts": [{"command": p.command, "description": p.description, "argumentHint": p.argument_hint,
                         "path": p.path} for p in catalog.prompts]}


def expand(call: Call) -> PromptsExpandResult:
    p, rt = call.params, call.runtime
    command = p.text("command", required=True, non_empty=True)
    name, text = rt.resources.expand(command, rt.check_input(p.text("arguments") or ""))
    return {"command": name, "text": text}
