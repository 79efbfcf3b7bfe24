"""Server behaviour that needs a method added to the table: blocking, raising, printing."""

import threading
import time

import pytest

from kward.rpc import method_table as registry
from lib.inprocess import InProcessServer

GATE = threading.Event()


def slow_method(call):
    GATE.wait(30)
    return {"slow": True}


def stuck_method(call):
    threading.Event().wait(60)  # ignores every stop request


def boom_method(call):
    raise ZeroDivisionError("secret sk-abcdefghijklmnop in a message")


def notify_method(call):
    call.conn.notify("test/one", {"token": "t0ps3cret", "n": 1})
    call.conn.notify("test/two", {"n": 2})
    call.conn.notify("test/typed", {"n": 3}, type_="kept")
    call.conn.notify("test/typed", {"n": 4}, type_="dropped")
    return {}


@pytest.fixture
def extra_methods():
    """The default method table with the test methods registered (no global is patched)."""
    table = registry.default_table()
    for name, fn, slow in [("test/slow", slow_method, True), ("test/stuck", stuck_method, True),
                           ("test/boom", boom_method, False), ("test/notify", notify_method, False)]:
        table.register(name, fn, slow=slow)
    GATE.clear()
    yield table
    GATE.set()


def test_slow_method_does_not_delay_quick_ones(isolated_home, extra_methods):
    s = InProcessServer(isolated_home, methods=extra_methods)
    slow_id = s.send("test/slow")
    assert s.request("workspace/info")["root"]  # answered while test/slow blocks
    with pytest.raises(TimeoutError):
        s.response(slow_id, timeout=0.05)
    GATE.set()
    assert s.response(slow_id)["result"] == {"slow": True}
    s.close_input()
    assert s.join(5) and s.exit_code == 0


def test_unexpected_exception_is_32603_without_secrets_or_frames(isolated_home, extra_methods, caplog):
    s = InProcessServer(isolated_home, methods=extra_methods)
    err = s.error("test/boom")
    assert err.code == -32603 and err.reason == "internal_error"
    assert err.error["data"]["errorClass"] == "ZeroDivisionError"
    text = repr(err.error)
    assert "sk-abcdef" not in text and "Traceback" not in text and ".py" not in text
    assert "ZeroDivisionError" in caplog.text  # the traceback went to the log
    s.close_input()
    assert s.join(5)


def test_notifications_redacted_and_opt_out(isolated_home, extra_methods):
    s = InProcessServer(isolated_home, methods=extra_methods)
    s.request("initialize", {"capabilities": {"optOutNotificationMethods": ["test/two", "test/typed:dropped"]}})
    s.request("test/notify")
    s.request("workspace/info")  # ordering: notifications were queued before this answer
    methods = [n["method"] for n in s.notifications]
    assert methods == ["test/one", "test/typed"]  # one type of a typed method opted out of, not the rest
    assert s.notifications[1]["params"] == {"n": 3}
    assert s.server.conn.wants("test/typed") and not s.server.conn.wants("test/typed", "dropped")
    assert not s.server.conn.wants("test/two", "any")
    assert s.notifications[0]["params"] == {"token": "[REDACTED]", "n": 1}
    assert "id" not in s.notifications[0]
    s.close_input()
    assert s.join(5)


@pytest.mark.slow
def test_stop_within_two_seconds_with_stuck_work(isolated_home, extra_methods):
    s = InProcessServer(isolated_home, methods=extra_methods)
    s.send("test/stuck")
    s.request("workspace/info")
    t0 = time.monotonic()
    s.request("shutdown")
    assert s.join(2.5), "serve() did not return"
    assert time.monotonic() - t0 < 2.2 and s.exit_code == 0


def test_requests_after_shutdown_are_refused(isolated_home, extra_methods):
    s = InProcessServer(isolated_home, methods=extra_methods)
    from lib.rpc_client import frame

    s.write(frame({"jsonrpc": "2.0", "id": 1, "method": "test/slow"})
            + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            + frame({"jsonrpc": "2.0", "id": 3, "method": "workspace/info"}))
    assert s.response(2)["result"] == {"ok": True}
    GATE.set()  # frame 3 sits in the inbox while the in-flight request is drained
    assert s.response(1)["result"] == {"slow": True}  # in flight: allowed to finish
    late = s.response(3)
    assert late["error"]["data"]["reason"] == "shutting_down"
    assert s.join(5)


def test_registering_changes_only_that_table(extra_methods):
    assert "test/slow" in extra_methods and extra_methods.get("test/slow").slow is True
    assert "test/slow" not in registry.METHODS and "test/slow" not in registry.default_table()
    assert extra_methods.handler("test/boom") is boom_method
    assert extra_methods.handler("workspace/info") is registry.default_table().handler("workspace/info")


def test_capabilities_follow_the_table_served(isolated_home):
    table = registry.MethodTable({n: m for n, m in registry.METHODS.items() if not n.startswith("turns/")})
    s = InProcessServer(isolated_home, methods=table)
    caps = s.request("initialize")["capabilities"]
    assert caps["asyncTurns"] is False and caps["turns"]["supported"] is False
    assert caps["sessions"]["supported"] is True
    assert s.error("turns/start", {"sessionId": "x", "input": "hi"}).code == -32601
    s.close_input()
    assert s.join(5)
    full = InProcessServer(isolated_home)
    assert full.request("initialize")["capabilities"]["asyncTurns"] is True
    full.close_input()
    assert full.join(5)


def test_while_stopping_one_thread_reads_the_inbox_and_every_request_is_answered(isolated_home, extra_methods,
                                                                                 monkeypatch):
    """Once the refuser runs, no other thread takes frames from the inbox (two readers would
    answer in any order, and what one sends after the output is closed is lost)."""
    from kward.rpc import transport
    from lib.rpc_client import frame

    readers: list[str] = []
    real_get = transport.Inbox.get

    def get(self, block=True, timeout=None):
        readers.append(threading.current_thread().name)
        return real_get(self, block, timeout)

    monkeypatch.setattr(transport.Inbox, "get", get)
    s = InProcessServer(isolated_home, methods=extra_methods)
    s.send("test/stuck")
    s.write(frame({"jsonrpc": "2.0", "id": "stop", "method": "shutdown"})
            + b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "workspace/info"}) for i in range(20)))
    assert s.response("stop")["result"] == {"ok": True}
    for i in range(20):
        assert s.response(i)["error"]["data"]["reason"] == "shutting_down"
    assert s.join(5) and s.exit_code == 0
    after = readers[readers.index("kward-refuser"):]
    assert set(after) == {"kward-refuser"}, sorted(set(after))
