"""The Scripted provider's built-in demo: explore the workspace with the real tools, then
summarize it. Each model call looks at the tool results that followed the latest user
message and decides the next step, so the whole turn is driven by real tool output.

Pure functions of the conversation; safe from any thread.
"""

from __future__ import annotations

import re
from typing import Any

from kward.model import Message, ToolResultMessage, UserMessage, content_text

_README = re.compile(r"^(readme|about|index)(\.\w+)?$", re.I)
_BUILD_DIRS = ("build/", "dist/", "__pycache__/", "node_modules/", "target/", "venv/")
_MANIFESTS = ("pyproject.toml", "setup.cfg", "package.json", "Cargo.toml", "go.mod", "Gemfile", "Makefile")


def _artefact(entry: str) -> bool:
    """Hidden entries and build output (`build/`, `*.egg-info/`, ...) are not what a project is."""
    return entry.startswith(".") or entry in _BUILD_DIRS or entry.endswith(".egg-info/")


def _since_last_user(messages: list[Message]) -> tuple[str, list[Message]]:
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, UserMessage):
            return content_text(message.content, " "), messages[i + 1:]
    return "", messages


def _words(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": w} for w in re.findall(r"\S+\s*|\s+", text)]


def _pick_file(listing: str) -> str | None:
    files = [line.strip() for line in listing.splitlines() if line.strip() and not line.strip().endswith("/")]
    for name in files:
        if _README.match(name):
            return name
    for name in _MANIFESTS:
        if name in files:
            return name
    return files[0] if files else None


def demo_events(messages: list[Message]) -> list[dict[str, Any]]:
    """The events (in the script format, `kward.providers.scripted`) of the demo's next step."""
    request, after = _since_last_user(messages)
    results = [m for m in after if isinstance(m, ToolResultMessage)]
    if not results:
        ask = " ".join(request.split())[:80] or "a look around"
        return [
            {"type": "reasoning", "text": f"The user asked: {ask}" + ("" if ask[-1:] in ".?!" else ".") + " "},
            {"type": "reasoning", "text": "I will look at the workspace before answering."},
            *_words("Let me look around the workspace first."),
            {"type": "toolCall", "name": "list_directory", "arguments": {"path": "."}},
        ]
    listing = content_text(results[0].content)
    if len(results) == 1 and not listing.startswith("Error"):
        chosen = _pick_file(listing)
        if chosen:
            return [
                {"type": "reasoning", "text": f"{chosen} should say what this project is."},
                {"type": "toolCall", "name": "read_file", "arguments": {"path": chosen, "limit": 40}},
            ]
    return _words(_summary(listing, results[1:]))


def _summary(listing: str, reads: list[ToolResultMessage]) -> str:
    entries = [line.strip() for line in listing.splitlines() if line.strip() and not _artefact(line.strip())]
    if listing.startswith("Error"):
        return f"I could not list the workspace ({listing.strip()})."
    dirs = [e for e in entries if e.endswith("/")]
    files = [e for e in entries if not e.endswith("/")]
    parts = [f"The workspace holds {len(files)} file{'s' if len(files) != 1 else ''} "
             f"and {len(dirs)} director{'ies' if len(dirs) != 1 else 'y'}."]
    if dirs:
        parts.append("Directories: " + ", ".join(dirs[:8]) + (" and more." if len(dirs) > 8 else "."))
    if files:
        parts.append("Files: " + ", ".join(files[:8]) + (" and more." if len(files) > 8 else "."))
    if reads:
        text = content_text(reads[0].content)
        lines = [line.strip(" #*>-\t") for line in text.splitlines()
                 if line.strip() and not line.startswith("[") and not line.startswith("Error")]
        if lines:
            parts.append(f"The file I read begins: \"{lines[0][:160]}\".")
            if len(lines) > 1:
                parts.append(f"It goes on: \"{lines[1][:160]}\".")
    parts.append("(This answer comes from kward's offline Scripted demo provider, built from real tool results.)")
    return "\n\n".join(parts)
