"""Compaction: summarize the older part of a long conversation into a structured
checkpoint so that a session never dead-ends in a context overflow.

- `estimate`: the token estimate (chars / 4, anchored on the last reported usage) and the
  threshold of automatic compaction;
- `cut`: where the kept recent part starts (a user-turn boundary when possible, else a
  split inside the last turn), tool calls and their results kept together;
- `serialize`: the conversation as the summarizer reads it;
- `prompt`: the summarizer's instructions and checkpoint templates (Ruby-aware, with the
  equivalents of the workspace's language);
- `files`: the files read and modified, from tracked tool calls, and the rewrite of the
  summary's Files & Code lists;
- `run`: one compaction of an open session (plan, summarizer calls, the `compaction`
  record), and `auto`: the guard a turn runs with (before each model request, and once
  after a context overflow);
- `events`: what a compaction reports (its result, compactionStart and compactionEnd).

Nothing here knows JSON-RPC; the runtime (`kward.runtime.compaction`) drives it.
"""
