"""Live output while the client is behind reading: the real parts a `toolUpdate` goes
through (`LiveOutput` -> the agent loop's `live_output` -> the turn's `EventLog` -> the RPC
`Connection`'s `make_room` -> the `Outbox`), over an outbox that holds more than its limit
and that no writer empties. Publishing waits there (backpressure), but a shell command is
still killed at its timeout, a cancel still ends it, and a plugin command still times out:
the wait is bounded (`kward.pacing`)."""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace

import pytest

from kward import pacing
from kward.agent.eventlog import EventLog
from kward.agent.loop import live_output
from kward.cancel import CancelToken
from kward.config.secrets import KnownSecrets
from kward.config.store import ConfigStore, resolve_paths
from kward.errors import Canceled, PluginTimeout
from kward.model import ToolCall
from kward.resources.extensions import Resources
from kward.rpc.connection import Connection
from kward.rpc.transport import Outbox
from kward.tools.process import run_command
from lib.processes import pid_alive
from lib.resources_helpers import write_plugin

CHATTY = "echo $$ > pid; while :; do echo tick; sleep 0.01; done"


class Behind:
    """A connection whose client stopped reading: more than the outbox's limit is queued
    and nothing takes it. `waiting` is set once a publish reached `make_room`."""

    def __init__(self, home):
        self.outbox = Outbox(high_water=1, limit=0)
        self.outbox.put(b"unread", wait=False)
        paths = resolve_paths({"HOME": str(home)})
        self.conn = Connection(self.outbox, KnownSecrets({}, ConfigStore(paths), paths.auth_file))
        self.waiting = threading.Event()
        self.log = EventLog("turn", "session", self.conn.publish_turn_event, self._make_room)

    def _make_room(self):
        self.waiting.set()
        self.conn.make_room()

    def live(self, call_id="sh"):
        return live_output(ToolCall(call_id, "run_shell_command", {"command": CHATTY}), self.log.emit, None)


def in_thread(fn):
    """Run `fn` on a thread; returns (thread, outcome list: [("ok", value)] or [("raised", exc)])."""
    outcome = []

    def target():
        try:
            outcome.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 (reported to the test)
            outcome.append(("raised", exc))

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


@pytest.fixture
def behind(tmp_path):
    b = Behind(tmp_path)
    yield b
    b.outbox.kill()  # releases a publish still blocked (when the test failed), so its thread ends


def test_a_command_is_killed_at_its_timeout_while_its_output_waits_for_the_client(behind, tmp_path):
    live = behind.live()
    thread, outcome = in_thread(lambda: run_command(CHATTY, cwd=str(tmp_path), timeout=0.5, cancel=CancelToken(),
                                                    live=live))
    thread.join(15)
    assert not thread.is_alive(), "the command's pump stayed blocked on the unread output past its timeout"
    assert behind.waiting.is_set()  # its output did wait for the client
    [(kind, result)] = outcome
    assert kind == "ok" and result.timed_out and result.exit_status is None
    assert not pid_alive(int((tmp_path / "pid").read_text()))
    assert behind.outbox.overloaded  # the client still reads nothing: the timeout did not need it


def test_a_cancel_ends_a_command_whose_output_waits_for_the_client(behind, tmp_path):
    cancel = CancelToken()
    live = behind.live()
    thread, outcome = in_thread(lambda: run_command(CHATTY, cwd=str(tmp_path), timeout=60, cancel=cancel, live=live))
    assert behind.waiting.wait(15)  # the first update is waiting for room
    cancel.cancel()
    thread.join(15)
    assert not thread.is_alive(), "the cancel did not reach a command whose output waits for the client"
    [(kind, exc)] = outcome
    assert kind == "raised" and isinstance(exc, Canceled)
    assert not pid_alive(int((tmp_path / "pid").read_text()))


def test_without_a_bound_the_wait_for_room_lasts_until_the_client_reads(behind):
    """The bound is what ends the waits above: outside one, make_room waits for room."""
    thread, outcome = in_thread(behind.conn.make_room)
    thread.join(0.2)  # (not synchronisation: it must still be waiting whatever the time)
    assert thread.is_alive() and not outcome
    behind.outbox.take()  # the client reads
    thread.join(15)
    assert outcome == [("ok", None)]


def test_a_bound_ends_the_wait_at_its_deadline_or_cancel(behind):
    def bounded_make_room():
        with pacing.bounded(0.0):  # long past
            behind.conn.make_room()

    thread, outcome = in_thread(bounded_make_room)
    thread.join(15)
    assert outcome == [("ok", None)], "make_room waited past the bound's deadline"
    assert behind.outbox.wait_for_room(0.0) is False
    cancel = CancelToken()
    cancel.cancel()
    assert behind.outbox.wait_for_room(None, cancel) is False
    assert pacing.current() is None


SLOW = '''
    def register(kward):
        @kward.command("slow", description="Reports progress, then blocks")
        def slow(args, ctx):
            ctx.progress("step 1")
            with open(args) as gate:  # a FIFO the test opens at the end
                gate.read()
'''


def test_a_plugin_command_times_out_while_its_progress_waits_for_the_client(behind, tmp_path):
    config = tmp_path / "config"
    write_plugin(config, "slow", SLOW)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    resources = Resources(config, timeout=lambda: 0.5)
    command = resources.command("slow")
    session = SimpleNamespace(workspace_root=str(tmp_path), id="s", name=None, path=str(tmp_path / "s.jsonl"),
                              persistent_id="p", entry_messages=lambda: [])
    live = behind.live("command:slow")
    try:
        thread, outcome = in_thread(lambda: resources.run_command(command, str(gate), session, CancelToken(),
                                                                  progress=live))
        thread.join(15)
        assert not thread.is_alive(), "publishing the progress kept the plugin command from timing out"
        assert behind.waiting.is_set()
        [(kind, exc)] = outcome
        assert kind == "raised" and isinstance(exc, PluginTimeout)
    finally:
        with open(gate, "w"):  # release the abandoned plugin thread
            pass
