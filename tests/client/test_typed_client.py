"""kward.client's typed helpers: each is annotated with the shape (kward.rpc.shapes) the
published schema gives its method's result, and what each returns over a real `kward rpc`
(the Scripted provider) is valid against that definition of docs/protocol.schema.json."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from kward.client import Client
from lib.paths import REPO
from lib.rpc_client import imported_modules, kward_env
from lib.schema_check import problems
from lib.scripts import text, write_script

SCHEMA = json.loads((REPO / "docs" / "protocol.schema.json").read_text(encoding="utf-8"))

#: Each typed helper of Client and the method whose result it returns.
HELPERS = {
    "initialize": "initialize",
    "create_session": "sessions/create",
    "resume_session": "sessions/resume",
    "list_sessions": "sessions/list",
    "close_session": "sessions/close",
    "transcript": "sessions/transcript",
    "start_turn": "turns/start",
    "cancel_turn": "turns/cancel",
    "turn_status": "turns/status",
    "turn_events": "turns/events",
    "current_model": "models/current",
    "runtime_state": "runtime/state",
}


def definition_name(ref: str) -> str:
    """The definition `ref` names, through a definition that is only a `$ref` to a shared
    one (`SessionsCreateResult` -> `Session`)."""
    name = ref.rsplit("/", 1)[1]
    target = SCHEMA["$defs"][name].get("$ref")
    if target is not None and "properties" not in SCHEMA["$defs"][name]:
        return definition_name(target)
    return name


def shapes_namespace() -> dict[str, Any]:
    """Every name of the shape modules (what the helpers' annotations refer to)."""
    from kward.rpc.shapes import namespaces

    names: dict[str, Any] = {}
    for module in namespaces.MODULES:
        names.update(vars(module))
    return names


def return_hint(name: str) -> Any:
    return typing.get_type_hints(getattr(Client, name), localns=shapes_namespace())["return"]


def valid(name: str, value: Any) -> Any:
    found = problems(SCHEMA, {"$ref": f"#/$defs/{name}"}, value)
    assert not found, f"{name}: {found}"
    return value


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_each_helper_is_annotated_with_the_schemas_result_definition(helper):
    expected = definition_name(SCHEMA["x-kward-messages"]["request"][HELPERS[helper]]["result"])
    assert return_hint(helper).__name__ == expected


def test_turn_yields_the_turn_event_envelope():
    hint = return_hint("turn")
    assert typing.get_origin(hint) is not None and typing.get_origin(hint).__name__ == "Iterator"
    (event,) = typing.get_args(hint)
    assert event.__name__ == definition_name(SCHEMA["x-kward-messages"]["notification"]["turn/event"]["params"])


def test_importing_the_client_never_loads_the_shapes(isolated_home):
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import kward.client"], capture_output=True,
                       env=kward_env(isolated_home), timeout=60, text=True)
    assert p.returncode == 0, p.stderr
    loaded = imported_modules(p.stderr)
    assert "kward.client.connection" in loaded
    assert not {m for m in loaded if m.startswith("kward.rpc.shapes") or m == "kward.rpc.schema"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\n")
    return ws


def test_every_helper_returns_what_its_definition_says(isolated_home, tmp_path, workspace):
    script = write_script(tmp_path / "scripts", [
        [text("Hello "), text("there.")],
        [{"type": "delay", "seconds": 60}],  # the second turn waits to be canceled
    ])
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    with Client.spawn(env=env, cwd=workspace) as k:
        valid("InitializeResult", k.initialize(name="typed-test"))
        session = valid("Session", k.create_session(workspace, name="typed"))
        assert session["name"] == "typed"

        events = [valid("TurnEvent", e) for e in k.turn(session["id"], "hi", timeout=30)]
        assert events[-1]["type"] == "turnFinished" and events[-1]["payload"]["status"] == "completed"
        first = events[0]["turnId"]
        status = valid("Turn", k.turn_status(first))
        assert status["id"] == first and status["status"] == "completed"
        replay = valid("TurnsEventsResult", k.turn_events(first))
        assert replay["events"] == events
        assert valid("TurnsEventsResult", k.turn_events(first, after_sequence=len(events) - 1))["events"] == events[-1:]

        with k.subscribe(lambda m: m.get("method") == "turn/event"
                         and m["params"]["type"] == "turnFinished") as finished:
            turn = valid("Turn", k.start_turn(session["id"], "wait"))
            canceled = valid("Turn", k.cancel_turn(turn["id"]))
            assert canceled["id"] == turn["id"] and canceled["cancelRequested"] is True
            end = finished.get(30)["params"]
            while end["turnId"] != turn["id"]:
                end = finished.get(30)["params"]
        assert end["payload"]["status"] == "canceled"
        assert valid("Turn", k.turn_status(turn["id"]))["status"] == "canceled"

        transcript = valid("SessionsTranscriptResult", k.transcript(session["id"]))
        assert transcript["session"]["id"] == session["id"]
        assert [m["role"] for m in transcript["messages"]][:2] == ["user", "assistant"]
        model = valid("ModelEntry", k.current_model())
        assert model["provider"] == "Scripted" and model["current"] is True
        state = valid("RuntimeStateResult", k.runtime_state(session["id"]))
        assert state["rpcSessionId"] == session["id"] and state["sessionFile"] == session["path"]

        listed = valid("SessionsListResult", k.list_sessions(workspace, limit=5))
        assert [s["path"] for s in listed["sessions"]] == [session["path"]]
        resumed = valid("Session", k.resume_session(session["path"], workspace_root=workspace))
        assert resumed["persistentId"] == session["persistentId"] and resumed["id"] != session["id"]
        assert valid("SessionsCloseResult", k.close_session(resumed["id"])) == {"closed": True}
        assert valid("Session", k.create_session(memory=False))["workspaceRoot"] == str(workspace.resolve())
    assert k.exit_status == 0
