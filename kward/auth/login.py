"""OpenAI OAuth logins: one `OAuthLogin` per attempt, kept by id in a `LoginManager`.

A login has an id (`loginId`), the `authorizationUrl` to open, the `redirectUri` its
callback listener serves, and a status: ``pending``, then ``completed``, ``failed`` or
``cancelled`` (double l; clients poll for these words). It completes either through the
browser's redirect to its loopback listener (`callback.CallbackServer`) or through
`submit` with a code, ``code#state`` or the whole callback URL (a `state` there must be
the login's). A `state` mismatch is refused and leaves the login pending; a denied
consent, a refused code or the timeout fail it; `cancel` cancels it.

The code is exchanged at the token endpoint (`tokens.exchange_code`) and the tokens saved
(`save`, called under the login's lock) before the status becomes ``completed``.

Threads: each login owns one thread (started by `start`) that serves the listener until
the login leaves ``pending`` or times out, then closes the listener and, last, calls
`on_finished(state)` once on that thread (the listener is closed by then, so a new login
can bind the port at once). `cancel()` sets the stop signal and joins the thread (2 s).
`submit` exchanges the code on the caller's thread. A login's transitions are serialized
by its lock (held over the save of the tokens, so a cancel cannot slip between save and
``completed``); `state()` and `status` read one tuple and never wait for it. A login is
reported as a `LoginState` (its id, URLs, status and words; never a secret): the RPC face
shapes it into the `auth/loginStatus` object (`kward.rpc.wire.auth.login`). The manager keeps at most
`limit` logins (finished ones are forgotten oldest first), and starting a login cancels
any pending one (they would share the callback port).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from typing import Callable, Final, Literal, NamedTuple

from kward.auth.callback import CallbackServer
from kward.auth.credentials import OPENAI, Credentials
from kward.auth.oauth import (
    CALLBACK_PATH,
    CallbackParams,
    OAuthSettings,
    authorize_url,
    callback_params,
    code_problem,
    new_state,
    parse_pasted,
    pkce_pair,
    redirect_uri,
    same_state,
)
from kward.auth.tokens import OpenAITokens, TokenEndpointError, exchange_code
from kward.errors import InvalidParams, LoginError, as_kward_error
from kward.redact import redact_text

log = logging.getLogger(__name__)

#: Where a login stands: pending until it completed, failed or was cancelled.
LoginStatus = Literal["pending", "completed", "failed", "cancelled"]
PENDING: Final = "pending"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
DEFAULT_TIMEOUT = 300.0
MAX_TIMEOUT = 3600.0
POLL_SECONDS = 0.5  # the longest wait between checks of the deadline
JOIN_SECONDS = 2.0
SUCCESS_PAGE = "Signed in to kward. You can close this window."


class LoginState(NamedTuple):
    """A login as it stood when taken: `status` is one of PENDING, COMPLETED, FAILED,
    CANCELLED; `message` and `error` are words for people (either may be None)."""

    provider_id: str
    login_id: str
    status: LoginStatus
    authorization_url: str
    redirect_uri: str
    message: str | None = None
    error: str | None = None


class _Outcome(NamedTuple):
    """A login's status and its words for people (error, message), changed as one value."""

    status: LoginStatus = PENDING
    error: str | None = None
    message: str | None = None


#: The code exchange: (settings, code, PKCE verifier, redirect URI) -> the tokens.
Exchange = Callable[[OAuthSettings, str, str, str], OpenAITokens]
#: Called once with a login's final state, on the login's thread.
Finished = Callable[[LoginState], None]


def denied_message(params: CallbackParams) -> str:
    """What an ``error=`` callback (OAuth's error redirect) means, in words."""
    desc = redact_text(params.error_description or "")[:300]
    if params.error == "access_denied" and "missing_codex_entitlement" in desc:
        return "Codex is not enabled for this ChatGPT workspace."
    return f"The authorization server refused the login ({params.error}{': ' + desc if desc else ''})."


def check_timeout(timeout: float | None) -> float:
    """The callback wait in seconds (None: the default); ValueError outside (0, 3600], NaN
    included. The RPC layer checks its param first and names it."""
    seconds = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    if not 0 < seconds <= MAX_TIMEOUT:
        raise ValueError(f"a login timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    return seconds


class OAuthLogin:
    """One login attempt (see the module docstring). Build, then `start()`."""

    provider_id = OPENAI

    def __init__(self, settings: OAuthSettings, save: Callable[[OpenAITokens], None], *,
                 timeout: float | None = None, on_finished: Finished | None = None, exchange: Exchange = exchange_code):
        self.login_id = uuid.uuid4().hex
        self.settings = settings
        self.timeout = check_timeout(timeout)
        self._save = save
        self._exchange = exchange
        self._on_finished = on_finished
        self._server = CallbackServer(self._respond, settings.port)
        self.redirect_uri = redirect_uri(self._server.port)
        for _ in range(32):  # random text can look like a key (`-sk-...`) to the redaction of responses
            self._verifier, challenge = pkce_pair()
            self._state = new_state()
            self.authorization_url = authorize_url(settings, self.redirect_uri, challenge, self._state)
            if redact_text(self.authorization_url) == self.authorization_url:
                break
        self._lock = threading.Lock()  # serializes transitions; readers take `_outcome` as it is
        self._outcome = _Outcome()
        self._exchanging = False
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"oauth-login-{self.login_id[:8]}", daemon=True)

    # --- state --------------------------------------------------------------------------

    @property
    def status(self) -> LoginStatus:
        return self._outcome.status

    @property
    def error(self) -> str | None:
        return self._outcome.error

    @property
    def listen_address(self) -> tuple[str, int]:
        return self._server.address

    def state(self) -> LoginState:
        """The login as it stands (never blocks)."""
        outcome = self._outcome
        return LoginState(self.provider_id, self.login_id, outcome.status, self.authorization_url,
                          self.redirect_uri, outcome.message, outcome.error)

    def _finish_locked(self, status: LoginStatus, *, error: str | None = None, message: str | None = None) -> bool:
        if self._outcome.status != PENDING:
            return False
        self._outcome = _Outcome(status, error, message)
        self._stop.set()
        self._server.wake()
        return True

    def _finish(self, status: LoginStatus, *, error: str | None = None, message: str | None = None) -> bool:
        with self._lock:
            return self._finish_locked(status, error=error, message=message)

    # --- the thread ---------------------------------------------------------------------

    def start(self) -> "OAuthLogin":
        self._thread.start()
        return self

    def _run(self) -> None:
        deadline = time.monotonic() + self.timeout
        try:
            while not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0 and not self._exchanging:
                    self._finish(FAILED, error=f"No OpenAI login callback arrived within {self.timeout:g} s; "
                                               "start the login again.")
                    break
                self._server.handle_one(min(max(left, 0.0), POLL_SECONDS) or POLL_SECONDS)
        except Exception:  # never expected; the login must still end and say so
            log.exception("OAuth login thread failed")
            self._finish(FAILED, error="The login listener failed; start the login again.")
        finally:
            self._server.close()
            if self._on_finished is not None:
                try:
                    self._on_finished(self.state())
                except Exception:
                    log.exception("an on_finished callback of a login failed")
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the login has finished and its listener is closed."""
        return self._done.wait(timeout)

    def cancel(self) -> LoginState:
        self._finish(CANCELLED, message="The OpenAI login was cancelled.")
        if self._thread.ident is not None and threading.current_thread() is not self._thread:
            self._thread.join(JOIN_SECONDS)
        return self.state()

    # --- completing ---------------------------------------------------------------------

    def _complete(self, code: str) -> bool:
        """Exchange `code` and save the tokens; True when the login completed."""
        with self._lock:
            if self._outcome.status != PENDING or self._exchanging:
                return False
            self._exchanging = True
        try:
            try:
                tokens = self._exchange(self.settings, code, self._verifier, self.redirect_uri)
            except TokenEndpointError as exc:
                log.warning("OpenAI login %s: the code exchange failed: %s", self.login_id[:8], exc)
                problem = "OpenAI refused the login" if exc.status else "Could not reach the OpenAI login server"
                self._finish(FAILED, error=f"{problem}: {exc}.")
                return False
            with self._lock:
                if self.status != PENDING:  # cancelled meanwhile: the tokens are dropped
                    return False
                try:
                    self._save(tokens)
                except Exception as exc:
                    known = as_kward_error(exc)
                    if known is None:
                        log.exception("OpenAI login: saving the tokens failed")
                    self._finish_locked(FAILED, error="Could not save the login: "
                                        f"{known.message if known else type(exc).__name__}.")
                    return False
                self._finish_locked(COMPLETED, message="Logged in to OpenAI.")
                return True
        finally:
            with self._lock:
                self._exchanging = False

    def _respond(self, path: str, query: str) -> tuple[int, str]:
        """Answer one request to the listener (on the login's thread)."""
        if path != CALLBACK_PATH:
            return 404, "Not found."
        params = callback_params(query)
        if not same_state(params.state, self._state):
            return 400, "State mismatch: this page does not belong to the current kward login. Start the login again."
        if self.status != PENDING or self._exchanging:
            return 409, "This kward login has already finished. You can close this window."
        if params.error:
            message = denied_message(params)
            self._finish(FAILED, error=message)
            return 400, f"Login failed: {message} You can close this window."
        if code_problem(params.code):
            return 400, "The callback holds no valid authorization code."
        if self._complete(params.code):
            return 200, SUCCESS_PAGE
        return 400, f"Login failed: {self.error or 'the login ended'} You can close this window."

    def submit(self, text: object) -> LoginState:
        """Complete the login with a pasted code or callback URL (on the caller's thread).
        Raises LoginError (`login_finished`, `login_state_mismatch`, `login_failed`) or
        InvalidParams naming `code`."""
        if not isinstance(text, str):
            raise InvalidParams("Invalid params: 'code' must be a string", data={"param": "code"})
        params = parse_pasted(text)
        status, busy = self.status, self._exchanging
        if status != PENDING or busy:
            raise LoginError(f"The OpenAI login {self.login_id} is {'being completed' if busy else status}.",
                             reason="login_finished", data={"loginId": self.login_id, "status": status})
        if params.state is not None and not same_state(params.state, self._state):
            raise LoginError("The callback URL's state does not match this login; it stays pending. Paste the "
                             "URL of the latest login attempt.", reason="login_state_mismatch",
                             data={"loginId": self.login_id})
        if params.error:
            message = denied_message(params)
            self._finish(FAILED, error=message)
            raise LoginError(message, data={"loginId": self.login_id, "status": FAILED})
        problem = code_problem(params.code)
        if problem:
            raise InvalidParams(f"Invalid params: 'code' {problem}", data={"param": "code"})
        if not self._complete(params.code):
            status = self.status
            if status == FAILED:
                raise LoginError(self.error or "The login failed.", data={"loginId": self.login_id, "status": status})
            raise LoginError(f"The OpenAI login {self.login_id} is {status}.", reason="login_finished",
                             data={"loginId": self.login_id, "status": status})
        return self.state()


class LoginManager:
    """Logins by id (bounded). See the module docstring; any thread."""

    def __init__(self, credentials: Credentials, *, limit: int = 16, exchange: Exchange = exchange_code):
        self.credentials = credentials
        self.limit = limit
        self._exchange = exchange
        self._logins: "OrderedDict[str, OAuthLogin]" = OrderedDict()
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()

    def start(self, *, timeout: float | None = None, on_finished: Finished | None = None) -> OAuthLogin:
        """Start a login: bind the listener, start its thread, return it (pending). Raises
        ConfigError for a bad setting, OSError when no port can be bound."""
        settings = self.credentials.oauth_settings()
        check_timeout(timeout)  # before an older login is cancelled: bad input changes nothing

        def finished(state: LoginState) -> None:
            if state.status == COMPLETED:
                self.credentials.changed(OPENAI)
            if on_finished is not None:
                on_finished(state)

        with self._start_lock:
            with self._lock:
                pending = [login for login in self._logins.values() if login.status == PENDING]
            for old in pending:  # it holds the callback port
                old.cancel()
            login = OAuthLogin(settings, lambda tokens: self.credentials.save_openai(tokens, notify=False),
                               timeout=timeout, on_finished=finished, exchange=self._exchange)
            with self._lock:
                self._logins[login.login_id] = login
                for old_id in [i for i, old in self._logins.items() if old.status != PENDING]:
                    if len(self._logins) <= self.limit:
                        break
                    del self._logins[old_id]
            return login.start()

    def get(self, login_id: object) -> OAuthLogin:
        if not isinstance(login_id, str) or not login_id:
            raise InvalidParams("Invalid params: 'loginId' must be a non-empty string", data={"param": "loginId"})
        with self._lock:
            login = self._logins.get(login_id)
        if login is None:
            raise LoginError(f"Unknown login: {login_id[:100]}", reason="login_not_found",
                             data={"loginId": login_id[:100]})
        return login

    def status(self, login_id: object) -> LoginState:
        return self.get(login_id).state()

    def submit(self, login_id: object, code: object) -> LoginState:
        return self.get(login_id).submit(code)

    def cancel(self, login_id: object) -> LoginState:
        return self.get(login_id).cancel()

    def close(self) -> None:
        """Cancel every pending login and join its thread."""
        with self._lock:
            logins = list(self._logins.values())
        for login in logins:
            login.cancel()
