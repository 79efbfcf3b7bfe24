"""`Resources`: the user's extensions of one process (AGENTS.md, prompt templates, skills,
plugins) and what turns need of them.

It owns the current `Catalog` (loaded on first use, re-read by `reload`) and the
stat-keyed cache of the AGENTS.md files. For a turn's plan (`kward.runtime.planner`) it
resolves slash input (`resolve`) and runs plugin commands (`run_command`), builds the
instructions, rebuilt before every model request (`instructions`: so an AGENTS.md the agent
just edited counts at once), adds `read_skill` to the tools when skills exist (`tools`),
and lets plugin observers see the turn's events (`observe`).

Plugin observers see each event as the protocol shows it: through the converter the face
gives (`event_payload`, a `kward.resources.observers.EventFields`; without one, observers
get nothing).

The memory block of a turn's instructions (`instructions(session, memory)`, with
``memory() -> str | None``) is asked for once per model turn, on the turn's worker
thread, after the turn's user message was appended to the session; its text (capped at
32 KiB) goes between the config AGENTS.md and the plugin context. An exception in it is
logged and the block left out.

Thread contract: any thread. `_lock` guards the catalog reference and the run-time
warnings; `_load_lock` serialises loads (a load runs plugin code: never on the RPC
dispatcher, which only uses `peek`). Plugin code runs bounded (`kward.resources.bounded`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kward import pacing
from kward.errors import CommandNotFound, PluginFailed, PluginTimeout
from kward.resources.bounded import run_bounded
from kward.resources.catalog import Catalog, Plan, load_catalog
from kward.resources.context import CommandOutput, Output, ProgressSink, context_for, result_text
from kward.resources.observers import EventFields, observing
from kward.resources.plugins import PluginCommand
from kward.resources.prompts import Warning_, parse_skill, parse_slash
from kward.resources.system_prompt import (
    Parts,
    agents_files,
    assemble,
    capped,
    static_instructions,
)
from kward.resources.text import FileCache

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.loop import Emit
    from kward.agent.turn import Turn
    from kward.cancel import CancelToken
    from kward.sessions.handle import SessionHandle
    from kward.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
#: The memory block of a turn's instructions: text, or None for none.
MemoryBlock = Callable[[], "str | None"]
_REMEMBERED = 64


def _shown(name: str, limit: int = 100) -> str:
    return name if len(name) <= limit else name[:limit] + "..."


def _log_failure(exc: PluginFailed) -> None:
    cause = exc.__cause__
    log.warning("%s", exc.message, exc_info=(type(cause), cause, cause.__traceback__) if cause else None)


class Resources:
    """See the module docstring. `timeout()` gives `plugins.command_timeout_seconds`."""

    def __init__(self, config_dir: Path, *, timeout: Callable[[], float] = lambda: DEFAULT_TIMEOUT,
                 event_payload: EventFields | None = None, max_input_chars: int | None = None):
        self.config_dir = Path(config_dir)
        self.max_input_chars = max_input_chars  # what an expansion may come to (None: no bound)
        self._timeout = timeout
        self._event_payload = event_payload
        self.files = FileCache()
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._catalog: Catalog | None = None
        self._runtime_warnings: list[Warning_] = []  # prompt contexts that failed during turns
        self._disabled: set[int] = set()  # id() of prompt-context functions that timed out
        self._last: OrderedDict[str, str] = OrderedDict()  # the instructions last built, by session file

    # --- the catalog ------------------------------------------------------------------

    def timeout(self) -> float:
        try:
            return float(self._timeout())
        except Exception:  # an unreadable config: the default bound still applies
            return DEFAULT_TIMEOUT

    def peek(self) -> Catalog | None:
        """The catalog if it was loaded; never loads (for the RPC dispatcher)."""
        return self._catalog

    def catalog(self) -> Catalog:
        """The catalog, loaded on first use (runs plugin code: a worker thread)."""
        catalog = self._catalog
        if catalog is not None:
            return catalog
        with self._load_lock:
            if self._catalog is None:
                loaded = load_catalog(self.config_dir, self.timeout())
                with self._lock:
                    self._catalog = loaded
            return self._catalog

    def reload(self) -> Catalog:
        """Read prompts, skills, plugins and the AGENTS.md files again."""
        with self._load_lock:
            loaded = load_catalog(self.config_dir, self.timeout())
            with self._lock:
                old, self._catalog = self._catalog, loaded
                self._runtime_warnings, self._disabled = [], set()
        self.files.clear()
        if old is not None:
            old.close()
        return loaded

    def warnings(self) -> list[Warning_]:
        catalog = self.catalog()
        with self._lock:
            return [*catalog.warnings, *self._runtime_warnings]

    def shutdown(self) -> None:
        with self._lock:
            catalog, self._catalog = self._catalog, None
        if catalog is not None:
            catalog.close()

    # --- commands ---------------------------------------------------------------------

    def resolve(self, text: str, has_attachments: bool = False) -> Plan:
        """How `text` runs (`Catalog.resolve`, held to `max_input_chars`); loads the
        catalog only for slash-shaped input."""
        if parse_slash(text) is None and parse_skill(text) is None:
            return Plan("literal", text)
        return self.catalog().resolve(text, has_attachments, self.max_input_chars)

    def expand(self, command: str, arguments: str = "") -> tuple[str, str]:
        """(name, expanded text) of the template `command` (leading slash optional);
        CommandNotFound, or InputTooLarge for an expansion over `max_input_chars`."""
        name = command.strip().removeprefix("/")
        template = self.catalog().prompt_map.get(name)
        if template is None:
            raise CommandNotFound(f"Unknown prompt template: /{_shown(name)}", data={"command": _shown(name)})
        return name, template.expand(arguments, self.max_input_chars)

    def command(self, name: str) -> PluginCommand:
        """The plugin command `name` (leading slash optional); CommandNotFound."""
        name = name.strip().removeprefix("/")
        catalog = self.catalog()
        command = catalog.commands.get(name)
        if command is None:
            what = "a prompt template, not a plugin command" if name in catalog.prompt_map else "no plugin command"
            raise CommandNotFound(f"Unknown command: /{_shown(name)} ({what})", data={"command": _shown(name)})
        return command

    def run_command(self, command: PluginCommand, arguments: str, session: SessionHandle,
                    cancel: CancelToken | None = None,
                    progress: ProgressSink | None = None) -> CommandOutput:
        """Run a plugin command for `session` (bounded; PluginFailed, PluginTimeout or
        Canceled). The caller's thread waits for it. `progress` is fed each line the
        command reports with `ctx.progress` (on the plugin's thread) until it returned, and
        polled on the caller's thread while it waits, so its updates go out as they come
        (a publish that waits for the client never past the timeout or cancel: `kward.pacing`)."""
        output = Output(progress)
        ctx = context_for(session, args=arguments, output=output)
        timeout = self.timeout()
        try:
            with pacing.bounded(time.monotonic() + timeout, cancel):  # publishing progress waits no longer
                value = run_bounded(command.handler, (arguments, ctx), timeout=timeout,
                                    what=f"Plugin command /{command.name}", cancel=cancel, stuck=command.plugin.stuck,
                                    data={"plugin": command.plugin.name, "command": command.name},
                                    poll=progress.poll if progress is not None else None, wake=output.arrived)
        except PluginFailed as exc:
            _log_failure(exc)
            raise
        finally:
            lines = output.close()
        return CommandOutput(command.name, lines, result_text(value))

    # --- what a turn's plan draws on ------------------------------------------------------

    def tools(self, base: ToolRegistry) -> ToolRegistry:
        """`base` with `read_skill` when there are skills."""
        return self.catalog().tools(base)

    def observe(self, emit: Emit, session: SessionHandle, turn: Turn) -> Emit:
        """The turn's `emit`, offering its events to the plugin observers too (when the
        catalog is loaded and has some)."""
        catalog = self.peek()
        if catalog is None or not catalog.observers or self._event_payload is None:
            return emit
        return observing(emit, catalog.observers, context_for(session), session.id, turn.id, self._event_payload)

    def instructions(self, session: SessionHandle, memory_block: MemoryBlock | None = None) -> Callable[[], str]:
        """The turn's instructions, as a function called before each model request: the
        AGENTS.md files are looked at each time (stat-cached); the memory block
        (`memory_block()`) and plugin context are computed at the first call and kept for the turn."""
        catalog = self.catalog()
        once: list[tuple[str | None, str | None]] = []

        def build() -> str:
            if not once:
                once.append((self._memory(memory_block), self._plugin_context(catalog, session)))
            memory, plugin = once[0]
            user, project = agents_files(self.config_dir, session.workspace_root, self.files)
            text = assemble(Parts(user_agents=user, memory=memory, plugin_context=plugin, skills=catalog.skills_text,
                                  project_agents=project, workspace_root=session.workspace_root))
            self._remember(session, text)
            return text

        return build

    def estimate(self, session: SessionHandle) -> str:
        """The instructions for a size estimate (runtime/stats): the last ones built for
        the session's file, else those without the per-turn parts. Runs no plugin code."""
        with self._lock:
            last = self._last.get(session.path)
        if last is not None:
            return last
        catalog = self.peek()
        return static_instructions(self.config_dir, session.workspace_root,
                                   catalog.skills_text if catalog else None, self.files)

    def context_files(self, workspace_root: str) -> list[Path]:
        """The AGENTS.md files the instructions include (those that exist and hold text)."""
        user, project = agents_files(self.config_dir, workspace_root, self.files)
        return [path for path, text in ((self.config_dir / "AGENTS.md", user),
                                        (Path(workspace_root) / "AGENTS.md", project)) if text]

    # --- parts of the instructions -----------------------------------------------------

    def _remember(self, session: SessionHandle, text: str) -> None:
        key = session.path
        with self._lock:
            self._last[key] = text
            self._last.move_to_end(key)
            while len(self._last) > _REMEMBERED:
                self._last.popitem(last=False)

    @staticmethod
    def _memory(fn: MemoryBlock | None) -> str | None:
        if fn is None:
            return None
        try:
            return capped(fn())
        except Exception:
            log.exception("the memory block could not be built; the turn goes on without it")
            return None

    def _plugin_context(self, catalog: Catalog, session: SessionHandle) -> str | None:
        pieces = []
        for plugin, fn in catalog.prompt_contexts():
            with self._lock:
                if id(fn) in self._disabled:
                    continue
            try:
                value = run_bounded(fn, (context_for(session),), timeout=self.timeout(),
                                    what=f"Plugin {plugin.name} prompt context", stuck=plugin.stuck,
                                    data={"plugin": plugin.name})
            except PluginFailed as exc:
                _log_failure(exc)
                self._runtime_warning(Warning_("plugin", plugin.path, exc.message))
                if isinstance(exc, PluginTimeout):
                    with self._lock:
                        self._disabled.add(id(fn))  # one stuck call per catalog, not one per turn
                continue
            text = capped(result_text(value))
            if text:
                pieces.append(text)
        return "\n\n".join(pieces) or None

    def _runtime_warning(self, warning: Warning_) -> None:
        with self._lock:
            if warning not in self._runtime_warnings and len(self._runtime_warnings) < 100:
                self._runtime_warnings.append(warning)
