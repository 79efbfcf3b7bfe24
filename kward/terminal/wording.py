"""The terminal's words for what the server reports: the one place that turns an error
(its stable `reason` and `data`, never its message text) into what a person at the
terminal reads and types: `kward login`, `/model`, `/new`, a config key, not a protocol
method or a wire field name (`auth/startOpenAILogin`, `'apiKey'`, `sessionId`).

`error_text(exc)` for an `RpcError` of a request, `turn_error_text(error)` for the
`error` of a failed turn (a `turnFinished`/`error` payload); both return one line. A
reason without terminal words of its own keeps the server's message (those are written
for people already). `login_fix(provider)` is the command that gives a provider
credentials. Pure functions; any thread.
"""

from __future__ import annotations

from typing import Any, Mapping

from kward.client import RpcError

#: provider label (as `models/current` names it) -> (the login command, its variable)
LOGINS: dict[str, tuple[str, str]] = {
    "Codex": ("kward login", "OPENAI_ACCESS_TOKEN"),
    "OpenRouter": ("kward login openrouter", "OPENROUTER_API_KEY"),
}

#: wire param names -> what the terminal calls them
PARAM_WORDS: dict[str, str] = {
    "apiKey": "the API key", "model": "the model id", "provider": "the provider", "providerId": "the provider",
    "effort": "the reasoning level", "path": "the path", "format": "the format", "sessionId": "the session",
    "entryId": "the message", "workspaceRoot": "the workspace", "range": "the range", "bucket": "the bucket",
    "text": "the text", "id": "the memory id", "name": "the name", "customInstructions": "the instructions",
    "code": "the pasted code", "loginId": "the login", "value": "the value", "values": "the settings",
}

#: reasons whose terminal words do not depend on data
REASON_WORDS: dict[str, str] = {
    "session_not_found": "this session is no longer open; start a new one with /new, or /resume it",
    "session_file_gone": "this session's file was deleted or moved, so nothing more can be saved to it; "
                         "start a new one with /new",
    "session_busy": "another kward is running a turn in this session; wait for it, or start a new one with /new",
    "nothing_to_compact": "nothing to compact yet: the conversation is still short enough to be kept whole",
    "already_compacted": "nothing to compact: nothing was said since the last compaction",
    "turn_in_progress": "a turn is running; compact once it has finished",
    "empty_summary": "the model returned an empty summary; the conversation was left as it was",
    "shutting_down": "kward is shutting down",
    "overloaded": "kward is busy; try again",
}


def login_fix(provider: str | None) -> str:
    """What gives `provider` credentials, as the user types it."""
    if provider in LOGINS:
        command, variable = LOGINS[str(provider)]
        return f"run `{command}`, or set {variable}"
    if provider == "OpenAICompatible":
        return "set openai_compat_api_key in config.json if the server needs a key"
    return "run `kward login` (OpenAI) or `kward login openrouter`"


def not_logged_in(provider: str | None) -> str:
    """The line for a provider without usable credentials."""
    if provider == "Codex":
        return (f"not logged in to OpenAI (or the login expired): {login_fix(provider)}; "
                "or use OpenRouter: `kward login openrouter`")
    if provider == "OpenRouter":
        return f"no OpenRouter API key: {login_fix(provider)}"
    if provider == "OpenAICompatible":
        return f"the OpenAI-compatible server refused the credentials: {login_fix(provider)}"
    return f"not logged in: {login_fix(provider)}"


def describe(reason: str | None, message: str, data: Mapping[str, Any]) -> str:
    """One line in the terminal's words for an error of `reason` (see the module docstring)."""
    if reason == "not_logged_in":
        provider = data.get("provider")
        return not_logged_in(provider if isinstance(provider, str) else None)
    if reason in REASON_WORDS:
        return REASON_WORDS[reason]
    param = data.get("param")
    if reason == "invalid_params" and isinstance(param, str) and param in PARAM_WORDS:
        return _param_message(message, param)
    return " ".join(message.split()) or (reason or "failed").replace("_", " ")


def _param_message(message: str, param: str) -> str:
    """`Invalid params: 'apiKey' must be ...` (kward.rpc.params) -> `the API key must be ...`."""
    for prefix in (f"Invalid params: '{param}' ", f"'{param}' "):
        if message.startswith(prefix):
            return f"{PARAM_WORDS[param]} {message[len(prefix):]}"
    return message.replace(f"'{param}'", PARAM_WORDS[param])


def error_text(exc: RpcError) -> str:
    """The line for an error response."""
    return describe(exc.reason, exc.message, exc.data)


def turn_error_text(error: Mapping[str, Any]) -> str:
    """The line for a failed turn's `error` (``{message, code, reason, data?}``)."""
    data = error.get("data")
    reason = error.get("reason")
    if not isinstance(reason, str) and isinstance(data, dict):
        reason = data.get("reason")
    return describe(reason if isinstance(reason, str) else None, str(error.get("message") or "the turn failed"),
                    data if isinstance(data, dict) else {})
