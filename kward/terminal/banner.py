"""The first screen of an interactive session, before the first prompt:

    kward 0.1.0 | Codex/gpt-5.5 | /home/u/project
    credentials: none for Codex: run `kward login`, or set OPENAI_ACCESS_TOKEN
    Type a request, /help for the commands, Ctrl-D to exit.

The model and the workspace on the first line (`models/current`; when the model cannot
be told, why not), whether the provider in use has credentials on the second
(`auth/status`; for the OpenAI-compatible provider `config/read`: its server and key), with
the command or setting that fixes it when it has none. `unreported_warnings` are the `initialize` warnings the host's
config check (kward.terminal.config_check) has not already printed.

Requests on the shell's client; main thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kward import __version__
from kward.client import Client, RpcError
from kward.terminal.style import Style
from kward.terminal.wording import error_text, login_fix

HINT = "Type a request, /help for the commands, Ctrl-D to exit."
#: `initialize` warning reasons that are config.json's (reported by the host before the start)
CONFIG_REASONS = frozenset({"invalid_config", "permission_denied", "filesystem_error", "unusable_file",
                            "not_a_directory", "name_too_long", "read_only_filesystem"})


@dataclass(frozen=True, slots=True)
class Credentials:
    """Whether the provider in use can authenticate (`ok`), and in words where from, or
    what to run when it cannot."""

    ok: bool
    text: str


def lines(client: Client, cwd: str, style: Style, env: Mapping[str, str]) -> list[str]:
    """The startup lines (see the module docstring), styled; `env` is the in-process
    server's environment."""
    try:
        current = client.current_model()
    except RpcError as exc:
        model, provider = f"model unavailable: {error_text(exc)}", None
    else:
        provider = str(current.get("provider"))
        model = f"{provider}/{current.get('id')}"
    creds = credentials(client, provider, env)
    label = style.green("credentials: ") if creds.ok else style.yellow("credentials: ")
    return [style.bold(f"kward {__version__}") + style.dim(f" | {model} | {cwd}"),
            label + creds.text,
            style.dim(HINT)]


def credentials(client: Client, provider: str | None, env: Mapping[str, str]) -> Credentials:
    """Where the credentials of `provider` (a `models/current` label) come from."""
    if provider is None:
        return Credentials(False, "unknown until the model can be told (kward doctor checks everything)")
    if provider == "Scripted":
        return Credentials(True, "none needed (the Scripted provider plays a script)")
    if provider == "OpenAICompatible":
        return _compatible(client, env)
    try:
        status = client.request("auth/status", {})
    except RpcError as exc:
        return Credentials(False, f"cannot be told: {error_text(exc)}")
    if provider == "Codex":
        if status.get("openaiAccessToken"):
            return Credentials(True, "OPENAI_ACCESS_TOKEN (environment)")
        if status.get("openaiOAuth"):
            return Credentials(True, "OpenAI login (stored)")
    elif provider == "OpenRouter" and status.get("openrouterApiKey"):
        source = status.get("openrouterApiKeySource")
        return Credentials(True, "OPENROUTER_API_KEY (environment)" if source == "environment"
                           else "OpenRouter API key (stored)")
    return Credentials(False, f"none for {provider}: {login_fix(provider)}")


def _compatible(client: Client, env: Mapping[str, str]) -> Credentials:
    """The OpenAI-compatible provider: its server (a base URL must be set) and its key."""
    try:
        config = client.request("config/read", {}).get("config") or {}
    except RpcError as exc:
        return Credentials(False, f"cannot be told: {error_text(exc)}")
    if not (config.get("openai_compat_base_url") or env.get("KWARD_OPENAI_COMPAT_BASE_URL", "").strip()):
        return Credentials(False, "no OpenAI-compatible server set: set openai_compat_base_url (and "
                                  "openai_compat_api_key if it needs a key) in config.json, or "
                                  "KWARD_OPENAI_COMPAT_BASE_URL")
    if config.get("openai_compat_api_key"):
        return Credentials(True, "openai_compat_api_key (config.json)")
    return Credentials(True, f"no API key ({login_fix('OpenAICompatible')})")


def unreported_warnings(init: Mapping[str, Any]) -> list[str]:
    """The messages of the `initialize` warnings that are not config.json's."""
    return [str(w.get("message", "")) for w in init.get("warnings") or []
            if isinstance(w, dict) and w.get("reason") not in CONFIG_REASONS]
