"""Which memories a turn is given, why, and the prompt block that gives them.

Per turn (scopes: `global` and the session's workspace):

- core memories in scope, global ones first, at most `CORE_LIMIT` (score 1.0);
- active, unexpired soft memories in scope that share at least one term (or tag) with the
  input, scored `confidence + min(0.15 * shared terms, 0.45) + (0.25 if a tag is one of
  the terms)`, best first (then higher confidence, then id), at most `SOFT_LIMIT`. Terms
  are the lower-case runs of `[a-z0-9_-]` of 3 or more characters. A soft memory that
  shares nothing with the input is not relevant to it and is left out.

A turn's `Retrieval` holds the memories it was given and a `Reason` for each. A session
keeps what a turn was given as its `memory_state.lastRetrieval` record, ids and reasons
only (`state_record` writes it, `read_state` reads it back, also the original kward's form
with whole records); in memory that is a `RetrievalState`.

Pure functions over the store's data; the caller holds the store's lock while `select`
reads the soft log.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kward.memory import records
from kward.memory.records import Layer, Memory
from kward.memory.softlog import SoftLog

TERM_SCORE = 0.15
TERM_CAP = 0.45
TAG_SCORE = 0.25
NO_RETRIEVAL = "No memory retrieval has run yet."


@dataclass(frozen=True, slots=True)
class RetrievalState:
    """A turn's retrieval as a session keeps it: ids and reasons, never memory text, so
    forgetting a memory leaves no copy of it in session files. `enabled` False: memory
    was off for the turn (the other fields are empty). Read from a file, `timestamp`,
    `scopes` and the reasons are the JSON values it held (the reasons: objects only)."""

    enabled: bool
    timestamp: object = None
    scopes: object = ()
    core_ids: tuple[str, ...] = ()
    soft_ids: tuple[str, ...] = ()
    reasons: tuple[Mapping[str, object], ...] = ()


def state_record(state: RetrievalState) -> dict[str, object]:
    """The `lastRetrieval` field of a session's `memory_state` record."""
    if not state.enabled:
        return {"enabled": False}
    return {"enabled": True, "timestamp": state.timestamp, "scopes": state.scopes, "coreIds": list(state.core_ids),
            "softIds": list(state.soft_ids), "reasons": [dict(r) for r in state.reasons]}


def _ids(record: dict[str, object], key: str, legacy: str) -> tuple[str, ...]:
    ids = record.get(key)
    if not isinstance(ids, list):  # the original kward kept whole records
        kept = record.get(legacy)
        ids = [m.get("id") for m in kept if isinstance(m, dict)] if isinstance(kept, list) else []
    return tuple(i for i in ids if isinstance(i, str))


def read_state(record: object) -> RetrievalState | None:
    """A `lastRetrieval` as a session file holds it; None when it is not an object."""
    if not isinstance(record, dict):
        return None
    if record.get("enabled") is not True:
        return RetrievalState(False)
    reasons = record.get("reasons")
    return RetrievalState(True, record.get("timestamp"), record.get("scopes") or [],
                          _ids(record, "coreIds", "core"), _ids(record, "softIds", "soft"),
                          tuple(r for r in reasons if isinstance(r, dict)) if isinstance(reasons, list) else ())


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a memory was given: its `score` (rounded to 0.001) and the reasons in words."""

    id: str
    layer: Layer
    score: float
    why: tuple[str, ...]

    def record(self) -> dict[str, object]:
        """As a session's `lastRetrieval` (and `memory/why`) has it: ``{id, layer, score, reasons}``."""
        return {"id": self.id, "layer": self.layer, "score": self.score, "reasons": list(self.why)}


@dataclass(slots=True)
class Retrieval:
    scopes: list[str]
    core: list[Memory]
    soft: list[Memory]
    reasons: list[Reason] = field(default_factory=list)
    timestamp: str = ""

    def state(self) -> RetrievalState:
        """What a session keeps of it (see `RetrievalState`)."""
        return RetrievalState(True, self.timestamp, list(self.scopes), tuple(m.id for m in self.core),
                              tuple(m.id for m in self.soft), tuple(r.record() for r in self.reasons))


def _reason(memory: Memory, score: float, why: list[str]) -> Reason:
    return Reason(memory.id, memory.layer, round(score, 3), tuple(why))


def select(core: Sequence[Memory], soft: SoftLog, query: str, scopes: list[str], now: float, *,
           core_limit: int = records.CORE_LIMIT, soft_limit: int = records.SOFT_LIMIT) -> Retrieval:
    in_scope = set(scopes)
    scoped = [m for m in core if m.scope in in_scope]
    chosen_core = [m for m in scoped if m.scope == "global"] + [m for m in scoped if m.scope != "global"]
    chosen_core = chosen_core[:core_limit]
    reasons = [_reason(m, 1.0, ["scope match", "core memories are preferred"]) for m in chosen_core]

    query_terms = records.terms(query)
    text_hits: dict[int, list[str]] = {}  # entry -> the query terms its text holds, in query order
    tag_hits: dict[int, list[str]] = {}
    for index, hits in ((soft.index, text_hits), (soft.tag_index, tag_hits)):
        for term in query_terms:
            for position in index.get(term, ()):
                found = hits.get(position)
                if found is None:
                    hits[position] = [term]
                else:
                    found.append(term)
    scored: list[tuple[float, float, str, int, Memory]] = []
    entries, by_id = soft.entries, soft.by_id
    for position in {**text_hits, **tag_hits}:
        entry = entries[position]
        memory = entry.memory
        if memory is None or not memory.active or memory.scope not in in_scope \
                or (entry.expires is not None and entry.expires < now) or by_id.get(memory.id) != position:
            continue
        overlap, tag_overlap = text_hits.get(position), tag_hits.get(position)
        score = memory.confidence
        if overlap:
            score += min(len(overlap) * TERM_SCORE, TERM_CAP)
        if tag_overlap:
            score += TAG_SCORE
        scored.append((-score, -memory.confidence, memory.id, position, memory))
    chosen_soft = []
    for neg_score, _, _, position, memory in heapq.nsmallest(soft_limit, scored):
        overlap, tag_overlap = text_hits.get(position), tag_hits.get(position)
        why = ["scope match"]
        if overlap:
            why.append("text overlap: " + ", ".join(overlap[:5]))
        if tag_overlap:
            why.append("tag overlap: " + ", ".join(tag_overlap))
        why.append(f"confidence {memory.confidence:.2f}")
        chosen_soft.append(memory)
        reasons.append(_reason(memory, -neg_score, why))
    return Retrieval(list(scopes), chosen_core, chosen_soft, reasons)


def memory_block(retrieval: Retrieval) -> str | None:
    """The `<kward_memory>` block for the system prompt; None when nothing was retrieved."""
    if not retrieval.core and not retrieval.soft:
        return None
    lines = ["<kward_memory>"]
    for title, chosen in (("Core Memories:", retrieval.core), ("Relevant Soft Memories:", retrieval.soft)):
        if chosen:
            lines.append(title)
            lines.extend(f"- [{m.id}] {m.text}" for m in chosen)
            lines.append("")
    lines += ["Rules:", "- Core memories override soft memories.",
              "- Soft memories are contextual hints, not guaranteed facts.", "</kward_memory>"]
    return "\n".join(lines)


def explain(reasons: Sequence[Mapping[str, object]]) -> str:
    """The reasons (as a `RetrievalState` holds them) as the terminal shows them (`/memory why`)."""
    if not reasons:
        return "No memories were retrieved."
    lines = ["Memory retrieval reasons:"]
    for r in reasons:
        words = r.get("reasons")
        why = "; ".join(str(x) for x in words) if isinstance(words, list) else ""
        lines.append(f"- {r.get('id')} ({r.get('layer')}, score {r.get('score')}): {why}")
    return "\n".join(lines)
