"""Helpers for the auth tests over the real `kward rpc`: start it against the fake OAuth
issuer (and fake Codex/OpenRouter servers), play the browser through a whole login, and
wait for `auth/loginFinished`. Waiting is on frames with timeouts, never on sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .auth_helpers import open_in_browser
from .rpc_client import RpcClient
from .loopback_kward import env_for, workspace


def auth_env(home: Path, oauth: Any, **extra: str) -> dict[str, str]:
    """The env of `loopback_kward.start_kward`, logins going to `oauth` on a free callback port."""
    return env_for(home, **{"KWARD_OPENAI_AUTH_ISSUER": oauth.issuer, "KWARD_OAUTH_PORT": "0", **extra})


def start(home: Path, oauth: Any, env: dict[str, str] | None = None, **extra: str) -> RpcClient:
    workspace(home)
    client = RpcClient(home, env=env or auth_env(home, oauth, **extra))
    client.request("initialize")
    return client


def port_of(uri: str) -> int:
    return int(urlsplit(uri).port)


def code_of(callback_url: str) -> str:
    return parse_qs(urlsplit(callback_url).query)["code"][0]


def finished(client: RpcClient, login_id: str, timeout: float = 10.0) -> dict[str, Any]:
    """The params of the login's `auth/loginFinished`."""
    return client.wait_notification(lambda n: n["method"] == "auth/loginFinished"
                                    and n["params"]["loginId"] == login_id, timeout)["params"]


def login(client: RpcClient, **params: Any) -> dict[str, Any]:
    """A whole OpenAI login through the real callback server, the test being the browser;
    returns the `auth/loginFinished` params (status `completed`)."""
    started = client.request("auth/loginWithOAuth", {"providerId": "openai", "timeoutSeconds": 30, **params})
    page = open_in_browser(started["authorizationUrl"])
    assert page.status_code == 200 and "You can close this window" in page.text, page.text
    done = finished(client, started["loginId"])
    assert done["status"] == "completed", done
    return done

