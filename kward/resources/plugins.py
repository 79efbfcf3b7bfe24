"""Plugins: trusted Python files in `<config>/plugins/` that extend kward.

A plugin is `<config>/plugins/<name>.py`, or a folder `<config>/plugins/<name>/` holding
`plugin.py` (loaded as a package, so it can import its other modules relatively). Its
module defines ``register(kward)``, which receives a `Registrar` and registers, through it:

- slash commands: ``@kward.command(name, description="", argument_hint="")`` on a
  ``handler(args: str, ctx: PluginContext) -> str | None``;
- prompt context: ``@kward.prompt_context`` on ``fn(ctx) -> str | None``, text added to
  the system prompt of every turn;
- transcript observers: ``@kward.on_transcript_event`` on ``fn(event, ctx)``, called with
  each event of a model turn (`kward.resources.observers`).

docs/plugins.md is the user's guide. Plugins run in the kward process, as the user: they
are trusted code. kward only keeps them from breaking it: loading (the module's code and
`register`) and every call run on a daemon thread bounded by
`plugins.command_timeout_seconds` (`kward.resources.bounded`); whatever they raise
becomes a warning (loading) or a `plugin_failed` error (a command); one that does not
return in time is abandoned (`plugin_timeout`). Plugins load in parallel, and their
registrations are applied in file-name order.

`load_plugins` runs on a worker thread (never the RPC dispatcher). The objects it returns
are immutable apart from the `Stuck` counters; any thread may read them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, TypeVar

from kward.errors import PluginFailed, PluginTimeout
from kward.resources.bounded import Stuck, run_bounded
from kward.resources.observers import ObserverFn
from kward.resources.prompts import Warning_

if TYPE_CHECKING:  # pragma: no cover
    from kward.resources.context import PluginContext

log = logging.getLogger(__name__)

PLUGIN_FILE = "plugin.py"
_serial = itertools.count(1)

#: A slash command's handler: ``handler(args, ctx)``; what it returns is the result text.
CommandHandler = Callable[[str, "PluginContext"], object]
#: A prompt-context function: ``fn(ctx)``; what it returns is text for the system prompt.
PromptContextFn = Callable[["PluginContext"], object]
_Handler = TypeVar("_Handler", bound=CommandHandler)
_ContextFn = TypeVar("_ContextFn", bound=PromptContextFn)
_ObserverFn = TypeVar("_ObserverFn", bound=ObserverFn)


class CommandEntry(NamedTuple):
    """A command as a plugin registered it (its name not checked yet: `kward.resources.catalog`)."""

    name: str
    description: str
    argument_hint: str
    handler: CommandHandler


class Registration(NamedTuple):
    """What a plugin's ``register(kward)`` registered."""

    commands: tuple[CommandEntry, ...] = ()
    prompt_contexts: tuple[PromptContextFn, ...] = ()
    observers: tuple[ObserverFn, ...] = ()


@dataclass(frozen=True)
class PluginCommand:
    name: str
    description: str
    argument_hint: str
    handler: CommandHandler
    plugin: Plugin


@dataclass(frozen=True)
class Plugin:
    name: str
    path: str
    commands: tuple[CommandEntry, ...] = ()
    prompt_contexts: tuple[PromptContextFn, ...] = ()
    observers: tuple[ObserverFn, ...] = ()
    module: str = ""  # its name in sys.modules
    stuck: Stuck = field(default_factory=Stuck, compare=False)


class Registrar:
    """What a plugin's ``register(kward)`` receives. Usable only while `register` runs:
    afterwards every method raises RuntimeError (what a load that timed out registers
    later is never used)."""

    def __init__(self, plugin_name: str):
        self.plugin_name = plugin_name
        self._commands: list[CommandEntry] = []
        self._contexts: list[PromptContextFn] = []
        self._observers: list[ObserverFn] = []
        self._open = True
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _adding(self) -> Iterator[None]:
        """Held while a registration is added; RuntimeError once `register` returned."""
        with self._lock:
            if not self._open:
                raise RuntimeError("kward plugin registration is over (register() has returned)")
            yield

    def command(self, name: str, description: str = "",
                argument_hint: str = "") -> Callable[[_Handler], _Handler]:
        """Decorator: register ``handler(args, ctx)`` as the slash command `/name`."""
        if not isinstance(name, str) or not isinstance(description, str) or not isinstance(argument_hint, str):
            raise TypeError("command(name, description=, argument_hint=) takes strings")

        def add(handler: _Handler) -> _Handler:
            if not callable(handler):
                raise TypeError(f"the handler of /{name} is not callable")
            with self._adding():
                self._commands.append(CommandEntry(name, description, argument_hint, handler))
            return handler

        return add

    def prompt_context(self, fn: _ContextFn) -> _ContextFn:
        """Decorator: ``fn(ctx)`` returns text for the system prompt of each turn (or None)."""
        if not callable(fn):
            raise TypeError("prompt_context takes a function")
        with self._adding():
            self._contexts.append(fn)
        return fn

    def on_transcript_event(self, fn: _ObserverFn) -> _ObserverFn:
        """Decorator: ``fn(event, ctx)`` is called with each event of a model turn."""
        if not callable(fn):
            raise TypeError("on_transcript_event takes a function")
        with self._adding():
            self._observers.append(fn)
        return fn

    def close(self) -> Registration:
        with self._lock:
            self._open = False
            return Registration(tuple(self._commands), tuple(self._contexts), tuple(self._observers))


def plugin_sources(directory: Path) -> list[tuple[str, Path, bool]]:
    """(name, file, is_package) of every plugin in `directory`, in name order: `x.py`
    files and `x/plugin.py` folders (names starting with `.` or `_` are left out)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith((".", "_")):
            continue
        try:
            if entry.name.endswith(".py") and entry.is_file():
                found.append((entry.name[:-3], Path(entry.path), False))
            elif entry.is_dir() and os.path.isfile(os.path.join(entry.path, PLUGIN_FILE)):
                found.append((entry.name, Path(entry.path) / PLUGIN_FILE, True))
        except OSError:
            continue
    return found


def _module_name(name: str) -> str:
    safe = "".join(c if c.isalnum() else "_" for c in name)
    return f"kward_plugin_{next(_serial)}_{safe}"


class _Job(NamedTuple):
    """One plugin to load: its name, file, whether it is a package, its sys.modules name."""

    name: str
    path: Path
    package: bool
    module_name: str


def _load(name: str, path: Path, package: bool, module_name: str) -> Registration:
    """Execute the plugin's module and its register(); runs on the bounded thread."""
    spec = importlib.util.spec_from_file_location(
        module_name, path, submodule_search_locations=[str(path.parent)] if package else None)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    register = getattr(module, "register", None)
    if not callable(register):
        raise AttributeError("the plugin defines no register(kward) function")
    registrar = Registrar(name)
    try:
        register(registrar)
    finally:
        registered = registrar.close()
    return registered


def forget_module(module_name: str) -> None:
    """Drop a plugin's module (and its submodules) from sys.modules."""
    for key in [k for k in sys.modules if k == module_name or k.startswith(module_name + ".")]:
        sys.modules.pop(key, None)


def load_plugins(directory: Path, timeout: float) -> tuple[list[Plugin], list[Warning_]]:
    """Load every plugin of `directory` in parallel, each bounded by `timeout` seconds
    (all together at most about `timeout`); returns the loaded ones and the warnings of
    those that failed (logged too, with the traceback)."""
    sources = plugin_sources(directory)
    seen: set[str] = set()
    jobs: list[_Job] = []
    warnings: list[Warning_] = []
    for name, path, package in sources:
        if name in seen:
            warnings.append(Warning_("plugin", str(path), f"Plugin {name} skipped: a plugin of that name is "
                                                          "already loaded"))
            continue
        seen.add(name)
        jobs.append(_Job(name, path, package, _module_name(name)))
    results: dict[str, Registration | PluginFailed] = {}
    deadline = time.monotonic() + timeout

    def one(job: _Job) -> None:
        try:
            results[job.module_name] = run_bounded(_load, job, timeout=max(0.0, deadline - time.monotonic()),
                                                   what=f"Plugin {job.name}", data={"plugin": job.name})
        except PluginFailed as exc:
            results[job.module_name] = exc

    threads = []
    for job in jobs:
        thread = threading.Thread(target=one, args=(job,), name=f"kward-plugin-load {job.name}"[:60], daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(timeout + 1.0)
    plugins: list[Plugin] = []
    for name, path, package, module_name in jobs:
        outcome = results.get(module_name)
        if isinstance(outcome, Registration):
            plugins.append(Plugin(name=name, path=str(path), commands=outcome.commands,
                                  prompt_contexts=outcome.prompt_contexts, observers=outcome.observers,
                                  module=module_name))
            continue
        cause = outcome.__cause__ if isinstance(outcome, PluginFailed) else None
        if cause is None or isinstance(outcome, PluginTimeout):
            cause = None
            message = (f"Plugin {name} did not finish loading within {timeout:g} s; it was skipped (its thread "
                       "may still be running)")
        else:
            message = f"Plugin {name} failed to load: {type(cause).__name__}: {cause}"
        log.warning("%s (%s)", message, path, exc_info=(type(cause), cause, cause.__traceback__) if cause else None)
        warnings.append(Warning_("plugin", str(path), message))
        forget_module(module_name)
    return plugins, warnings
