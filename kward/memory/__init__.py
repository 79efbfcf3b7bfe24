"""Structured memory: what kward remembers across sessions, and what a turn is told of it.

Opt-in (config `memory.enabled`). Two layers in `<config dir>/memory/` (directory 0700,
files 0600), the original kward's formats:

- `core.json`: a pretty-printed JSON array of core memories, explicit high-trust
  instructions: `{id: "core_NNN", text, scope, tags, created_at, updated_at, source,
  pinned: true}`; `source` is `explicit_user_instruction` or `promoted_soft_memory`.
  (A `{memories: [...]}` object is read too.)
- `soft.jsonl`: one soft memory per line, contextual hints with a confidence:
  `{id: "soft_NNN", text, scope, tags, confidence, hits, created_at, updated_at,
  last_seen_at, ttl_days: 60, source: "manual"|"inferred", status: "active"|"forgotten"}`.
  A forgotten soft memory keeps its id, with text, tags, confidence and hits redacted.
- `events.jsonl`: an audit line per change and retrieval, `{type, timestamp, ...}`.

A scope is `global` or `workspace:<real path of the workspace>`. Modules: `records` (the
typed `Memory` value and the file records it is read from and written as, scopes, ids,
text rules; pure), `softlog` (the cached, indexed view of soft.jsonl), `store`
(`MemoryStore`: the files, their locks, every change), `retrieval` (scoring, the
`<kward_memory>` prompt block, explanations; pure) and `infer` (the heuristic that finds
soft memories in what the user wrote; pure). Nothing here knows of sessions, turns or
JSON-RPC: `kward.runtime.memory` wires it to them, and memories stay `Memory` values up
to the RPC face (`kward.rpc.wire.memory`).
"""
