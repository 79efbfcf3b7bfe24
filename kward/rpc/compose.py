"""Composition of one RPC server: the one place that puts its pieces together.

`resolve(env, launch_cwd)` reads what a server is configured by (paths, config.json,
settings, known secrets); `build_server(stdin, stdout, setup, methods=...)` builds the
transport over the two streams, the worker pool, the connection, the runtime and the
server (with the maker of its warm-up, `kward.rpc.warmup`, unless `KWARD_NO_WARMUP` is set), and
wires them. `kward rpc` (kward/rpc/main.py), `kward.client.Client.in_process`, the tests
and the bench all build servers here, so they serve the same thing. Main thread (or the
thread that will call `serve()`); nothing starts until `serve()`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, BinaryIO, Mapping, NamedTuple

from kward.config.secrets import KnownSecrets
from kward.config.settings import LiveSettings, Settings, resolve_settings
from kward.config.store import ConfigStore, Paths, resolve_paths
from kward.errors import KwardError
from kward.rpc.connection import Connection
from kward.rpc.method_table import MethodTable, default_table
from kward.rpc.pool import WorkerPool
from kward.rpc.server import RpcServer
from kward.rpc.transport import WRITER_FAILED, Transport
from kward.runtime import Runtime

if TYPE_CHECKING:  # pragma: no cover
    from kward.model import EventPayload
    from kward.rpc.daemon import Daemon
    from kward.rpc.listen import Listening
    from kward.rpc.approvals import RpcApprover
    from kward.rpc.warmup import WarmUp

ENV_NO_WARMUP = "KWARD_NO_WARMUP"  # any non-empty value: a server without a warm-up


class Setup(NamedTuple):
    """What one server is configured by."""

    env: Mapping[str, str]  # the environment the providers and settings are read from
    paths: Paths
    config: ConfigStore
    settings: Settings
    secrets: KnownSecrets
    launch_cwd: str  # the default workspace (its real path)
    live: LiveSettings  # the settings of config.json now (`settings` until it changes)


def resolve(env: Mapping[str, str] = os.environ, launch_cwd: str | os.PathLike[str] | None = None, *,
            narrow_config_mode: bool = True) -> Setup:
    """Read the configuration a server runs with. An unreadable config.json is not fatal
    (initialize and config/read report it); a bad environment value raises ConfigError
    naming the variable (every one kward reads is checked here, once). `narrow_config_mode`
    False: a config.json open to others is left as it is (`ConfigStore`; `kward doctor`)."""
    paths = resolve_paths(env)
    config = ConfigStore(paths, narrow_mode=narrow_config_mode)
    live = LiveSettings(config, env)
    try:
        settings = live.current()
    except KwardError:  # config.json unusable; or a bad variable, which this raises again
        settings = resolve_settings({}, env)
    return Setup(env=env, paths=paths, config=config, settings=settings,
                 secrets=KnownSecrets(env, config, paths.auth_file),
                 launch_cwd=os.path.realpath(launch_cwd if launch_cwd is not None else os.getcwd()), live=live)


def _event_payload(type_: str, payload: EventPayload) -> Mapping[str, Any]:
    """`kward.rpc.wire.events.event_payload`, imported when a plugin first observes an event."""
    from kward.rpc.wire.events import event_payload

    return event_payload(type_, payload)


def build_server(stdin: BinaryIO, stdout: BinaryIO, setup: Setup | None = None, *,
                 env: Mapping[str, str] | None = None, launch_cwd: str | os.PathLike[str] | None = None,
                 methods: MethodTable | None = None, approval_default: str = "off") -> RpcServer:
    """A server over `stdin`/`stdout` (binary streams; stdout unbuffered or flushed by the
    writer) serving `methods` (default: every method of kward.rpc.method_table.METHODS).
    Without `setup`, resolves one from `env` (default os.environ) and `launch_cwd`.
    `approval_default`: the approval mode when config.json sets none (`kward rpc`: off;
    the interactive terminal: ask)."""
    if setup is None:
        setup = resolve(os.environ if env is None else env, launch_cwd)
    settings = setup.settings
    transport = Transport(stdin, stdout, max_frame_bytes=settings.max_frame_bytes,
                          on_writer_failed=lambda: transport.inbox.put_control(WRITER_FAILED))
    pool = WorkerPool(settings.rpc_workers)
    conn = Connection(transport.outbox, setup.secrets)
    runtime = Runtime(paths=setup.paths, config=setup.config, settings=settings, launch_cwd=setup.launch_cwd,
                      env=setup.env, secrets=setup.secrets, submit=pool.submit, event_sink=conn.publish_turn_event,
                      notify=conn.report, make_room=conn.make_room, admit=conn.admit, event_payload=_event_payload,
                      live_settings=setup.live, wants_event=lambda type_: conn.wants("turn/event", type_),
                      approver=_approver(conn), approval_default=approval_default)
    table = methods if methods is not None else default_table()
    conn.describe_capabilities = lambda: _capabilities(table, runtime, conn)
    make_warm_up = None if setup.env.get(ENV_NO_WARMUP) else lambda: _warm_up(table, runtime)
    return RpcServer(transport, pool, table, runtime, conn, make_warm_up)


def build_daemon(listener: "Listening", path: str, setup: Setup, *, methods: MethodTable | None = None,
                 idle_exit: float | None = None) -> "Daemon":
    """A listening server on `listener` (bound at `path`, `kward.rpc.listen.listen`): one runtime
    and pool for every connection, routed by a hub (`kward.rpc.daemon`, `kward.rpc.hub`)."""
    from kward.rpc.daemon import DEFAULT_IDLE_EXIT, Daemon
    from kward.rpc.hub import Hub, HubApprover

    settings = setup.settings
    hub = Hub()
    pool = WorkerPool(settings.rpc_workers)
    runtime = Runtime(paths=setup.paths, config=setup.config, settings=settings, launch_cwd=setup.launch_cwd,
                      env=setup.env, secrets=setup.secrets, submit=pool.submit, event_sink=hub.publish_turn_event,
                      notify=hub.report, make_room=hub.make_room, make_room_for=hub.make_room_for, admit=hub.admit,
                      event_payload=_event_payload,
                      live_settings=setup.live, wants_event=hub.wants_event, approver=HubApprover(hub),
                      several_clients=True)
    hub.pending_questions = lambda sid: runtime.questions.pending(sid) if runtime.has_service("questions") else []
    table = methods if methods is not None else default_table()
    make_warm_up = None if setup.env.get(ENV_NO_WARMUP) else lambda: _warm_up(table, runtime)
    return Daemon(listener, path, runtime=runtime, pool=pool, methods=table, hub=hub, secrets=setup.secrets,
                  max_frame_bytes=settings.max_frame_bytes,
                  idle_exit=DEFAULT_IDLE_EXIT if idle_exit is None else idle_exit, make_warm_up=make_warm_up)


def _approver(conn: Connection) -> "RpcApprover":
    """The approver of this server's client (`kward.rpc.approvals`), a thin object that
    imports the agent's approval module only when a turn first asks."""
    from kward.rpc.approvals import RpcApprover

    return RpcApprover(conn)


def _capabilities(table: MethodTable, runtime: Runtime, conn: Connection) -> dict[str, Any]:
    """The capabilities `initialize` would answer now (`runtime/capabilitiesChanged`)."""
    from kward.rpc import capabilities

    return dict(capabilities.build(table, capabilities.facts(runtime.info())._replace(
        experimental_client=conn.experimental)))


def _warm_up(table: MethodTable, runtime: Runtime) -> "WarmUp":
    """The server's warm-up, made when the client is first idle after it was given a
    session (kward.rpc.warmup is imported then)."""
    from kward.rpc.warmup import WarmUp, imports_for

    return WarmUp(imports_for(table, runtime))
