"""Conservative, heuristic inference of soft memories from what the user wrote.

The text is cut into lines at newlines, periods and semicolons. A line becomes a candidate
when it is an explicit request ("remember this: ...", "please remember: ...", "note that:
...", "important information: ..."; the part after the colon is kept) or a statement about
the user's or team's habits: it names `I`, `we`, `user` or `captain` and says prefer(s),
usually, always, use(s), avoid(s), like(s), workflow or project. Lines that echo a memory
listing (`- soft_001 ...`), look like URL fragments, or use emotional or dependency-forming
wording (love, romantic, intimate, dependency, "need me", ...) are refused. At most
`MAX_CANDIDATES` per call, each once. No model is asked. Pure functions; any thread.
"""

from __future__ import annotations

import re

from kward.memory import records

MAX_CANDIDATES = 5

_SPLIT = re.compile(r"[\n.;]")
_LISTING = re.compile(r"^-\s*(?:core|soft)_\d+\s")
_URL_FRAGMENT = re.compile(r"^[\w/.]+\]")
_EXPLICIT = re.compile(r"\b(?:important information|remember this|please remember|note that)\s*:\s*(.+)$", re.I)
_SUBJECT = re.compile(r"\b(?:i|we|user|captain)\b", re.I)
_HABIT = re.compile(r"\b(?:prefer|prefers|usually|always|workflow|project|use|uses|avoid|avoids|like|likes)\b",
                    re.I)
EMOTIONAL = re.compile(r"\b(?:love|loves|romantic|intimate|dependency|depend on me|need me|flirty|crush)\b", re.I)


def unsafe(text: str) -> bool:
    """Emotional or dependency-forming wording: never stored as an inferred memory."""
    return EMOTIONAL.search(text) is not None


def _candidate(line: str) -> str | None:
    explicit = _EXPLICIT.search(line)
    if explicit:
        return explicit.group(1)
    if _URL_FRAGMENT.match(line) or not _SUBJECT.search(line) or not _HABIT.search(line):
        return None
    return line


def candidates(text: str) -> list[str]:
    """The memory texts (normalized, as they would be stored) found in `text`."""
    found: list[str] = []
    for raw in _SPLIT.split(text or ""):
        line = raw.strip()
        if not line or _LISTING.match(line):
            continue
        candidate = _candidate(line)
        if not candidate or unsafe(candidate):
            continue
        value = records.normalize_text(candidate)
        if value and len(value) <= records.MAX_TEXT_CHARS and value not in found:
            found.append(value)
        if len(found) >= MAX_CANDIDATES:
            break
    return found
