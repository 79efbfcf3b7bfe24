"""Secrets and redaction, over the real `kward rpc`.

1. kward's own credentials (environment, config, stored login) never reach the
   conversation: a command that reads kward's environment through /proc (which no longer
   lists them), or `cat`s a file
   holding a key, leaves no secret in the client's frames, the session file, either export
   or the next model request.
2. Redaction never corrupts content: text that merely looks like a secret (`sk-...`,
   `Bearer ...`, `password=...`) comes back exactly from every place that shows the
   conversation, while config/read and error responses are still redacted.
"""

import html
import json
from pathlib import Path

import pytest

from lib import fake_openrouter as fo
from lib.fake_codex import make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.rpc_client import RpcError
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import model_error, text, tool
from lib.turn_events import check_turn_events, finished

REDACTED = "[REDACTED]"
TOKEN = make_jwt("acct_env_5b3c")  # OPENAI_ACCESS_TOKEN
KEY = "sk-or-v1-ENVKEY0123456789abcdef0123"  # OPENROUTER_API_KEY
COMPAT = "compat-plain-secret-4242"  # config openai_compat_api_key: matches no pattern
STORED = {"access_token": make_jwt("acct_stored_77"), "refresh_token": "rt-stored-refresh-0077",
          "id_token": make_jwt("acct_id_88")}
STRANGER = make_jwt("acct_not_kwards")  # a JWT kward does not hold: recognised by its shape
SECRETS = [TOKEN, KEY, COMPAT, *STORED.values(), STRANGER]


def _call(args: dict, call_id: str, name: str = "run_shell_command"):
    return fo.tool_call(name, json.dumps(args), call_id=call_id)


@pytest.mark.slow
def test_kwards_credentials_never_reach_the_conversation(isolated_home):
    kdir = isolated_home / ".kward"
    kdir.mkdir()
    (kdir / "config.json").write_text(json.dumps({"openai_compat_api_key": COMPAT}), encoding="utf-8")
    (kdir / "auth.json").write_text(json.dumps({"tokens": STORED}), encoding="utf-8")
    seen = []

    def call(method, params=None):
        try:
            result = client.request(method, params)
        except RpcError as exc:
            result = exc.error
        seen.append(result)
        return result

    with FakeOpenRouter() as router:
        router.script("chat",
                      _call({"command": "cat /proc/$PPID/environ | tr '\\0' '\\n'"}, "environ"),
                      _call({"command": 'cat keys.txt "$HOME/.kward/config.json" "$HOME/.kward/auth.json"'}, "cat"),
                      _call({"path": "keys.txt"}, "read", name="read_file"),
                      fo.text(["all ", "read"]))
        client = start_kward(isolated_home, KWARD_PROVIDER="openrouter", KWARD_OPENROUTER_BASE_URL=router.base_url,
                             OPENAI_ACCESS_TOKEN=TOKEN, OPENROUTER_API_KEY=KEY)
        ws = isolated_home / "ws"
        (ws / "keys.txt").write_text(f"router {KEY}\ncompat {COMPAT}\nlogin {TOKEN}\nother {STRANGER}\n",
                                     encoding="utf-8")
        with client:
            session = create_session(client, isolated_home)
            sid = session["id"]
            events = run_turn(client, sid, "read everything")
            assert finished(events)["status"] == "completed"
            results = {e["payload"]["toolCallId"]: e["payload"]["content"] for e in events
                       if e["type"] == "toolResult"}
            replay = call("turns/events", {"turnId": events[0]["turnId"]})
            call("sessions/transcript", {"sessionId": sid})
            call("sessions/forkMessages", {"sessionId": sid})
            exports = [call("sessions/export", {"sessionId": sid, "format": f})["path"] for f in ("markdown", "html")]
        assert client.protocol_errors == [] and client.stderr == ""
        bodies = [r.body.decode("utf-8") for r in router.requests("chat")]

    # the commands ran and read the secrets, which were replaced before anyone saw them
    environ = results["environ"].splitlines()
    # (kward's credential variables are not in its environment block at all: tests/auth/test_rpc_credentials_env.py)
    assert not any(line.startswith(("OPENAI_ACCESS_TOKEN=", "OPENROUTER_API_KEY=")) for line in environ)
    assert "KWARD_PROVIDER=openrouter" in environ  # the rest of the environment reads as it is
    assert f"router {REDACTED}\ncompat {REDACTED}\nlogin {REDACTED}\nother {REDACTED}" in results["cat"]
    assert f'"openai_compat_api_key": "{REDACTED}"' in results["cat"]
    assert f'"refresh_token": "{REDACTED}"' in results["cat"]
    assert f"compat {REDACTED}" in results["read"]
    assert len(bodies) == 4 and f"router {REDACTED}" in bodies[2]  # the model saw the scrubbed text
    assert len(replay["events"]) == len(events)
    frames = "\n".join(json.dumps(x) for x in [*client.notifications, *client.null_id_errors, *seen])
    places = {"frames": frames, "session file": Path(session["path"]).read_text(encoding="utf-8"),
              "markdown export": Path(exports[0]).read_text(encoding="utf-8"),
              "html export": Path(exports[1]).read_text(encoding="utf-8"),
              "model requests": "\n".join(bodies)}
    assert all(f"router {REDACTED}" in text for text in places.values())
    for where, text in places.items():
        for secret in SECRETS:
            assert secret not in text, f"a secret in the {where}: {secret[:14]}..."


TEXT = "pip install sk-learn-extra-stuff\nAuthorization: Bearer abc.def\npassword=hunter2"


@pytest.mark.slow
def test_content_that_looks_like_a_secret_comes_back_exactly(kward):
    k = kward([
        [tool("read_file", {"path": "notes.txt"}, id="read"), tool("read_file", {"path": "out.txt"}, id="read_out")],
        [tool("write_file", {"path": "out.txt", "content": TEXT + "\n", "password": "hunter2"}, id="write")],
        [text(TEXT)],
        [model_error("upstream said: Bearer xyz0123456789 sk-abcdefghijklmnop", kind="server", status=500)],
    ], files={"notes.txt": TEXT + "\n", "out.txt": "old\n"})
    (k.home / ".kward").mkdir(exist_ok=True)
    (k.home / ".kward" / "config.json").write_text(json.dumps({"openai_compat_api_key": "cfg-key-123456789",
                                                                "provider": "scripted"}), encoding="utf-8")
    s = k.session()
    turn, events = k.run(s["id"], TEXT)
    check_turn_events(events, "completed")
    calls = {e["payload"]["toolCallId"]: e["payload"] for e in events if e["type"] == "toolCall"}
    results = {e["payload"]["toolCallId"]: e["payload"] for e in events if e["type"] == "toolResult"}
    assert calls["write"]["args"]["content"] == TEXT + "\n"
    assert json.loads(calls["write"]["rawToolCall"]["function"]["arguments"])["password"] == "hunter2"
    assert TEXT in results["read"]["content"] and TEXT in results["read"]["result"]["content"]
    diff = results["write"]["result"]["diff"]
    assert all(f"+{line}" in diff.splitlines() for line in TEXT.splitlines())
    answer = [e["payload"] for e in events if e["type"] == "answer"][0]
    assert answer["content"] == TEXT
    message = [e["payload"]["message"] for e in events if e["type"] == "assistantMessage"][-1]
    assert message["content"] == TEXT
    # the replay of the events is the same as the live stream
    assert k.request("turns/events", {"turnId": turn["id"]})["events"] == events

    transcript = json.dumps(k.request("sessions/transcript", {"sessionId": s["id"]}))
    assert json.dumps(TEXT)[1:-1] in transcript and json.dumps(diff)[1:-1] in transcript
    assert json.dumps(TEXT + "\n")[1:-1] in transcript  # the write call's arguments
    fork_messages = k.request("sessions/forkMessages", {"sessionId": s["id"]})["messages"]
    assert [m["text"] for m in fork_messages] == [" ".join(TEXT.split())]
    fork = k.request("sessions/fork", {"sessionId": s["id"], "entryId": fork_messages[0]["entryId"]})
    assert fork["text"] == TEXT
    listed = k.request("sessions/list", {"workspaceRoot": str(k.ws)})["sessions"]
    assert any(item["firstMessage"] == " ".join(TEXT.split()) for item in listed)
    renamed = k.request("sessions/rename", {"sessionId": s["id"], "name": "Bearer abc.def password=hunter2"})
    assert renamed["name"] == "Bearer abc.def password=hunter2"
    for fmt in ("markdown", "html"):
        page = Path(k.request("sessions/export", {"sessionId": s["id"], "format": fmt})["path"]).read_text()
        for line in TEXT.splitlines():
            assert (line if fmt == "markdown" else html.escape(line)) in page, (fmt, line)
    assert k.messages(s)[0]["content"] == TEXT  # the session file holds the input as it was typed

    # structured data and errors are still redacted
    config = k.request("config/read")["config"]
    assert config["openai_compat_api_key"] == REDACTED and config["provider"] == "scripted"
    err = k.error("sessions/rename", {"sessionId": "Bearer abcdefghijklmnop", "name": "x"})
    assert "abcdefghijklmnop" not in json.dumps(err.error) and "Bearer [REDACTED]" in err.error["message"]
    failed, failed_events = k.run(s["id"], "again")
    error = check_turn_events(failed_events, "failed")["error"]
    assert "xyz0123456789" not in error["message"] and "abcdefghijklmnop" not in error["message"]
    assert error["message"].startswith("upstream said: Bearer [REDACTED]")
    status = k.request("turns/status", {"turnId": failed["id"]})
    replayed = k.request("turns/events", {"turnId": failed["id"]})
    assert "xyz0123456789" not in json.dumps([status, replayed])
