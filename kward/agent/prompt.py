"""The system prompt: the base prompt, the user's global AGENTS.md (config directory) and
the workspace's AGENTS.md, joined by blank lines. Files are read fresh for every turn
(capped at 32 KiB each), so edits take effect on the next turn. Safe from any thread.
"""

from __future__ import annotations

from pathlib import Path

MAX_PROMPT_FILE = 32 * 1024

BASE_PROMPT = """You are Kward, a concise, practical coding agent working in the user's workspace.
You can list, read, search, write and edit files and run shell commands with the tools provided.
Read a file before you change it. Prefer small, precise edits. Run the project's tests when you change code.
Paths are relative to the workspace root unless absolute; you cannot leave the workspace.
Answer briefly and concretely; show commands and file paths the user can act on."""


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PROMPT_FILE + 1)
    except OSError:
        return None
    text = data[:MAX_PROMPT_FILE].decode("utf-8", "replace").strip()
    if len(data) > MAX_PROMPT_FILE:
        text += "\n[... truncated to 32 KiB]"
    return text or None


def build_instructions(config_dir: Path, workspace_root: str, memory: str | None = None) -> str:
    """`memory`: the turn's `<kward_memory>` block (kward.runtime.memory), after AGENTS.md."""
    parts = [BASE_PROMPT]
    user = _read(config_dir / "AGENTS.md")
    if user:
        parts.append("User instructions (AGENTS.md):\n" + user)
    if memory:
        parts.append(memory)
    project = _read(Path(workspace_root) / "AGENTS.md")
    if project:
        parts.append(f"Project instructions ({workspace_root}/AGENTS.md):\n" + project)
    return "\n\n".join(parts)
