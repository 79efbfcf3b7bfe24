"""What a face learns of the runtime at start: the facts it announces (`announce`, the RPC
face's `initialize`) and the modules worth importing ahead of the first turn, once a
session is open (`warm_up_modules`, the RPC server's warm-up thread).

Both are cheap and never fail: they read config.json and the environment, import no
provider and build no service (problems become warnings, or a shorter list). Any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, NamedTuple

from kward.errors import KwardError
from kward.providers.select import FileCredentials, choose, choose_spec
from kward.providers.specs import STEERING, get
from kward import sandbox

if TYPE_CHECKING:  # pragma: no cover
    from kward.config.settings import LiveSettings, Settings
    from kward.config.store import ConfigStore, Paths
    from kward.providers.select import CredentialSource

# What `warm_up_modules` names besides the active provider's module: the services of the
# facade, in small steps (the warm-up pauses between two imports when a request arrives).
_WARM_MODULES = ("kward.agent.questions", "kward.providers.base", "kward.tools.process", "kward.tools.search",
                 "kward.tools.registry", "kward.agent.loop", "kward.agent.engine", "kward.agent.scheduler",
                 "kward.providers.model_service", "kward.agent.attachments", "kward.agent.plan",
                 # the services a first turn builds: resources, auth (the store choice imports keyring
                 # when the first tool output is scrubbed), telemetry, compaction and memory
                 "kward.runtime.resources", "kward.runtime.planner", "kward.resources.system_prompt",
                 "kward.runtime.auth", "kward.auth.service", "kward.auth.stores", "keyring",
                 "keyring.backends.chainer", "kward.runtime.telemetry", "kward.runtime.compaction",
                 "kward.compaction.run", "kward.runtime.memory", "kward.memory.store")
_HTTP_MODULES = ("urllib3", "idna", "charset_normalizer", "requests", "requests.adapters")


class RuntimeInfo(NamedTuple):
    """Facts a face announces at start (the RPC face: `initialize`)."""

    steering: bool  # the active provider steers a running turn in flight
    warnings: tuple[tuple[str, str], ...]  # (reason, message): settings ignored, an unusable config
    logs_dir: str
    max_frame_bytes: int
    max_input_chars: int
    logging_categories: tuple[str, ...] = ()  # the telemetry categories enabled now
    sandbox: sandbox.SandboxStatus | None = None  # the shell sandbox now (None: config.json unreadable)
    approval_mode: str | None = None  # security.approvalMode of config.json now (None: unset or unusable)
    approval_problem: bool = False  # security.approval* is set to a value that cannot be used
    hooks: int = 0  # command hooks configured now (config `hooks`)
    hooks_problem: bool = False  # a `hooks.<event>` of config.json cannot be used
    web_search: bool = True  # config web_search.enabled is not false


def announce(settings: Settings, live: LiveSettings, paths: Paths,
             credentials: CredentialSource | None = None) -> RuntimeInfo:
    """The RuntimeInfo of a runtime with these settings; `live` gives the settings of
    config.json now (for the provider and the telemetry). `credentials` are the provider
    credentials the provider choice sees (None: the files and the environment of `live`,
    so that start-up never opens the keyring)."""
    warnings = [("invalid_config", w) for w in settings.warnings]
    steering = False
    categories: tuple[str, ...] = ()
    shell: sandbox.SandboxStatus | None = None
    approval_mode: str | None = None
    approval_problem = False
    hooks, hooks_problem = 0, False
    web_search = True
    env = live.env
    try:
        current = live.current()  # (one stat while config.json is what the runtime started with)
    except KwardError as exc:  # an invalid config.json
        warnings.append((exc.reason, exc.message))
        current = None
    if current is not None:
        try:
            if credentials is None:
                credentials = FileCredentials(env, paths.auth_file)
            spec, _ = choose_spec(current, credentials)
            steering = STEERING[spec.key]
        except KwardError as exc:  # an unknown provider name
            warnings.append((exc.reason, exc.message))
        categories = current.logging.enabled_categories  # (building the telemetry service is not start-up work)
        approval_mode = current.security.approval_mode
        approval_problem = any(key.startswith("security.approval") for key in current.problems)
        hooks, hooks_problem = current.hooks.total, any(key.startswith("hooks.") for key in current.problems)
        web_search = current.mcp.web_search_enabled
        shell_policy = sandbox.policy(current, paths)
        shell = sandbox.status(shell_policy, env)  # (bwrap probed once per process)
        if shell_policy.problem is not None:  # every shell command is refused: say so at once
            warnings.append(("invalid_config", shell_policy.problem))
    return RuntimeInfo(steering=steering, warnings=tuple(warnings), logs_dir=str(paths.logs_dir),
                       max_frame_bytes=settings.max_frame_bytes, max_input_chars=settings.max_input_chars,
                       logging_categories=categories, sandbox=shell, approval_mode=approval_mode,
                       approval_problem=approval_problem, hooks=hooks, hooks_problem=hooks_problem,
                       web_search=web_search)


def warm_up_modules(config: ConfigStore, env: Mapping[str, str], paths: Paths) -> list[str]:
    """The agent and its tools, the model service, the services a first turn builds, and the
    module of the provider `announce` sees (with `requests` for an HTTP provider, which imports it
    on its first request)."""
    names = [*_WARM_MODULES]
    try:
        key, _ = choose(config.load(), env, FileCredentials(env, paths.auth_file))
        spec = get(key)
    except KwardError:  # an invalid config.json or provider name: reported where it is used
        return names
    names.append(spec.cls.rpartition(".")[0])  # the provider class's module
    if spec.base_url is not None:
        names += _HTTP_MODULES
    return names
