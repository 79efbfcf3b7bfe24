"""auth/* and `auth/loginFinished` (docs/protocol.md "Auth methods"). No shape holds a
secret: booleans, sources, names and the authorization URL."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from kward.auth.login import MAX_TIMEOUT
from kward.rpc.methods.auth import MAX_CODE_CHARS
from kward.rpc.shapes.base import AN_ADDITION, Doc, Entry, Length, Range


class AuthStatusResult(TypedDict):
    openaiOAuth: Annotated[bool, Doc("an OpenAI login is stored")]
    openaiOAuthSource: Annotated[str | None, Doc("stored, or null")]
    openaiAccessToken: Annotated[bool, Doc("OPENAI_ACCESS_TOKEN is set (used instead of the stored login)")]
    openaiAccessTokenSource: Annotated[str | None, Doc("environment, or null")]
    openrouterApiKey: Annotated[bool, Doc("an OpenRouter key is available")]
    openrouterApiKeySource: Annotated[str | None, Doc("environment (it wins), stored, or null")]
    credentialStore: Annotated[str, AN_ADDITION, Doc("keyring or file")]
    credentialStoreDetail: Annotated[str, AN_ADDITION, Doc("the keyring backend, or the files and their mode")]
    credentialStoreReason: Annotated[str, AN_ADDITION, Doc("why this store was chosen")]
    authFileMode: Annotated[str | None, AN_ADDITION,
                            Doc("auth.json's permission bits as four octal digits (\"0600\"); null when there is no "
                                "such file or kward does not read it")]
    authFileProblem: Annotated[str | None, AN_ADDITION, Doc("why auth.json is not read, else null")]


class AuthProviderCard(TypedDict):
    id: Annotated[str, Doc("openai or openrouter")]
    name: str
    authType: Annotated[str, Doc("oauth or api_key")]
    configured: Annotated[bool, Doc("a credential is available, from either source")]
    source: Annotated[str | None, Doc("environment (wins) or stored, or null")]
    storedCredentialType: Annotated[str | None, Doc("the authType of the stored credential; null when none is stored")]
    canLogout: Annotated[bool, Doc("a stored credential exists that auth/logoutProvider removes")]
    usesCallbackServer: Annotated[bool, Doc("the login uses kward's loopback callback")]
    credentialStore: Annotated[str, AN_ADDITION, Doc("keyring or file")]


class AuthProvidersResult(TypedDict):
    providers: list[AuthProviderCard]
    credentialStore: Annotated[str, AN_ADDITION]


class AuthLoginWithApiKeyParams(TypedDict):
    providerId: Annotated[str, Doc("openrouter")]
    apiKey: Annotated[str, Doc("8 to 1024 printable ASCII characters without blanks, after surrounding whitespace "
                               "is removed")]


class AuthLoginWithApiKeyResult(TypedDict):
    providerId: str
    ok: bool
    credentialStore: Annotated[str, AN_ADDITION]
    message: Annotated[str, Doc("where the key was kept, and whether OPENROUTER_API_KEY overrides it")]


class AuthLogoutProviderParams(TypedDict):
    providerId: Annotated[str, Doc("openai or openrouter")]


class AuthLogoutProviderResult(TypedDict):
    providerId: str
    removed: Annotated[bool, Doc("a stored credential was deleted")]
    configured: Annotated[bool, Doc("a credential stays in use (from the environment)")]
    source: Annotated[str | None, Doc("environment, or null")]
    message: str


class _AuthLoginRequired(TypedDict):
    providerId: Annotated[str, Doc("openai")]
    loginId: str
    status: Annotated[Literal["pending", "completed", "failed", "cancelled"],
                      Doc("pending, then completed, failed or cancelled")]
    authorizationUrl: Annotated[str, Doc("the address to open in a browser")]
    redirectUri: Annotated[str, Doc("http://localhost:<port>/auth/callback")]


class AuthLogin(_AuthLoginRequired, total=False):
    """An OpenAI OAuth login: the result of the login methods and `auth/loginFinished`."""

    message: Annotated[str, Doc("words for people: Logged in to OpenAI.")]
    error: Annotated[str, Doc("why the login failed")]


_Timeout = Annotated[float | None, Range(above=0, maximum=MAX_TIMEOUT),
                     Doc("seconds the login waits for its callback (default 300)")]


class _AuthLoginWithOAuthParamsRequired(TypedDict):
    providerId: Annotated[str, Doc("openai")]


class AuthLoginWithOAuthParams(_AuthLoginWithOAuthParamsRequired, total=False):
    timeoutSeconds: _Timeout


class AuthStartOpenAILoginParams(TypedDict, total=False):
    timeoutSeconds: _Timeout


class AuthSubmitOpenAICodeParams(TypedDict):
    loginId: Annotated[str, Length(minimum=1)]
    code: Annotated[str, Length(maximum=MAX_CODE_CHARS),
                    Doc("the callback URL the browser showed, its query string, code#state, or the bare code")]


class AuthLoginStatusParams(TypedDict):
    loginId: Annotated[str, Length(minimum=1)]


METHODS = {
    "auth/status": Entry(None, AuthStatusResult),
    "auth/providers": Entry(None, AuthProvidersResult),
    "auth/loginWithApiKey": Entry(AuthLoginWithApiKeyParams, AuthLoginWithApiKeyResult),
    "auth/logoutProvider": Entry(AuthLogoutProviderParams, AuthLogoutProviderResult),
    "auth/loginWithOAuth": Entry(AuthLoginWithOAuthParams, AuthLogin),
    "auth/startOpenAILogin": Entry(AuthStartOpenAILoginParams, AuthLogin),
    "auth/submitOpenAICode": Entry(AuthSubmitOpenAICodeParams, AuthLogin),
    "auth/loginStatus": Entry(AuthLoginStatusParams, AuthLogin),
}
NOTIFICATIONS = {
    "auth/loginFinished": Entry(AuthLogin, None),
}
