"""Capabilities claim exactly what the method table implements."""

import json

import pytest

from kward.rpc import capabilities
from kward.rpc import method_table as registry
from lib.paths import REPO
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

SHARED = REPO.parent / "shared"  # the project's shared reference, beside the checkout
ORIGINAL = json.loads((SHARED / "reference" / "initialize-original.json").read_text())["capabilities"] \
    if SHARED.exists() else None


def walk(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + (k,), v
            yield from walk(v, path + (k,))


def test_every_registered_handler_exists():
    table = registry.default_table()
    for name in registry.METHODS:
        assert callable(table.handler(name)), name


def test_listed_methods_exist_and_supported_groups_have_methods():
    caps = capabilities.build(registry.METHODS)
    for path, value in walk(caps):
        if path[-1] == "methods":
            for m in value:
                assert m in registry.METHODS, (path, m)
        if path[-1] == "supported" and value is True:
            group = caps
            for key in path[:-1]:
                group = group[key]
            listed = group.get("methods") or ([group["method"]] if "method" in group else [])
            assert all(m in registry.METHODS for m in listed), path


def test_unimplemented_groups_say_so():
    caps = capabilities.build(["initialize", "shutdown"])
    for group in ("sessions", "turns", "models", "runtime", "auth", "memory", "commands", "transcript",
                  "export", "logging", "config", "prompts", "tools"):
        assert caps[group]["supported"] is False, group
    assert caps["extensionUi"]["question"]["supported"] is False
    assert caps["attachments"]["input"]["supported"] is False
    assert caps["asyncTurns"] is False and caps["uiQuestions"] is False


def test_flags_follow_the_table():
    caps = capabilities.build(["initialize", "sessions/create", "turns/start", "turns/cancel"])
    assert caps["sessions"]["supported"] is True and caps["sessions"]["methods"] == ["sessions/create"]
    assert caps["turns"]["supported"] is True and caps["turnCancellation"] == "best-effort"
    assert caps["sessions"]["fork"]["supported"] is False and caps["turnEventReplay"] is False


def test_every_group_and_field_of_the_original_is_present():
    if ORIGINAL is None:  # the shared reference is not beside this checkout
        return
    ours = capabilities.build(registry.METHODS)
    ours_paths = {p for p, _ in walk(ours)}
    missing = [p for p, _ in walk(ORIGINAL) if p not in ours_paths]
    # the original's `reason` says why a feature is unsupported: kward's supported one has none
    assert missing == [("composer", "sessionDiff", "reason")]
    assert ours["composer"]["sessionDiff"]["supported"] is True
    unsupported = capabilities.build(["initialize"])
    assert unsupported["composer"]["sessionDiff"] == ORIGINAL["composer"]["sessionDiff"]


def test_numbers_and_flags_survive_redaction():
    from kward.redact import redact

    caps = capabilities.build(registry.METHODS)
    assert redact(caps) == caps  # e.g. runtime.stats.tokens stays a boolean


def test_steering_table_matches_the_provider_classes():
    from kward.providers.codex import CodexProvider
    from kward.providers.openai_compat import OpenAICompatibleProvider
    from kward.providers.openrouter import OpenRouterProvider
    from kward.providers.scripted import ScriptedProvider
    from kward.providers import specs as providers
    from kward.providers.specs import STEERING

    classes = {"codex": CodexProvider, "openrouter": OpenRouterProvider,
               "openai-compatible": OpenAICompatibleProvider, "scripted": ScriptedProvider}
    assert {k: c.supports_steering for k, c in classes.items()} == STEERING
    assert {s.key: providers.provider_class(s) for s in providers.PROVIDERS} == classes  # every spec names its class


def test_capabilities_report_the_limits_the_code_enforces(tmp_path):
    from kward.agent.attachments import normalize_attachments
    from kward.agent.eventlog import EventLog
    from kward.errors import InvalidParams
    from kward.config.settings import CATEGORY_FIELDS as CATEGORIES
    from kward.telemetry.log import TelemetryLog
    from kward.telemetry.ranges import BUCKETS, UNITS

    caps = capabilities.build(registry.METHODS)
    image = caps["attachments"]["input"]
    assert image["mimeTypes"] == ["image/png", "image/jpeg", "image/gif", "image/webp"]
    for mime in image["mimeTypes"]:  # each claimed type is accepted, at the claimed size ...
        normalize_attachments([{"type": "image", "mimeType": mime, "data": "AAAA", "sizeBytes": image["maxBytes"]}])
    with pytest.raises(InvalidParams):  # ... and a byte more is refused
        normalize_attachments([{"type": "image", "mimeType": "image/png", "data": "AAAA",
                                "sizeBytes": image["maxBytes"] + 1}])
    with pytest.raises(InvalidParams):
        normalize_attachments([{"type": "image", "mimeType": "image/bmp", "data": "AAAA"}])
    limit = caps["turns"]["eventReplay"]["limit"]
    log = EventLog("t", "s", publish=lambda e: None, make_room=lambda: None)
    for _ in range(limit + 5):
        log.emit("assistantDelta", {}, wait=False)
    assert [e.sequence for e in log.after(0)] == list(range(6, limit + 6))  # the last `limit` are kept
    assert caps["turns"]["eventReplay"]["truncation"] is True  # ... and a replay says what it lost
    assert log.replay(0)[1:] == (6, True) and log.replay(4)[1:] == (6, True) and log.replay(5)[1:] == (6, False)
    assert EventLog("t", "s", publish=lambda e: None, make_room=lambda: None).replay(0)[1:] == (1, False)
    logging = caps["logging"]
    assert logging["rotation"]["maxBytes"] == TelemetryLog(tmp_path).max_bytes == 10 * 1024 * 1024
    assert logging["categories"] == list(CATEGORIES)
    assert logging["stats"]["units"] == [u + "s" for u in UNITS] and logging["usageCsv"]["buckets"] == list(BUCKETS)


def test_memory_and_logging_groups_follow_the_table():
    caps = capabilities.build(registry.METHODS, capabilities.RuntimeFacts(logging_categories=("tools",)))
    assert caps["memory"]["supported"] is True and caps["memory"]["methods"] == list(capabilities.MEMORY_METHODS)
    assert caps["logging"]["supported"] is True and caps["logging"]["enabledCategories"] == ["tools"]
    none = capabilities.build(["initialize"], capabilities.RuntimeFacts(logging_categories=("tools",)))
    assert none["memory"]["hierarchy"] is False and none["memory"]["scopes"] == []
    assert none["logging"]["enabledCategories"] == [] and none["logging"]["methods"] == []


def test_tool_updates_are_claimed_with_turns():
    # shown working over `kward rpc` by tests/turns/test_rpc_tool_updates.py
    assert capabilities.build(registry.METHODS)["events"]["tools"]["update"] is True
    assert capabilities.build(["initialize"])["events"]["tools"]["update"] is False
    assert capabilities.build(registry.METHODS)["events"]["tools"]["updateEvent"] == "toolUpdate"


def test_changed_files_are_claimed_only_for_the_tools_that_report_them():
    tools = capabilities.build(registry.METHODS)["events"]["tools"]
    assert tools["changedFiles"] is True  # shell commands report what they changed too
    assert tools["changedFilesTools"] == ["edit", "write", "bash"]
    none = capabilities.build(["initialize"])["events"]["tools"]
    assert none["changedFilesTools"] == [] and none["changedFiles"] is False


@pytest.mark.slow
def test_changed_files_flags_tell_what_a_turn_reports(kward):
    k = kward([[tool("run_shell_command", {"command": "echo made > b.txt"}, id="sh"),
                tool("write_file", {"path": "w.txt", "content": "w\n"}, id="write"),
                tool("read_file", {"path": "e.txt"}, id="read"),  # edit wants the file read first
                tool("edit_file", {"path": "e.txt", "edits": [{"old_text": "a", "new_text": "b"}]}, id="edit")],
               [text("done")]], files={"e.txt": "a\n"})
    tools = k.request("initialize")["capabilities"]["events"]["tools"]
    _, events = k.run(k.session()["id"])
    check_turn_events(events, "completed")
    results = {e["payload"]["toolName"]: e["payload"]["result"] for e in events if e["type"] == "toolResult"}
    assert (k.ws / "b.txt").read_text() == "made\n" and tools["changedFiles"] is True  # the shell says so too
    for name in tools["changedFilesTools"]:
        assert results[name]["changedFiles"] == [f"{name[0]}.txt"], name
    assert sorted(tools["changedFilesTools"]) == sorted(n for n, r in results.items() if "changedFiles" in r)


def test_the_update_notifications_are_claimed_with_the_methods_that_send_them():
    # shown working over `kward rpc` by tests/sessions/test_rpc_sessions_updates.py,
    # tests/compaction/test_rpc_compaction_turn_events.py, tests/rpc/test_rpc_capabilities_changed.py
    # and tests/turns/test_rpc_turns_events.py (truncation)
    caps = capabilities.build(registry.METHODS)
    assert caps["sessions"]["updates"] == {"supported": True, "notification": "session/event",
                                           "events": ["sessionUpdated", "usageUpdated"]}
    assert caps["events"]["sessionUpdates"] is True
    assert caps["events"]["compaction"] == {"supported": True, "events": ["compactionStart", "compactionEnd"]}
    assert caps["turns"]["eventReplay"]["truncation"] is caps["eventReplay"]["truncation"] is True
    assert caps["rpc"]["capabilitiesChanged"] == {"supported": True, "notification": "runtime/capabilitiesChanged"}
    assert caps["rpc"]["optOutNotificationTypes"] is True
    none = capabilities.build(["initialize"])
    assert none["sessions"]["updates"] == {"supported": False, "notification": "session/event", "events": []}
    assert none["events"]["sessionUpdates"] is False and none["events"]["compaction"]["supported"] is False
    assert none["turns"]["eventReplay"]["truncation"] is False


def test_the_session_diff_is_claimed_with_its_method_and_event_only_with_turns():
    from kward.agent.eventlog import EVENT_TYPES

    diff = capabilities.build(registry.METHODS)["composer"]["sessionDiff"]
    assert diff == {"supported": True, "method": "sessions/diff", "event": "turnDiff"}
    assert diff["method"] in capabilities.build(registry.METHODS)["sessions"]["methods"]
    assert diff["event"] in EVENT_TYPES
    for methods in (["initialize", "sessions/diff"], ["initialize", "turns/start"]):
        assert capabilities.build(methods)["composer"]["sessionDiff"]["supported"] is False, methods
