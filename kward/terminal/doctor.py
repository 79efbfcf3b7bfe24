"""`kward doctor`: one line per check, `ok`, `warn` or `fail`; exit 1 when any failed.

Checks: the environment (the variables `kward rpc` would refuse), config.json (the
`initialize` warnings and `config/read` of an in-process server), the provider and model
it would use (`models/current`), where credentials come from (environment variables,
config.json keys, the stored login file; values are never shown), the keyring backend
(`keyring` is imported here and nowhere else in the terminal), whether the endpoints in
use answer (a HEAD request with a 2 s timeout; any HTTP answer counts as reachable), and
whether the config directory is writable, whether the shell sandbox
(`security.sandbox`) is configured, available and in force (the `security.sandbox`
capability of `initialize`), which command hooks are configured (`hooks`), a listening server at the default
socket (`kward rpc --listen unix://`: its pid, connections and active turns), and each MCP server of
`mcp.servers` (started, waited for up to `MCP_WAIT` seconds: ready with its tool count, or why not) and the
web_search endpoint. Nothing is created or changed: a config.json
open to others is reported (a `warn` line naming its mode), not narrowed as the other
commands do (the stores are made with `narrow_mode=False`). Every config problem of
kward.terminal.config_check is a `fail` line of its check (`warn` for a key kward does
not read, or a mode wider than 0600); the checks after it run all the same.

Main thread; the endpoint checks run on short-lived threads of their own.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Mapping, TextIO

from kward import __version__, diagnostics
from kward.client import Client, RpcError
from kward.config.settings import resolve_settings
from kward.config.store import resolve_paths
from kward.providers.specs import PROVIDERS
from kward.terminal import config_check
from kward.terminal.host import EnvironmentProblem, check_environment
from kward.terminal.render import short
from kward.terminal.style import Style
from kward.terminal.wording import error_text, login_fix

TIMEOUT = 2.0
MCP_WAIT = 15.0  # seconds the MCP servers get to start


class Report:
    """The report being printed: one line per check; `failed` once a check failed."""

    def __init__(self, out: TextIO, env: Mapping[str, str]):
        self.out = out
        self.style = Style.for_stream(out, env)
        self.failed = False

    def line(self, status: str, check: str, detail: str) -> None:
        color = {"ok": self.style.green, "warn": self.style.yellow, "fail": self.style.red}[status]
        self.failed |= status == "fail"
        self.out.write(f"{color(f'{status:<4}')}  {check:<12} {detail}\n")
        self.out.flush()


def run(env: Mapping[str, str], cwd: str, out: TextIO | None = None) -> int:
    diagnostics.log_to_stderr_only()  # (doctor creates nothing: no log file)
    report = Report(out or sys.stdout, env)
    report.line("ok", "kward", f"{__version__} on Python {sys.version.split()[0]} ({sys.executable})")
    try:
        check_environment(env)
    except EnvironmentProblem as exc:
        report.line("fail", "environment", str(exc))
        _config_dir(report, env, config_check.directory_troubles(resolve_paths(env)))
        return 1
    report.line("ok", "environment", "every variable kward checks is usable")
    troubles = config_check.diagnose(env)
    with Client.in_process(env=env, cwd=cwd, narrow_config_mode=False) as client:
        init = client.initialize(name="kward-doctor", version=__version__)
        config = _config(report, client, init, [t for t in troubles if t.check == "config"])
        _sandbox(report, init)
        _hooks(report, init, config)
        _mcp(report, client, config, env)
        try:
            current = client.current_model()
            provider = str(current.get("provider"))
            report.line("ok", "provider", f"{provider}, model {current.get('id')}")
        except RpcError as exc:
            provider = None
            report.line("fail", "provider", _provider_failure(exc, env))
    _credentials(report, env, config, provider)
    _keyring(report)
    _endpoints(report, env, config, provider)
    _config_dir(report, env, [t for t in troubles if t.check == "config dir"])
    _server(report, env)
    return 1 if report.failed else 0


def _server(report: Report, env: Mapping[str, str]) -> None:
    """A listening `kward rpc --listen unix://` at the default socket: its pid, connections
    and active turns (none listening is fine)."""
    from kward.client.socket_transport import default_address, server_status

    path = default_address(resolve_paths(env).config_dir)
    if not os.path.exists(path):
        report.line("ok", "server", f"none listening on {path}")
        return
    listening, line = server_status(path)
    report.line("ok" if listening else "warn", "server", line)


def _config(report: Report, client: Client, init: Mapping[str, Any],
            troubles: list[config_check.Trouble]) -> dict[str, Any]:
    """One line per config.json problem (`fail`; `warn` for a key kward merely does not
    read), else an ok line; the config values (redacted), {} when unreadable."""
    for trouble in troubles:
        report.line("warn" if trouble.severity == "note" else "fail", "config", trouble.line)
    if not troubles:  # what the server says (should the terminal's check have missed something)
        for warning in init.get("warnings") or []:
            report.line("fail", "config", str(warning.get("message", "")))
    try:
        result = client.request("config/read", {})
    except RpcError:
        return {}  # already reported
    if not troubles and not init.get("warnings"):
        path = Path(result.get("path", ""))
        values = result.get("config") or {}
        detail = f"{path} ({len(values)} settings)" if path.exists() else f"{path} (not created yet: defaults)"
        report.line("ok", "config", detail)
    return result.get("config") or {}


def _sandbox(report: Report, init: Mapping[str, Any]) -> None:
    """The shell sandbox: `ok` when off or in force, `fail` when configured but unusable
    (every shell command is then refused), `warn` while config.json cannot be read."""
    status = ((init.get("capabilities") or {}).get("security") or {}).get("sandbox") or {}
    mode, reason = status.get("mode"), status.get("reason")
    if status.get("available") is None:  # off: not probed by initialize; is it there at all?
        from kward.sandbox import find_bwrap

        bwrap = "bwrap on PATH" if find_bwrap(os.environ) else "bwrap not installed"
    else:
        bwrap = "bwrap available" if status.get("available") else "bwrap not usable"
    if status.get("inForce"):
        network = "network allowed" if status.get("network") else "no network"
        report.line("ok", "sandbox", f"{mode} in force: shell commands run under bwrap ({network})")
    elif mode == "unknown":
        report.line("warn", "sandbox", "cannot be told while config.json cannot be read (see the config line)")
    elif mode == "off":
        report.line("ok", "sandbox", f"off: shell commands are not confined ({bwrap}; "
                                     'set security.sandbox to "workspace-write" to confine them)')
    else:
        what = "security.sandbox" if mode == "invalid" else mode
        report.line("fail", "sandbox", f"{what} configured but not in force: {reason}")


def _hooks(report: Report, init: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """The command hooks: how many of each event run (`fail` when a list cannot be used:
    every model turn fails until it is fixed)."""
    status = (init.get("capabilities") or {}).get("hooks") or {}
    sandboxed = ((init.get("capabilities") or {}).get("security") or {}).get("sandbox") or {}
    if sandboxed.get("mode") == "unknown":  # config.json cannot be read
        report.line("warn", "hooks", "cannot be told while config.json cannot be read (see the config line)")
        return
    if status.get("invalid"):
        report.line("fail", "hooks", "a hooks list cannot be used, so every model turn fails (see the config line)")
        return
    hooks = config.get("hooks")
    counts = [f"{event} {len(hooks[event])}" for event in status.get("events") or []
              if isinstance(hooks, dict) and isinstance(hooks.get(event), list) and hooks[event]]
    if not counts:
        report.line("ok", "hooks", "none configured")
        return
    where = "under the sandbox" if sandboxed.get("inForce") else "unsandboxed, as you"
    report.line("ok", "hooks", f"{status.get('configured', 0)} configured ({', '.join(counts)}), run {where}")


def _mcp(report: Report, client: Client, config: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """One line per MCP server (`mcp/status`, after the servers had up to MCP_WAIT seconds
    to start), and one for web_search."""
    import time

    deadline = time.monotonic() + MCP_WAIT
    pause = threading.Event()
    servers: list[dict[str, Any]] = []
    while True:
        try:
            servers = list(client.request("mcp/status").get("servers") or [])
        except RpcError as exc:
            report.line("fail", "mcp", f"the servers cannot be told: {exc}")
            return
        if not any(s.get("status") == "starting" for s in servers) or time.monotonic() > deadline:
            break
        pause.wait(0.1)
    if not servers:
        report.line("ok", "mcp", "no servers configured (mcp.servers)")
    for server in servers:
        name, transport = short(str(server.get("name")), 40), server.get("transport")
        if not server.get("enabled"):
            report.line("ok", "mcp", f"{name} ({transport}): switched off (enabled: false)")
        elif server.get("status") == "available":
            count = server.get("toolCount", 0)
            report.line("ok", "mcp", f"{name} ({transport}): ready, {count} tool{'' if count == 1 else 's'}")
        elif server.get("status") == "starting":
            report.line("warn", "mcp", f"{name} ({transport}): still starting after {MCP_WAIT:g} s")
        else:
            report.line("fail", "mcp", f"{name} ({transport}): {short(str(server.get('error')), 300)}")
    search = resolve_settings(config, env).mcp
    if not search.web_search_enabled:
        report.line("ok", "web search", "switched off (web_search.enabled: false)")
    else:
        from kward.mcp.http import shown_url

        report.line("ok", "web search", f"web_search asks {shown_url(search.web_search_url)}")


def _provider_failure(exc: RpcError, env: Mapping[str, str]) -> str:
    """Why the provider cannot be told: a config.json that cannot be read is named on the
    config line already."""
    if exc.data.get("path") == str(resolve_paths(env).config_file):
        return "cannot be told while config.json cannot be read (see the config line)"
    return error_text(exc)


def _credentials(report: Report, env: Mapping[str, str], config: Mapping[str, Any], provider: str | None) -> None:
    auth_file = resolve_paths(env).auth_file
    found: dict[str, list[str]] = {"Codex": [], "OpenRouter": [], "OpenAICompatible": []}
    if env.get("OPENAI_ACCESS_TOKEN"):
        found["Codex"].append("OPENAI_ACCESS_TOKEN (environment)")
    if auth_file.is_file():
        found["Codex"].append(f"OpenAI login ({auth_file})")
    if env.get("OPENROUTER_API_KEY"):
        found["OpenRouter"].append("OPENROUTER_API_KEY (environment)")
    if config.get("openrouter_api_key"):
        found["OpenRouter"].append("openrouter_api_key (config.json)")
    if config.get("openai_compat_api_key"):
        found["OpenAICompatible"].append("openai_compat_api_key (config.json)")
    sources = [s for group in found.values() for s in group]
    listed = ", ".join(sources) if sources else "none"
    if provider == "Scripted":
        report.line("ok", "credentials", f"the Scripted provider needs none; found: {listed}")
    elif provider == "OpenAICompatible" or (provider in found and found[provider]):
        report.line("ok", "credentials", listed)
    else:
        report.line("warn", "credentials", f"none for {provider or 'the provider'} (turns will fail: "
                                           f"{login_fix(provider)}); found: {listed}")


def _keyring(report: Report) -> None:
    try:
        import keyring

        backend = keyring.get_keyring()
    except Exception as exc:  # a broken keyring install must not break the doctor
        report.line("warn", "keyring", f"unavailable ({type(exc).__name__}: {exc}); secrets would go to a 0600 file")
        return
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    usable = not name.startswith(("keyring.backends.fail", "keyring.backends.null"))
    if name.endswith("chainer.ChainerBackend") and not getattr(backend, "backends", None):
        usable = False
    if usable:
        report.line("ok", "keyring", name)
    else:
        report.line("warn", "keyring", f"no usable OS keyring ({name}); secrets would go to a 0600 file")


def _endpoints(report: Report, env: Mapping[str, str], config: Mapping[str, Any], provider: str | None) -> None:
    """The active provider's base URL and every base URL set explicitly, each HEAD-checked."""
    base_urls = resolve_settings(config, env).providers.base_urls
    wanted = []
    for spec in PROVIDERS:
        if spec.base_url is None:
            continue
        explicit = (spec.base_url.env and env.get(spec.base_url.env)) or (spec.base_url.key and config.get(spec.base_url.key))
        if spec.label == provider or explicit:
            url = base_urls.get(spec.key)
            if url:
                wanted.append((spec.label, url))
            elif spec.label == provider:
                report.line("fail", "endpoint", f"{spec.label}: no base URL configured ({spec.base_url.key})")
    if not wanted:
        if provider == "Scripted":
            report.line("ok", "endpoint", "the Scripted provider works offline")
        elif provider is None:
            report.line("warn", "endpoint", "not checked: the provider cannot be told (see above)")
        return
    results: dict[str, str] = {}

    def check(url: str) -> None:  # on a thread of its own
        results[url] = _reach(url)

    threads = [threading.Thread(target=check, args=(url,), daemon=True) for _, url in wanted]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 3)
    for label, url in wanted:
        outcome = results.get(url, "no answer in time")
        if outcome.startswith("HTTP "):
            report.line("ok", "endpoint", f"{label} {url} answers ({outcome})")
        else:
            report.line("fail", "endpoint", f"{label} {url} unreachable: {outcome}")


def _reach(url: str) -> str:
    """`HTTP <status>` when the server answered, else why not."""
    import requests

    try:
        response = requests.head(url, timeout=TIMEOUT, allow_redirects=False)
    except requests.RequestException as exc:
        return _reason(exc)
    response.close()
    return f"HTTP {response.status_code}"


def _reason(exc: BaseException) -> str:
    """The innermost cause in a few words (requests wraps urllib3's errors twice)."""
    inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else exc
    text = str(getattr(inner, "reason", inner))
    if "): " in text:  # "HTTPSConnection(host=..., port=...): Failed to resolve ..."
        text = text.split("): ", 1)[1]
    return short(text, 160)


def _config_dir(report: Report, env: Mapping[str, str], troubles: list[config_check.Trouble]) -> None:
    for trouble in troubles:
        report.line("fail", "config dir", trouble.line)
    if troubles:
        return
    directory = resolve_paths(env).config_dir
    if not directory.is_dir():
        report.line("ok", "config dir", f"{directory} does not exist yet and can be created")
        return
    mode = directory.stat().st_mode & 0o777
    if mode & 0o077:
        report.line("warn", "config dir", f"{directory} is writable but open to others (mode {mode:o}; 700 expected)")
    else:
        report.line("ok", "config dir", f"{directory} is writable")
