"""After `shutdown` is answered, every request still gets one answer before the process
exits: new ones `-32600` `shutting_down`, one still running an error of its own."""

import json

import pytest

from lib.resources_helpers import BLOCKING, read_lines, write_plugin
from lib.rpc_client import RpcClient, frame
from lib.waiting import wait_until


def test_requests_after_the_shutdown_response_are_refused_not_dropped(isolated_home):
    with RpcClient(isolated_home) as c:
        c.request("initialize")
        # pipelined right behind shutdown, in the same write
        c.write(frame({"jsonrpc": "2.0", "id": "stop", "method": "shutdown"})
                + b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "workspace/info"}) for i in range(20)))
        assert c.response("stop")["result"] == {"ok": True}
        for i in range(20):
            err = c.response(i)["error"]
            assert (err["code"], err["data"]["reason"]) == (-32600, "shutting_down"), err
        assert c.wait_exit(5) == 0
        assert c.stderr == "" and c.protocol_errors == [] and c.null_id_errors == []


def test_a_request_running_at_shutdown_is_answered_before_the_exit(isolated_home):
    cfg = isolated_home / ".kward"
    out = isolated_home / "blocked.jsonl"
    write_plugin(cfg, "blocking", BLOCKING, out=out)
    with RpcClient(isolated_home) as c:
        c.request("initialize")
        session = c.request("sessions/create", {"name": "one"})
        blocked = c.send("commands/run", {"sessionId": session["id"], "name": "block", "arguments": "run"})
        wait_until(lambda: read_lines(out), what="/block to start")
        assert c.request("shutdown") == {"ok": True}
        late = c.send("workspace/info")  # arrives while the stop waits for /block
        err = c.response(late)["error"]
        assert (err["code"], err["data"]["reason"]) == (-32600, "shutting_down")
        later = c.send("workspace/info")  # and one sent once that answer came
        err = c.response(later)["error"]
        assert (err["code"], err["data"]["reason"]) == (-32600, "shutting_down")
        assert c.wait_exit(5) == 0
        err = c.response(blocked, timeout=0)["error"]
        assert (err["code"], err["data"]["reason"], err["data"]["method"]) == (-32600, "shutting_down",
                                                                               "commands/run"), err
        assert c.response_counts[json.dumps(blocked)] == 1
        assert c.stderr == "" and c.protocol_errors == []
