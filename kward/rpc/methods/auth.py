"""auth/*: credentials, API-key login, logout and OpenAI OAuth logins (`runtime.auth`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.auth.login import MAX_TIMEOUT  # seconds a login may wait for its callback
from kward.rpc.method_table import Call
from kward.rpc.wire import auth as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.auth import (
        AuthLogin,
        AuthLoginWithApiKeyResult,
        AuthLogoutProviderResult,
        AuthProvidersResult,
        AuthStatusResult,
    )

MAX_CODE_CHARS = 65536  # a pasted callback URL, bounded before it is parsed


def status(call: Call) -> AuthStatusResult:
    return wire.credential_status(call.runtime.auth.status())


def providers(call: Call) -> AuthProvidersResult:
    return wire.provider_cards(call.runtime.auth.providers())


def login_with_api_key(call: Call) -> AuthLoginWithApiKeyResult:
    p = call.params
    return wire.api_key_saved(call.runtime.auth.login_with_api_key(p.text("providerId", required=True),
                                                                        p.text("apiKey", required=True)))


def logout_provider(call: Call) -> AuthLogoutProviderResult:
    return wire.logged_out(call.runtime.auth.logout(call.params.text("providerId", required=True)))


def start_openai_login(call: Call) -> AuthLogin:
    return wire.login(call.runtime.auth.start_openai_login(call.params.number("timeoutSeconds", above=0,
                                                                              max=MAX_TIMEOUT)))


def login_with_oauth(call: Call) -> AuthLogin:
    p = call.params
    return wire.login(call.runtime.auth.login_with_oauth(p.text("providerId", required=True),
                                                         p.number("timeoutSeconds", above=0, max=MAX_TIMEOUT)))


def submit_openai_code(call: Call) -> AuthLogin:
    p = call.params
    return wire.login(call.runtime.auth.submit_code(p.text("loginId", required=True, non_empty=True),
                                                    p.text("code", required=True, max_len=MAX_CODE_CHARS)))


def login_status(call: Call) -> AuthLogin:
    return wire.login(call.runtime.auth.login_status(call.params.text("loginId", required=True, non_empty=True)))
