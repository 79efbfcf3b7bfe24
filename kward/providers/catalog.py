"""Model listing data: what models each provider offers, and which reasoning efforts fit.

- Codex: `GET {base}/models?client_version=...` with the login's headers (the endpoint
  the Codex CLI lists models with), falling back to the built-in `CODEX_MODELS` (ids,
  names, context windows and efforts as the ChatGPT backend lists them; they change often).
- OpenRouter: `GET /models/user` (models usable with the key), falling back to the public
  `GET /models` catalog, then to `OPENROUTER_DEFAULTS`. `openrouter_catalog` is the full
  public catalog (`openrouter/catalog`).
- OpenAICompatible: the server's `GET {base}/models`.

Entries are `ModelEntry` dataclasses (the RPC face shapes them: `kward.rpc.wire.models.model_entry`).

Reasoning levels: any level of `EFFORTS` may be requested (`normalize_effort` refuses only
unknown words); `effective_effort` is the one place that turns the requested level into
the level a request carries for a model (the nearest level it supports, `max` its
highest, nothing for a model without reasoning).

Thread contract: the listing functions block on HTTP and run on a worker thread; they never
raise for network or HTTP failures (they fall back and say so in `ModelList.error`), only
`Canceled`. `ModelCatalog` caches lists for a while (`peek` reads the cache without
loading); its lock guards only the cache dict.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Hashable, Sequence
from urllib.parse import urljoin

from kward.cancel import CancelToken
from kward.config.rules import EFFORTS
from kward.errors import Canceled, InvalidParams, KwardError

if TYPE_CHECKING:  # pragma: no cover - mapping levels must not load the provider modules
    from kward.providers.codex import CodexProvider
    from kward.providers.http import HttpTransport
    from kward.providers.openai_compat import OpenAICompatibleProvider
    from kward.providers.openrouter import OpenRouterProvider

log = logging.getLogger(__name__)

CODEX_CLIENT_VERSION = "0.99.0"  # any recent Codex CLI version; the endpoint requires one
REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")  # levels a model may offer, lowest first
HIGHEST_KNOWN = REASONING_EFFORTS[-1]  # what `max` means for a model whose levels are unknown
_FULL = ("low", "medium", "high", "xhigh")


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model. `efforts` None = unknown (any effort accepted); () = no reasoning."""

    provider: str
    id: str
    name: str
    context_window: int | None = None
    efforts: tuple[str, ...] | None = ()
    default_effort: str | None = None

    @property
    def reasoning(self) -> bool:
        return self.efforts is None or bool(self.efforts)


def _codex(mid: str, name: str, ctx: int, efforts: tuple[str, ...] = _FULL) -> ModelEntry:
    return ModelEntry("Codex", mid, name, ctx, efforts, "medium")


CODEX_MODELS: tuple[ModelEntry, ...] = (
    _codex("gpt-5.5", "GPT-5.5", 400_000),
    _codex("gpt-5.4", "GPT-5.4", 400_000),
    _codex("gpt-5.4-mini", "GPT-5.4 Mini", 400_000),
    _codex("gpt-5.3-codex-spark", "GPT-5.3 Codex Spark", 128_000),
    _codex("gpt-5.3-codex", "GPT-5.3 Codex", 400_000),
    _codex("gpt-5.2-codex", "GPT-5.2 Codex", 400_000),
    _codex("gpt-5.2", "GPT-5.2", 400_000),
    _codex("gpt-5.1-codex-max", "GPT-5.1 Codex Max", 400_000),
    _codex("gpt-5.1-codex", "GPT-5.1 Codex", 400_000, ("low", "medium", "high")),
    _codex("gpt-5.1-codex-mini", "GPT-5.1 Codex Mini", 400_000, ("medium", "high")),
    _codex("gpt-5.1", "GPT-5.1", 400_000, ("low", "medium", "high")),
)

OPENROUTER_DEFAULTS: tuple[ModelEntry, ...] = (
    ModelEntry("OpenRouter", "openai/gpt-5.5", "OpenAI: GPT-5.5", 400_000, REASONING_EFFORTS, "medium"),
    ModelEntry("OpenRouter", "anthropic/claude-sonnet-4.5", "Anthropic: Claude Sonnet 4.5", 1_000_000,
               REASONING_EFFORTS, "medium"),
    ModelEntry("OpenRouter", "google/gemini-2.5-pro", "Google: Gemini 2.5 Pro", 1_048_576,
               REASONING_EFFORTS, "medium"),
)


FALLBACKS = ("builtin", "defaults", "none")  # sources that are not a fetched listing (never cached)


@dataclass(frozen=True, slots=True)
class ModelList:
    """A listing and where it came from: endpoint | user | catalog (fetched) or builtin |
    defaults | none (fallbacks); `cached` when `ModelCatalog` served it from its cache."""

    entries: list[ModelEntry]
    source: str
    error: str | None = None  # why a fallback was used
    cached: bool = False

    @property
    def origin(self) -> str:
        """The protocol's `source`: `cache`, `builtin` (a fallback) or `api` (fetched now)."""
        return "cache" if self.cached else "builtin" if self.source in FALLBACKS else "api"


class _Failed(Exception):
    pass


def _get_json(http: HttpTransport, url: str, headers: dict[str, str], timeout: float,
              cancel: CancelToken | None) -> object:
    """The JSON value of a GET answered 200; `_Failed` for anything else."""
    from kward.providers.http import TransportError

    try:
        result = http.get(url, headers=headers, timeout=timeout, cancel=cancel)
    except TransportError as exc:
        raise _Failed(str(exc)) from None
    if result.status != 200:
        raise _Failed(f"HTTP {result.status}")
    try:
        return result.json()
    except ValueError:
        raise _Failed("the answer is not JSON") from None


def _efforts(raw: object) -> tuple[str, ...]:
    out = []
    for level in raw if isinstance(raw, list) else []:
        effort = level.get("effort") if isinstance(level, dict) else level
        if isinstance(effort, str) and effort.lower() in REASONING_EFFORTS:
            out.append(effort.lower())
    return tuple(out)


def _priority(model: dict[str, Any]) -> int:
    priority = model.get("priority")
    return priority if isinstance(priority, int) else 1 << 30


def parse_codex_models(payload: object) -> list[ModelEntry]:
    """Entries from a Codex `/models` answer, hidden ones dropped, by priority."""
    models = payload.get("models") if isinstance(payload, dict) else None
    rows = [m for m in models or [] if isinstance(m, dict) and m.get("slug") and m.get("visibility") != "hide"]
    rows.sort(key=_priority)
    out = []
    for m in rows:
        ctx = m.get("context_window")
        default = m.get("default_reasoning_level")
        out.append(ModelEntry("Codex", str(m["slug"]), str(m.get("display_name") or m["slug"]),
                              ctx if isinstance(ctx, int) else None, _efforts(m.get("supported_reasoning_levels")),
                              default if isinstance(default, str) else None))
    return out


def codex_models(provider: CodexProvider, cancel: CancelToken | None = None) -> ModelList:
    """The Codex models endpoint, or the built-in table when it is unreachable or we are
    not logged in."""
    try:
        headers = provider.auth_headers()
        url = f"{provider.base_url}/models?client_version={CODEX_CLIENT_VERSION}"
        entries = parse_codex_models(_get_json(provider.http, url, headers, provider.settings.catalog_timeout, cancel))
        if entries:
            return ModelList(entries, "endpoint")
        error = "the models endpoint listed no models"
    except Canceled:
        raise
    except (_Failed, KwardError) as exc:
        error = str(exc)
    log.info("Codex models endpoint unavailable (%s); using the built-in table", error)
    return ModelList(list(CODEX_MODELS), "builtin", error)


def parse_openrouter_models(payload: object, provider: str = "OpenRouter") -> list[ModelEntry]:
    """Entries from an OpenRouter-style `{"data": [...]}` answer."""
    rows = payload.get("data") if isinstance(payload, dict) else None
    out = []
    for m in rows or []:
        if not isinstance(m, dict) or not m.get("id"):
            continue
        params = m.get("supported_parameters")
        if isinstance(params, list):
            efforts: tuple[str, ...] | None = (
                REASONING_EFFORTS if {"reasoning", "include_reasoning"} & set(params) else ())
        else:
            efforts = None
        ctx = m.get("context_length") or (m.get("top_provider") or {}).get("context_length")
        out.append(ModelEntry(provider, str(m["id"]), str(m.get("name") or m["id"]),
                              ctx if isinstance(ctx, int) else None, efforts,
                              "medium" if efforts else None))
    return out


def _paged(http: HttpTransport, url: str, headers: dict[str, str], timeout: float,
           cancel: CancelToken | None, provider: str) -> list[ModelEntry]:
    entries: list[ModelEntry] = []
    for _ in range(20):  # follow `links.next` when the API pages
        payload = _get_json(http, url, headers, timeout, cancel)
        entries += parse_openrouter_models(payload, provider)
        nxt = (payload.get("links") or {}).get("next") if isinstance(payload, dict) else None
        if not isinstance(nxt, str) or not nxt:
            break
        url = urljoin(url, nxt)
    return entries


def openrouter_models(provider: OpenRouterProvider, cancel: CancelToken | None = None) -> ModelList:
    """Models for the key (`/models/user`), else the public catalog, else defaults."""
    timeout = provider.settings.catalog_timeout
    errors: list[str] = []
    try:
        headers = provider.auth_headers()
        entries = _paged(provider.http, provider.base_url + "/models/user", headers, timeout, cancel, provider.name)
        if entries:
            return ModelList(entries, "user")
        errors.append("no models are available to this key")
    except Canceled:
        raise
    except (_Failed, KwardError) as exc:
        errors.append(f"models for the key: {exc}")
    listing = openrouter_catalog(provider, cancel)
    if listing.source == "catalog":
        return ModelList(listing.entries, "catalog", "; ".join(errors))
    return ModelList(listing.entries, "defaults", "; ".join(errors + [listing.error or ""]))


def openrouter_catalog(provider: OpenRouterProvider, cancel: CancelToken | None = None) -> ModelList:
    """The full public OpenRouter catalog (no key sent), else the defaults."""
    try:
        entries = _paged(provider.http, provider.base_url + "/models", {}, provider.settings.catalog_timeout,
                         cancel, "OpenRouter")
        if entries:
            return ModelList(entries, "catalog")
        error = "the catalog is empty"
    except Canceled:
        raise
    except (_Failed, KwardError) as exc:
        error = f"catalog: {exc}"
    log.info("OpenRouter catalog unavailable (%s); using defaults", error)
    return ModelList(list(OPENROUTER_DEFAULTS), "defaults", error)


def compat_models(provider: OpenAICompatibleProvider, cancel: CancelToken | None = None) -> ModelList:
    """The OpenAI-compatible server's `GET /models` (efforts unknown); [] when unreachable."""
    try:
        payload = _get_json(provider.http, provider.base_url + "/models", provider.auth_headers(),
                            provider.settings.catalog_timeout, cancel)
        return ModelList(parse_openrouter_models(payload, provider.name), "endpoint")
    except Canceled:
        raise
    except (_Failed, KwardError) as exc:
        return ModelList([], "none", str(exc))


def find_entry(entries: Sequence[ModelEntry], model_id: str) -> ModelEntry | None:
    return next((e for e in entries if e.id == model_id), None)


def codex_entry(model_id: str) -> ModelEntry | None:
    """The entry of a Codex model in the built-in table, if any."""
    return find_entry(CODEX_MODELS, model_id)


def openrouter_entry(model_id: str) -> ModelEntry | None:
    """The entry of an OpenRouter model among the built-in defaults, if any."""
    return find_entry(OPENROUTER_DEFAULTS, model_id)


def normalize_effort(effort: object, param: str = "effort") -> str:
    """The lower-case level, or InvalidParams (-32602, naming `param`) for anything not in
    `EFFORTS`. Every level is accepted for every model; see `effective_effort`."""
    value = effort.strip().lower() if isinstance(effort, str) else ""
    if value not in EFFORTS:
        raise InvalidParams(f"Unknown reasoning effort {effort!r}. Use one of: {', '.join(EFFORTS)}.",
                            data={"param": param})
    return value


def _rank(level: str) -> int:
    return REASONING_EFFORTS.index(level)


def effective_effort(requested: str | None, entry: ModelEntry | None) -> str | None:
    """The level a model request carries for `requested` on the model `entry` describes;
    None means no reasoning is requested.

    off/None -> None. A model without reasoning (`efforts == ()`) -> None. A model whose
    levels are unknown (`efforts is None`, or no entry) -> the requested level, `max` as
    `xhigh`. Otherwise `max` is the model's highest level and any other level the nearest
    one it offers in the order minimal < low < medium < high < xhigh (a tie goes up). A
    word that is no known level (e.g. from an environment variable) is passed on as is.
    """
    level = requested.strip().lower() if isinstance(requested, str) else ""
    if level in ("", "off", "none"):
        return None
    efforts = entry.efforts if entry is not None else None
    if efforts is None:
        return HIGHEST_KNOWN if level == "max" else level
    offered = sorted((e for e in efforts if e in REASONING_EFFORTS), key=_rank)
    if not offered:
        return None
    if level == "max":
        return offered[-1]
    if level not in REASONING_EFFORTS:
        return level
    return min(offered, key=lambda e: (abs(_rank(e) - _rank(level)), -_rank(e)))


class ModelCatalog:
    """A time-limited cache of listings, keyed by the caller (e.g. ("codex", base URL)).

    Any thread may call `get`; the loader runs outside the lock (two threads may load the
    same key at once; the later result wins), so a slow endpoint never blocks other keys.
    """

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[Hashable, tuple[float, ModelList]] = {}

    def get(self, key: Hashable, loader: Callable[[], ModelList], refresh: bool = False) -> ModelList:
        """The fresh cached listing (marked `cached`), else `loader()` (cached unless a fallback)."""
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit and not refresh and now - hit[0] < self._ttl:
            return replace(hit[1], cached=True)
        listing = loader()
        if listing.source not in FALLBACKS:  # do not cache fallbacks
            with self._lock:
                self._cache[key] = (now, listing)
        return listing

    def peek(self, key: Hashable) -> ModelList | None:
        """The cached, still fresh listing for `key`, or None; never loads (no I/O)."""
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
        return hit[1] if hit and now - hit[0] < self._ttl else None

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
