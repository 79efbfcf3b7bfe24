"""Credentials and logins: stores, OpenAI OAuth (PKCE + loopback callback), token refresh.

Layers inside the package, imports pointing down:

- `service`: `AuthService`, the one object the runtime builds (credentials, logins, tokens).
- `login`: `OAuthLogin` (one login, its callback thread) and `LoginManager` (logins by id).
- `callback`: the one-shot loopback HTTP listener a login owns.
- `token_source`: `TokenSource`, valid access tokens for the Codex provider (refresh).
- `credentials`: `Credentials`, status and provider cards, API-key login, logout.
- `tokens`: the OpenAI token bundle and the token endpoint (code exchange, refresh).
- `oauth`: OAuth settings, PKCE, `state`, the authorize URL, parsing a pasted callback.
- `stores`: `CredentialStore` (OS keyring or 0600 files) and the choice between them.

Nothing here imports `kward.rpc`, and importing the package imports nothing: `keyring` is
imported when a credential is first read or written, `requests` when a token call is made.
"""
