"""The model providers kward knows: one `ProviderSpec` per provider, in one table.

Everything that depends on which providers exist reads this table: the names the
`provider` setting accepts (`kward.config.rules`), the config and environment keys of each
provider's model, reasoning level, base URL and credential (`kward.config.settings`), automatic
selection and construction (`kward.providers.select`), the model service (listings,
built-in entries, the keys `models/set` writes) and the steering capability. Adding a
provider means adding one entry to `PROVIDERS` and one module holding its class.

The table is pure data and imports nothing from kward at run time: `kward.config.rules` reads
it when `kward rpc` starts, and answering `initialize` must not load a provider module
(nor `requests`). Code is named by full dotted names, resolved on first use by
`provider_class`, `listing` and `builtin`, which give what they resolve its type (a test
checks that every name resolves to what its field says). Rows are NamedTuples.
Any thread.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple

if TYPE_CHECKING:  # pragma: no cover - the table must not load the modules it names
    from kward.cancel import CancelToken
    from kward.providers.base import Provider
    from kward.providers.catalog import ModelEntry, ModelList

    #: `f(provider, cancel) -> ModelList`: a listing of the spec's own provider.
    Listing = Callable[[Provider, CancelToken | None], ModelList]
    #: `f(model_id) -> ModelEntry | None`: what is known about a model without a request.
    Builtin = Callable[[str], ModelEntry | None]


class Setting(NamedTuple):
    """One value a provider reads: the environment variable (wins when set and not empty)
    and/or the config.json key, and the kind of value (`kward.config.rules.KINDS` has the rule of
    each: "text", "effort", "url"). Variables of kind "text" and "effort" are taken as
    written (a model id is not checked); "url" variables are checked when `kward rpc` starts."""

    key: str | None = None
    env: str | None = None
    kind: str = "text"


class ProviderSpec(NamedTuple):
    """How kward knows, chooses, builds and lists one provider.

    `cls` is the class's full dotted name; the class builds itself from the resolved settings with
    `Class.create(setup)` (`kward.providers.base.ProviderSetup`) and its `supports_steering`
    must equal `steering` (a test checks). `model` and `effort` are read in order, the first
    set value winning (the first key is the one `models/set` / `reasoning/set` write);
    without one the default applies (`default_model` None: the provider's own, e.g. the
    script's). `listing` names `f(provider, cancel) -> catalog.ModelList` (None: only the
    current model is listed); `wider_listing` one consulted when the listing lacks the
    model; `builtin` names `f(model_id) -> catalog.ModelEntry | None`, what is known without
    a request. `auto` is the reason shown when the provider is chosen because its
    credential exists (None: only chosen by the `provider` setting)."""

    key: str  # the name settings and selection use: codex, openrouter, ...
    label: str  # the name the protocol shows: Codex, OpenRouter, ...
    cls: str
    steering: bool
    model: tuple[Setting, ...]
    effort: tuple[Setting, ...]
    default_model: str | None = None
    default_effort: str | None = None
    base_url: Setting | None = None  # None: no HTTP endpoint (no retry or idle timeout either)
    default_base_url: str | None = None
    secret: Setting | None = None  # the API key or access token
    stored_login: bool = False  # a stored OpenAI login (auth.json) is a credential too
    auth_type: str | None = None  # "oauth" | "api_key" | None (no credential needed)
    options: tuple[Setting, ...] = ()  # further provider-specific values, passed to `create`
    listing: str | None = None
    wider_listing: str | None = None
    builtin: str | None = None
    auto: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def required_keys(self) -> tuple[str, ...]:
        """The config keys that must hold usable values (when set) to build this provider."""
        if self.base_url is None or self.base_url.key is None:
            return ()
        return (self.base_url.key, *HTTP_KEYS)


MODEL = Setting("model")  # the model of whichever provider has no own key set
REASONING_EFFORT = Setting("reasoning_effort", kind="effort")
THINKING_LEVEL = Setting("thinking_level", kind="effort")
HTTP_KEYS = ("retry_delays", "stream_idle_timeout")  # shared by every provider with a base URL

PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        key="codex", label="Codex", cls="kward.providers.codex.CodexProvider", steering=True,
        model=(Setting("openai_model", "OPENAI_MODEL"), MODEL), default_model="gpt-5.5",
        effort=(Setting("openai_reasoning_effort", "OPENAI_REASONING_EFFORT", "effort"), REASONING_EFFORT,
                THINKING_LEVEL), default_effort="medium",
        base_url=Setting("codex_base_url", "KWARD_CODEX_BASE_URL", "url"),
        default_base_url="https://chatgpt.com/backend-api/codex",
        secret=Setting(env="OPENAI_ACCESS_TOKEN"), stored_login=True, auth_type="oauth",
        listing="kward.providers.catalog.codex_models", builtin="kward.providers.catalog.codex_entry",
        auto="OpenAI login"),
    ProviderSpec(
        key="openrouter", label="OpenRouter", cls="kward.providers.openrouter.OpenRouterProvider", steering=False,
        model=(Setting("openrouter_model", "OPENROUTER_MODEL"), MODEL), default_model="openai/gpt-5.5",
        effort=(Setting("openrouter_reasoning_effort", "OPENROUTER_REASONING_EFFORT", "effort"), REASONING_EFFORT,
                THINKING_LEVEL),
        base_url=Setting("openrouter_base_url", "KWARD_OPENROUTER_BASE_URL", "url"),
        default_base_url="https://openrouter.ai/api/v1",
        secret=Setting("openrouter_api_key", "OPENROUTER_API_KEY"), auth_type="api_key",
        listing="kward.providers.catalog.openrouter_models", wider_listing="kward.providers.catalog.openrouter_catalog",
        builtin="kward.providers.catalog.openrouter_entry", auto="OpenRouter API key"),
    ProviderSpec(
        key="openai-compatible", label="OpenAICompatible", cls="kward.providers.openai_compat.OpenAICompatibleProvider",
        steering=False, model=(Setting("openai_compat_model"), MODEL), default_model="default",
        effort=(REASONING_EFFORT, THINKING_LEVEL),
        base_url=Setting("openai_compat_base_url", "KWARD_OPENAI_COMPAT_BASE_URL", "url"),
        secret=Setting("openai_compat_api_key"),
        listing="kward.providers.catalog.compat_models", aliases=("openai-compat",)),
    ProviderSpec(
        key="scripted", label="Scripted", cls="kward.providers.scripted.ScriptedProvider", steering=True,
        model=(Setting("scripted_model"),), effort=(REASONING_EFFORT, THINKING_LEVEL),
        options=(Setting("scripted_script", "KWARD_SCRIPT"),), builtin="kward.providers.scripted.model_entry"),
)
DEFAULT = "codex"  # chosen when no `provider` setting and no credential decides

_BY_KEY: Mapping[str, ProviderSpec] = MappingProxyType({spec.key: spec for spec in PROVIDERS})
#: Which providers steer a running turn natively, by key (read by `initialize`).
STEERING: Mapping[str, bool] = MappingProxyType({spec.key: spec.steering for spec in PROVIDERS})


def get(key: str) -> ProviderSpec:
    """The spec of a provider key (KeyError for an unknown one: keys come from `find`)."""
    return _BY_KEY[key]


def find(name: object) -> ProviderSpec | None:
    """The spec a user's spelling names: the key, the label or an alias in any case, with
    `_` for `-` and surrounding blanks allowed (`Scripted`, `openai_compatible`,
    `OpenAICompatible`, `openai-compat`); None for anything else."""
    if not isinstance(name, str):
        return None
    wanted = name.strip().lower().replace("_", "-")
    for spec in PROVIDERS:
        if wanted in (spec.key, spec.label.lower(), spec.key.replace("-", ""), *spec.aliases):
            return spec
    return None


def _resolve(dotted: str) -> Any:
    """The object a full dotted name (``package.module.name``) names, its module imported."""
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def provider_class(spec: ProviderSpec) -> type[Provider]:
    """The class `spec.cls` names (imports its module)."""
    cls: type[Provider] = _resolve(spec.cls)
    return cls


def listing(name: str) -> Listing:
    """The listing function `name` names (a spec's `listing` or `wider_listing`)."""
    function: Listing = _resolve(name)
    return function


def builtin(name: str) -> Builtin:
    """The built-in entries function `name` names (a spec's `builtin`)."""
    function: Builtin = _resolve(name)
    return function
