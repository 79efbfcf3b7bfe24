"""`runtime.resources`: the runtime's operations on prompt templates, skills, plugins and
the startup listing, by session id (`kward.resources.Resources` does the work).

What a face calls: `catalog(session_id?)` (commands/list, prompts/list), `startup()`,
`expand()`, `run_command()`, `reload()`; what the runtime calls: `classify_input()` when a
turn is started (on the dispatcher: it never loads anything), `core` for the plans of
turns (`kward.runtime.planner`), `estimate()` for runtime/stats, `shutdown()`.

Any thread; the methods that may load the catalog (everything but `classify_input` and
`estimate`) run plugin code and belong on a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple

from kward.config.settings import LiveSettings
from kward.resources import Resources
from kward.resources.catalog import Catalog
from kward.resources.context import CommandOutput
from kward.resources.observers import EventFields
from kward.resources.prompts import Warning_, parse_skill, parse_slash

if TYPE_CHECKING:  # pragma: no cover
    from kward.config.store import ConfigStore
    from kward.sessions.handle import SessionHandle


class Startup(NamedTuple):
    """What resources/startup shows: the AGENTS.md files in use (shown as a path with
    `~` for the home directory; the workspace's as `AGENTS.md`), the skills, the prompt
    commands and the plugin commands, and the warnings of what was skipped."""

    context: list[str]
    skills: list[str]
    prompts: list[str]
    plugins: list[str]
    warnings: list[Warning_]


class RuntimeResources:
    """`session(id)` gives an open session (SessionNotFound); `launch_cwd` is the default
    workspace; `event_payload` what plugin observers see of an event (None: nothing)."""

    def __init__(self, config_dir: Path, config: ConfigStore, env: Mapping[str, str], *, launch_cwd: Path,
                 session: Callable[[str], SessionHandle], event_payload: EventFields | None,
                 max_input_chars: int | None = None):
        self._session_of = session
        self._launch_cwd = launch_cwd
        self._settings = LiveSettings(config, env)  # config.json edits apply at once
        self.core = Resources(config_dir, timeout=self._timeout, event_payload=event_payload,
                              max_input_chars=max_input_chars)

    def _timeout(self) -> float:
        return self._settings.current().plugins.command_timeout_seconds

    def _session(self, session_id: str | None) -> SessionHandle | None:
        return self._session_of(session_id) if session_id is not None else None

    def catalog(self, session_id: str | None = None) -> Catalog:
        self._session(session_id)  # an unknown id is reported as such
        return self.core.catalog()

    def startup(self, session_id: str | None = None) -> Startup:
        session = self._session(session_id)
        catalog = self.core.catalog()
        root = session.workspace_root if session is not None else str(self._launch_cwd)
        home = os.path.expanduser("~")
        context = []
        for path in self.core.context_files(root):
            if path.parent == Path(root):
                context.append(path.name)
            elif home and str(path).startswith(home.rstrip("/") + "/"):
                context.append("~" + str(path)[len(home.rstrip("/")):])
            else:
                context.append(str(path))
        return Startup(context=context, skills=[s.name for s in catalog.skills],
                       prompts=[f"/{p.command}" for p in catalog.prompts],
                       plugins=[f"/{name}" for name in catalog.commands], warnings=self.core.warnings())

    def expand(self, command: str, arguments: str = "") -> tuple[str, str]:
        return self.core.expand(command, arguments)

    def run_command(self, session_id: str, name: str, arguments: str = "") -> CommandOutput:
        session = self._session_of(session_id)
        return self.core.run_command(self.core.command(name), arguments, session)

    def reload(self) -> None:
        self.core.reload()

    def classify_input(self, text: str, has_attachments: bool,
                       behavior: str | None) -> tuple[str, str | None, str | None]:
        """(text to queue, what the user typed when the text is its expansion, behavior)
        for a turn about to start. Uses the catalog only when it is loaded already (always
        so while a turn runs); otherwise slash input is resolved when the turn runs
        (`kward.runtime.planner`). A prompt template or a skill command is expanded here, so
        that steered input carries the expansion (a skill's SKILL.md is read: one bounded
        read of a regular file); a plugin command is queued as a turn of its own, never
        steered into a running one. An expansion over the input limit raises InputTooLarge:
        the turn is not started."""
        catalog = self.core.peek()
        if catalog is None or (parse_slash(text) is None and parse_skill(text) is None):
            return text, None, behavior
        plan = catalog.resolve(text, has_attachments, self.core.max_input_chars)
        if plan.kind == "prompt":
            return plan.text, plan.display, behavior
        if plan.kind == "plugin" and behavior in (None, "steer"):
            behavior = "followUp"
        return text, None, behavior

    def estimate(self, session: SessionHandle) -> str:
        return self.core.estimate(session)

    def shutdown(self) -> None:
        self.core.shutdown()
