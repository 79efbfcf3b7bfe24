"""`kward login [openai|openrouter]`, `kward logout [provider]` and `kward auth status`.

Each is a few `auth/*` requests to an in-process server (`kward.client`), as a UI makes
them over `kward rpc`:

- `login` (OpenAI, the default): `auth/loginWithOAuth`, then the authorization URL is
  printed (and opened in a browser when there is one: on a terminal with `BROWSER`, a
  display, macOS or Windows). The login completes when the browser comes back to kward's
  loopback callback (`auth/loginFinished`), or when the user pastes the callback URL or
  the code on standard input (`auth/submitOpenAICode`), whichever comes first; a pasted
  URL of another login is refused and the login goes on waiting.
- `login openrouter`: the key is read from a hidden prompt (`getpass`) on a terminal,
  else from the first line of standard input; never from the command line.
- `logout [provider]`: `auth/logoutProvider` for one provider or both; credentials in the
  environment stay.
- `auth status`: `auth/status` and `auth/providers`: each provider's state and source, the
  credential store in use, and why the OS keyring is not used when it is not (e.g. inside
  the zipapp).

Exit status: 0 done, 1 failed (a one-line reason on stderr, in the terminal's words:
kward.terminal.wording), 2 a usage error or a config kward cannot use (the host's
check, kward.terminal.config_check). Main thread;
the login waits on one `select()` over standard input and a pipe the client's callback
thread writes to when `auth/loginFinished` arrives.
"""

from __future__ import annotations

import getpass
import os
import selectors
import sys
import threading
import webbrowser
from typing import Any, Mapping, TextIO

from kward import __version__
from kward.client import Client, Message, RpcError
from kward.redact import redact_text
from kward.terminal.host import EnvironmentProblem, Host, fail
from kward.terminal.wording import error_text

PROVIDERS = ("openai", "openrouter")
NEVER_ARGV = "an API key is read from a hidden prompt or standard input, never from the command line"
MAX_PASTE = 65536


def usage(command: str, args: list[str]) -> str | None:
    """Why `args` do not fit `command`, or None. Never quotes an argument of `login`
    beyond the provider (it could be a key)."""
    if command == "login":
        if args and args[0].lower() not in PROVIDERS:
            return "kward login: unknown provider (use openai or openrouter)"
        if len(args) > 1:
            return f"kward login: unexpected argument ({NEVER_ARGV})"
    elif command == "logout":
        if args and args[0].lower() not in PROVIDERS:
            return "kward logout: unknown provider (use openai or openrouter)"
        if len(args) > 1:
            return f"kward logout: unexpected argument: {redact_text(args[1])[:40]}"
    elif args != ["status"]:
        return "kward auth: the only subcommand is `kward auth status`"
    return None


def run(command: str, args: list[str], env: Mapping[str, str], cwd: str) -> int:
    problem = usage(command, args)
    if problem:
        sys.stderr.write(f"{problem}\n(run `kward help {command}` for the usage)\n")
        return 2
    provider = args[0].lower() if args and command != "auth" else None
    try:
        with Host(env):
            with Client.in_process(env=env, cwd=cwd) as client:
                client.initialize(name="kward-cli", version=__version__)
                try:
                    if command == "auth":
                        return status(client, sys.stdout)
                    if command == "logout":
                        return logout(client, provider, sys.stdout)
                    if provider == "openrouter":
                        return login_openrouter(client, sys.stdin, sys.stdout)
                    return login_openai(client, env, sys.stdin, sys.stdout)
                except RpcError as exc:
                    return fail(error_text(exc))
    except EnvironmentProblem as exc:
        return fail(str(exc), 2)


# --- auth status and logout ----------------------------------------------------------

def _source_line(variable: str, env: bool, stored: bool, what: str, fix: str) -> str:
    if env and stored:
        return f"{variable} (environment), used instead of the stored {what}"
    if env:
        return f"{variable} (environment)"
    if stored:
        return f"{what} stored"
    return f"not configured (run `{fix}`, or set {variable})"


def status(client: Client, out: TextIO) -> int:
    s = client.request("auth/status", {})
    cards = {c["id"]: c for c in client.request("auth/providers", {}).get("providers", [])}
    rows = [
        ("OpenAI", _source_line("OPENAI_ACCESS_TOKEN", s.get("openaiAccessToken") is True,
                                s.get("openaiOAuth") is True, "login", "kward login")),
        ("OpenRouter", _source_line("OPENROUTER_API_KEY", s.get("openrouterApiKeySource") == "environment",
                                    (cards.get("openrouter") or {}).get("canLogout") is True, "API key",
                                    "kward login openrouter")),
        ("store", f"{s.get('credentialStore')}: {s.get('credentialStoreDetail')}"),
    ]
    if s.get("credentialStore") != "keyring":
        rows.append(("keyring", f"not used: {s.get('credentialStoreReason')}"))
    if s.get("authFileProblem"):
        rows.append(("auth.json", f"not read: {s.get('authFileProblem')}"))
    for label, text in rows:
        out.write(f"{label:<11} {text}\n")
    return 0


def logout(client: Client, provider: str | None, out: TextIO) -> int:
    for provider_id in [provider] if provider else list(PROVIDERS):
        out.write(client.request("auth/logoutProvider", {"providerId": provider_id})["message"] + "\n")
    return 0


# --- login ---------------------------------------------------------------------------

def login_openrouter(client: Client, stdin: TextIO, out: TextIO) -> int:
    if stdin.isatty():
        key = getpass.getpass("OpenRouter API key (not shown): ")
    else:
        try:
            key = stdin.readline(MAX_PASTE)
            key.encode("utf-8")  # (the bytes that did not decode are surrogates under surrogateescape)
        except UnicodeError:
            return fail("the key on standard input is not UTF-8 text")
        except OSError as exc:  # not open for reading (`0>file`), an I/O error
            return fail(f"standard input cannot be read ({exc.strerror or exc}); type the key at the hidden "
                        "prompt on a terminal, or pipe it")
    if not key.strip():
        return fail("no API key given (type it at the prompt, or pipe it on standard input)")
    result = client.request("auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": key.strip()})
    out.write(result["message"] + "\n")
    return 0


def can_open_browser(env: Mapping[str, str]) -> bool:
    """A browser can be shown: `BROWSER`, a display (X11, Wayland), macOS or Windows."""
    if env.get("BROWSER") or sys.platform == "darwin" or sys.platform.startswith("win"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def _open_browser(url: str) -> bool:
    try:
        return bool(webbrowser.open(url))
    except Exception:  # no usable browser after all: the URL is printed anyway
        return False


def login_openai(client: Client, env: Mapping[str, str], stdin: TextIO, out: TextIO) -> int:
    wake_r, wake_w = os.pipe()
    finished: dict[str, dict[str, Any]] = {}  # loginId -> the auth/loginFinished params
    lock = threading.Lock()  # the pipe is closed here while the callback may still come (at shutdown)
    pipe_open = True

    def on_finished(message: Message) -> None:  # on the client's callback thread
        with lock:
            if pipe_open:
                finished.setdefault(str((message.get("params") or {}).get("loginId")), message.get("params") or {})
                os.write(wake_w, b"x")

    client.on_notification(on_finished, "auth/loginFinished")
    try:
        login = client.request("auth/loginWithOAuth", {"providerId": "openai"})
        interactive = stdin.isatty() and out.isatty()
        opened = interactive and can_open_browser(env) and _open_browser(login["authorizationUrl"])
        out.write(f"To log in to OpenAI, open this address in a browser{' (it was opened)' if opened else ''}:\n\n"
                  f"  {login['authorizationUrl']}\n\n"
                  f"kward waits for the browser at {login['redirectUri']}.\nIf that page cannot load (the browser "
                  "runs on another machine), paste the address it shows, or the code, here and press Enter.\n")
        out.flush()
        return _wait(client, login["loginId"], stdin, wake_r, finished, out)
    finally:
        with lock:
            pipe_open = False
            os.close(wake_r)
            os.close(wake_w)


def _wait(client: Client, login_id: str, stdin: TextIO, wake: int, finished: dict[str, dict[str, Any]],
          out: TextIO) -> int:
    selector = selectors.DefaultSelector()
    selector.register(wake, selectors.EVENT_READ)
    try:
        selector.register(stdin.fileno(), selectors.EVENT_READ)
    except (OSError, ValueError, AttributeError):  # no usable stdin: the callback only
        pass
    pending = b""
    with selector:
        while True:
            for key, _ in selector.select():
                if key.fd == wake:
                    os.read(wake, 64)
                    if login_id in finished:
                        return _finished(finished[login_id], out)
                    continue
                data = os.read(key.fd, 4096)
                if not data:  # end of input: the browser may still come back
                    selector.unregister(key.fd)
                    lines, pending = [pending], b""
                else:
                    pending += data
                    *lines, pending = pending.split(b"\n")
                    if len(pending) > MAX_PASTE:
                        lines, pending = [pending], b""
                for line in lines:
                    text = line.decode("utf-8", "replace").strip()
                    if text:
                        code = _submit(client, login_id, text, out)
                        if code is not None:
                            return code


def _submit(client: Client, login_id: str, text: str, out: TextIO) -> int | None:
    """Submit a pasted line; the exit status, or None to go on waiting."""
    try:
        result = client.request("auth/submitOpenAICode", {"loginId": login_id, "code": text}, timeout=120)
    except RpcError as exc:
        if exc.reason in ("login_state_mismatch", "invalid_params"):
            out.write(f"{error_text(exc).rstrip('.')}. Still waiting: paste again, or finish in the browser.\n")
            out.flush()
            return None
        if exc.reason == "login_finished":  # the browser was quicker
            return _finished(client.request("auth/loginStatus", {"loginId": login_id}), out)
        return fail(error_text(exc))
    return _finished(result, out)


def _finished(payload: dict[str, Any], out: TextIO) -> int:
    if payload.get("status") == "completed":
        out.write(f"{payload.get('message') or 'Logged in to OpenAI.'}\n")
        return 0
    return fail(payload.get("error") or payload.get("message") or f"the login {payload.get('status')}")

