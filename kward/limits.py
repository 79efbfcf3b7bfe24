"""The limits and tables that the core and the `initialize` capabilities share, in one place.

No imports: `kward.rpc.capabilities` reads this while it answers `initialize`, so it must
not load the model, the agent or telemetry to get them. Constants only.
"""

#: The image types an attachment may have (and a transcript shows).
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: At most this many bytes per image attachment, declared or decoded.
MAX_IMAGE_BYTES = 10 * 1024 * 1024
#: How many recent events of a turn are kept for `turns/events` replay.
EVENT_REPLAY_LIMIT = 1000
#: A telemetry log file rotates once it holds this many bytes.
LOG_ROTATION_BYTES = 10 * 1024 * 1024
#: At most this many core memories (core.json is rewritten whole by every change, and each
#: one is a candidate for every turn: kept small).
MAX_CORE_MEMORIES = 200
#: At most this many active soft memories (soft.jsonl takes an add as one appended line;
#: forgotten ones do not count).
MAX_SOFT_MEMORIES = 10_000
#: A memory file (core.json, soft.jsonl) is read only up to this size; a change that
#: would make it larger is refused.
MAX_MEMORY_FILE_BYTES = 32 * 1024 * 1024
#: config.json is read only when it holds at most this many bytes (larger: invalid_config).
CONFIG_FILE_BYTES = 4 * 1024 * 1024
#: auth.json (the stored login) is read only when it holds at most this many bytes.
AUTH_FILE_BYTES = 4 * 1024 * 1024
#: A command hook's stdout and stderr are each kept up to this many bytes (its stdout is
#: what it adds to the model's context: `kward.agent.hooks`).
HOOK_OUTPUT_BYTES = 16 * 1024
