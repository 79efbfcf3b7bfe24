"""The `auth/*` results of the credential values (`kward.auth.credentials`) and the login
object of the OAuth methods and `auth/loginFinished` (`login`). Keys as docs/protocol.md
and the original kward's. Pure functions, any thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kward.auth.credentials import (
        ApiKeySaved,
        CredentialStatus,
        LoggedOut,
        ProviderCard,
        ProviderCards,
    )
    from kward.auth.login import LoginState
    from kward.rpc.shapes.auth import (
        AuthLogin,
        AuthLoginWithApiKeyResult,
        AuthLogoutProviderResult,
        AuthProviderCard,
        AuthProvidersResult,
        AuthStatusResult,
    )


def credential_status(s: CredentialStatus) -> AuthStatusResult:
    """`auth/status`: for each credential whether it is there and its source; the store."""
    return {
        "openaiOAuth": s.openai_oauth is not None,
        "openaiOAuthSource": s.openai_oauth,
        "openaiAccessToken": s.openai_access_token is not None,
        "openaiAccessTokenSource": s.openai_access_token,
        "openrouterApiKey": s.openrouter_api_key is not None,
        "openrouterApiKeySource": s.openrouter_api_key,
        "credentialStore": s.store,
        "credentialStoreDetail": s.store_detail,
        "credentialStoreReason": s.store_reason,
        "authFileMode": None if s.auth_file_mode is None else format(s.auth_file_mode, "04o"),
        "authFileProblem": s.auth_file_problem,
    }


def provider_card(c: ProviderCard) -> AuthProviderCard:
    return {"id": c.id, "name": c.name, "authType": c.auth_type, "configured": c.source is not None,
            "source": c.source, "storedCredentialType": c.auth_type if c.stored else None, "canLogout": c.stored,
            "usesCallbackServer": c.uses_callback_server, "credentialStore": c.store}


def provider_cards(p: ProviderCards) -> AuthProvidersResult:
    """`auth/providers`: ``{providers: [card...], credentialStore}``."""
    return {"providers": [provider_card(c) for c in p.cards], "credentialStore": p.store}


def api_key_saved(r: ApiKeySaved) -> AuthLoginWithApiKeyResult:
    """`auth/loginWithApiKey`: ``{providerId, ok: true, credentialStore, message}``."""
    return {"providerId": r.provider_id, "ok": True, "credentialStore": r.store, "message": r.message}


def logged_out(r: LoggedOut) -> AuthLogoutProviderResult:
    """`auth/logoutProvider`: ``{providerId, removed, configured, source, message}``
    (`configured` and `source`: what stays in use, only ever the environment)."""
    return {"providerId": r.provider_id, "removed": r.removed, "configured": r.in_environment,
            "source": "environment" if r.in_environment else None, "message": r.message}


def login(state: LoginState) -> AuthLogin:
    """The login object of `auth/loginStatus` and `auth/loginFinished` (a
    `kward.auth.login.LoginState`): ``{providerId, loginId, status, authorizationUrl,
    redirectUri, message?, error?}``, `message` and `error` only when not empty."""
    out: AuthLogin = {"providerId": state.provider_id, "loginId": state.login_id, "status": state.status,
                      "authorizationUrl": state.authorization_url, "redirectUri": state.redirect_uri}
    if state.message:
        out["message"] = state.message
    if state.error:
        out["error"] = state.error
    return out
