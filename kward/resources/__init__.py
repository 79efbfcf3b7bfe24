"""The user's extensions of kward, read from the config directory: AGENTS.md, prompt
templates, skills and plugins; and the system prompt built from them.

Modules, lowest first:

- `text`: capped reads, the stat-keyed file cache, front matter, command names;
- `prompts`: `<config>/prompts/*.md` templates, reserved names, `/name args` parsing;
- `skills`: `<config>/skills/<folder>/SKILL.md` and the `read_skill` tool;
- `bounded`: plugin code on daemon threads with a time limit; read-only copies;
- `context`: `PluginContext`, what plugin code gets about the session;
- `plugins`: loading `<config>/plugins/*.py` and `*/plugin.py`, the `Registrar` API;
- `observers`: plugin transcript observers fed from bounded queues;
- `system_prompt`: the base prompt (`base_prompt.md`) and the assembly of the parts;
- `catalog`: everything loaded together, and how slash input resolves;
- `extensions`: `Resources`, the user's extensions of one process: the catalog, the
  AGENTS.md cache, and what a turn's plan needs of them.

Nothing here imports `kward.rpc`, the agent or the runtime at run time (the agent's turn
and emit types are imported for the type checker only): the runtime
(kward/runtime/resources.py) wires `Resources` to sessions and the engine.
"""

from kward.resources.extensions import Resources

__all__ = ["Resources"]
