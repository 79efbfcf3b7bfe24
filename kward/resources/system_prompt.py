"""The system prompt (the model's instructions), assembled from its parts.

Parts, in this order, joined by blank lines (empty ones left out):

1. kward's base prompt: `base_prompt.md`, bundled in this package and read through
   `importlib.resources` (so the wheel and the zipapp carry it);
2. the config directory's `AGENTS.md`: the user's instructions for every workspace;
3. the memory block: what the turn's `memory_block()` returns (the runtime's planner plugs
   kward.memory in; see `kward.resources.extensions.Resources.instructions`);
4. plugin prompt context: what the plugins' `prompt_context` functions return;
5. the skills list (`kward.resources.skills.skills_prompt`);
6. the workspace root's `AGENTS.md`: the project's instructions.

The AGENTS.md files are read through a stat-keyed `FileCache`, so an edit (by the user, or
by the agent's own tools during a turn) is seen by the next model request; each is capped
at 32 KiB with a note, and so are the memory block and each plugin's context.

Pure functions apart from the cached base prompt: any thread.
"""

from __future__ import annotations

import functools
from importlib import resources as _resources
from pathlib import Path
from typing import NamedTuple

from kward.resources.text import MAX_PROMPT_FILE, FileCache, truncation_note

AGENTS_FILE = "AGENTS.md"


@functools.cache
def base_prompt() -> str:
    """kward's own instructions (the bundled base_prompt.md), read once."""
    return _resources.files("kward.resources").joinpath("base_prompt.md").read_text(encoding="utf-8").strip()


def capped(text: str | None, limit: int = MAX_PROMPT_FILE) -> str | None:
    """`text` stripped, cut at `limit` UTF-8 bytes with a note; None when empty."""
    if not text or not text.strip():
        return None
    text = text.strip()
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore").rstrip() + "\n" + truncation_note(limit)


class Parts(NamedTuple):
    user_agents: str | None = None
    memory: str | None = None
    plugin_context: str | None = None
    skills: str | None = None
    project_agents: str | None = None
    workspace_root: str = ""


def assemble(parts: Parts) -> str:
    pieces = [base_prompt()]
    if parts.user_agents:
        pieces.append("User instructions (AGENTS.md):\n" + parts.user_agents)
    for piece in (parts.memory, parts.plugin_context, parts.skills):
        if piece:
            pieces.append(piece)
    if parts.project_agents:
        pieces.append(f"Project instructions ({parts.workspace_root}/{AGENTS_FILE}):\n" + parts.project_agents)
    return "\n\n".join(pieces)


def agents_files(config_dir: Path, workspace_root: str, files: FileCache | None = None) -> tuple[str | None, str | None]:
    """(config AGENTS.md, workspace AGENTS.md) texts, capped; None where there is none."""
    files = files or FileCache()
    return files.read(Path(config_dir) / AGENTS_FILE), files.read(Path(workspace_root) / AGENTS_FILE)


def static_instructions(config_dir: Path, workspace_root: str, skills: str | None = None,
                        files: FileCache | None = None) -> str:
    """The instructions without the per-turn parts (memory, plugin context): what a turn
    sends when neither is configured, and the estimate of `runtime/stats` before any turn."""
    user, project = agents_files(config_dir, workspace_root, files)
    return assemble(Parts(user_agents=user, skills=skills, project_agents=project, workspace_root=workspace_root))
