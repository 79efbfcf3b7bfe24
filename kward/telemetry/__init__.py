"""Opt-in telemetry: redacted metadata records of model requests, tool calls and turns, and
the statistics and token CSV made from them.

Off by default. A category is recorded only when `logging.enabled` and `logging.<category>`
are both on: config.json values that are literally `true`, or the variables
`KWARD_LOGGING` and `KWARD_LOGGING_<CATEGORY>` (1/true/yes/on, 0/false/no/off), which win.

Records go to `<config dir>/logs/<UTC date>.jsonl`, then `<date>-1.jsonl`, `-2`, ... once a
file reaches 10 MiB; nothing is ever deleted. A record is the redacted payload plus
`timestamp`, `category` and `event`:

| category | events |
|---|---|
| tokens | `model_usage` (provider, model, request_bytes, duration_ms, status, usage) |
| performance | `model_request`, `model_retry`, `turn`, `tool_call` (duration_ms, status, ...) |
| tools | `tool_call` (tool_name, duration_ms, status, result_bytes) |
| errors | `model_request_error`, `model_retry`, `turn_error`, `tool_error` (error_class, error_message of at most 500 characters, or provider and error_code) |

Work done for a request that carried a W3C `traceparent` adds its `trace_id` and
`parent_id` to each record. No message text, tool argument or tool output is recorded;
error records carry the error's (redacted) text.

Modules: `log` (the writer), `recorder` (a turn's records: the provider and tool
wrappers), `ranges` (the range grammar), `stats` (`logging/stats`), `tokens` (the token
CSV). The category names are `kward.config.settings.CATEGORY_FIELDS` (the fields of
`LoggingSettings`, whose `enabled_categories` `initialize` reports). Any
thread.
"""
