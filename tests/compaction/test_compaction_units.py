"""The compaction core on typed messages: the estimate and threshold, the cut (turn
boundary, split turn, tool calls kept with their results), the file lists and their
rewrite, the workspace's language profile, and the lane a compaction holds."""

from __future__ import annotations

import contextlib
import threading

import pytest

from kward.agent.scheduler import TurnManager
from kward.cancel import CancelToken
from kward.compaction import prompt
from kward.compaction.cut import find_cut, kept_entry_id
from kward.compaction.estimate import context_tokens, message_tokens, over_threshold, reserve_for
from kward.compaction.files import file_details, rewrite_files
from kward.compaction.run import plan
from kward.compaction.serialize import serialize
from kward.errors import AlreadyCompacted, NothingToCompact, TurnInProgress
from kward.model import AssistantMessage, CompactionSummary, ToolCall, ToolResultMessage, Usage, UserMessage
from kward.config.settings import CompactionSettings


def user(text):
    return UserMessage(text)


def call(call_id, name="read_file", path="a.txt"):
    return AssistantMessage("", tool_calls=(ToolCall(call_id, name, f'{{"path": "{path}"}}'),))


def result(call_id, text="x" * 400, name="read_file"):
    return ToolResultMessage(call_id, name, text)


def test_estimate_and_threshold():
    assert message_tokens(user("abcd" * 10)) == 12  # "user" + newline + 40 chars: 45 / 4, rounded up
    messages = [user("a" * 400), AssistantMessage("b", usage=Usage(total_tokens=5000)), user("c" * 40)]
    assert context_tokens(messages) == 5000 + message_tokens(messages[2])  # anchored on the reported usage
    assert context_tokens(messages[:1], "i" * 400) == 100 + message_tokens(messages[0])
    # a kept message's usage describes the context before the compaction: not used
    summary = CompactionSummary("s" * 40, extras={"kept_messages": 2})
    assert context_tokens([summary] + messages[1:]) == sum(message_tokens(m) for m in [summary] + messages[1:])
    assert reserve_for(200_000, 16_384) == 20_000 and reserve_for(100_000, 16_384) == 16_384
    assert reserve_for(20_000, 1_000) == 12_000
    assert over_threshold(188_001, 200_000, 16_384) and not over_threshold(180_000, 200_000, 16_384)
    assert not over_threshold(10**9, None, 16_384)


def test_the_cut_prefers_a_turn_boundary_and_never_orphans_a_result():
    entries = [user("u" * 400), call("c1"), result("c1"), AssistantMessage("done"), user("next"),
               AssistantMessage("ok")]
    cut = find_cut(entries, 0, 20)
    assert (cut.first_kept, cut.split_turn) == (4, False) and kept_entry_id(entries, 4) == "message:4"
    assert find_cut(entries, 0, 10_000) is None  # everything fits: nothing to compact

    # one huge turn: split inside it, at an assistant message, never at a result
    turn = [user("u" * 40), call("c1"), result("c1"), call("c2"), result("c2"), AssistantMessage("end")]
    cut = find_cut(turn, 0, 130)
    assert cut.split_turn and cut.first_kept == 3 and cut.turn_start == 0
    assert [type(m).__name__ for m in cut.turn_prefix(turn)] == ["UserMessage", "AssistantMessage",
                                                                  "ToolResultMessage"]

    # a result recorded after other messages (another writer): its call is kept with it
    odd = [user("u" * 400), call("c1"), user("later " * 30), AssistantMessage("hm"), result("c1", "r")]
    cut = find_cut(odd, 0, 60)
    assert cut.first_kept == 1
    kept = odd[cut.first_kept:]
    calls = {c.id for m in kept if type(m) is AssistantMessage for c in m.tool_calls}
    assert all(m.tool_call_id in calls for m in kept if type(m) is ToolResultMessage)


def test_plan_refusals_and_positional_ids_after_a_compaction():
    settings = CompactionSettings(keep_recent_tokens=5)
    with pytest.raises(NothingToCompact):
        plan([], settings)
    summary = CompactionSummary("old")
    with pytest.raises(AlreadyCompacted):
        plan([user("a"), summary], settings)
    entries = [summary, user("a" * 80), AssistantMessage("b"), user("c")]
    p = plan(entries, settings)
    assert p.cut.start == 1 and p.previous is summary and p.first_kept_entry_id == "message:3"
    own = entries[:3] + [UserMessage("c", extras={"id": "ab12cd34"})]
    assert plan(own, settings).first_kept_entry_id == "ab12cd34"  # a v2 message's own id


def test_serialization_of_every_kind():
    text = serialize([user("hi"), AssistantMessage("sure", reasoning="think",
                                                   tool_calls=(ToolCall("s1", "run_shell_command",
                                                                        '{"command": "ls -la", "timeout": 5}'),
                                                               ToolCall("g1", "search_files", '{"query": "x"}'))),
                      result("s1", "a" * 2500, "run_shell_command"), result("g1", "found", "search_files"),
                      CompactionSummary("older")])
    blocks = text.split("\n\n")
    assert blocks[0] == "[User]: hi"
    assert blocks[1] == ('[Assistant reasoning]: think\n[Assistant]: sure\n[Assistant tool calls]: '
                         'run_shell_command(command="ls -la"); search_files(query="x")')
    assert blocks[2] == "[Bash]: ls -la\n[Output]: " + "a" * 2000 + "\n...[truncated 500 bytes]"
    assert blocks[3] == "[Tool result search_files]: found" and blocks[4] == "[Branch summary/context]: older"


def test_file_lists_from_tracked_calls_and_the_rewrite():
    messages = [call("r1", "read_file", "a.py"), result("r1", "1: x"), call("r2", "read_file", "gone.py"),
                result("r2", "Error: no such file"), call("w1", "write_file", "b.py"), result("w1", "Wrote b.py"),
                call("r3", "read_file", "b.py"), result("r3", "1: y"), call("e1", "edit_file", "c.py"),
                result("e1", "Declined: no")]
    details = file_details(messages, {"read_files": ["old.py"], "modified_files": ["m.py"]})
    assert details == {"read_files": ["a.py", "old.py"], "modified_files": ["b.py", "m.py"]}
    summary = "## Goal\n- g\n\n## Files & Code\n### Read\n- x\n- y\n\n### Important Ruby Objects\n- Foo\n\n## Next Steps\n1. n"
    assert rewrite_files(summary, details) == ("## Goal\n- g\n\n## Files & Code\n### Read\n- a.py\n- old.py\n\n"
                                               "### Modified\n- b.py\n- m.py\n\n### Important Ruby Objects\n- Foo\n\n"
                                               "## Next Steps\n1. n")
    assert rewrite_files("## Goal\n- g", {"read_files": [], "modified_files": []}) == (
        "## Goal\n- g\n\n## Files & Code\n### Read\n- (none)\n\n### Modified\n- (none)")


def test_the_profile_follows_the_workspace(tmp_path):
    assert prompt.detect_profile(str(tmp_path)) is prompt.GENERIC
    for marker, profile in (("Gemfile", prompt.RUBY), ("pyproject.toml", prompt.PYTHON), ("go.mod", prompt.GO),
                            ("Cargo.toml", prompt.RUST), ("package.json", prompt.JAVASCRIPT)):
        ws = tmp_path / marker.replace(".", "_")
        ws.mkdir()
        (ws / marker).write_text("")
        assert prompt.detect_profile(str(ws)) is profile, marker
    (tmp_path / "package_json" / "tsconfig.json").write_text("{}")
    assert prompt.detect_profile(str(tmp_path / "package_json")) is prompt.TYPESCRIPT
    ruby = prompt.summary_request("[User]: x", prompt.RUBY)
    assert "\n## Ruby Project Context\n- Ruby version: " in ruby and "\n### Important Ruby Objects\n" in ruby
    assert "bundle exec rspec" in ruby
    python = prompt.summary_request("[User]: x", prompt.PYTHON, previous="old summary", focus="tests")
    assert python.startswith("<previous-summary>\nold summary\n</previous-summary>\n\n<conversation>\n")
    assert "\n## Python Project Context\n- Python version: " in python and "Additional focus: tests" in python
    assert "## Ruby-Specific Context for Suffix" in prompt.split_request("x", prompt.RUBY)
    assert "## Go-Specific Context for Suffix" in prompt.split_request("x", prompt.GO)


class _Session:
    id = "s1"

    def __init__(self):
        self.locks = 0

    @property
    def shared(self):
        return self

    @contextlib.contextmanager
    def turn_lock(self):
        self.locks += 1
        yield self

    def sync(self):
        pass


def test_a_compaction_holds_the_lane_turns_queue_behind_it():
    jobs, ran = [], []
    manager = TurnManager(submit=lambda job: jobs.append(job) or True, publish=lambda event: None,
                          make_room=lambda: None, execute=lambda turn, session: ran.append(turn.input),
                          steering_supported=lambda: False)
    session = _Session()
    token = CancelToken()
    with manager.exclusive(session, token):
        assert manager.compacting(session) and session.locks == 1
        with pytest.raises(TurnInProgress):
            with manager.exclusive(session, CancelToken()):
                pass
        turn = manager.start(session, "waits", [])
        assert turn.status == "queued" and jobs == []  # nothing runs while the compaction holds the lane
    assert not manager.compacting(session) and len(jobs) == 1
    jobs.pop()()
    assert ran == ["waits"] and turn.status == "completed" and session.locks == 1  # the lane kept the lock

    running = threading.Event()
    release = threading.Event()

    def slow(turn, session):
        running.set()
        release.wait(5)

    manager2 = TurnManager(submit=lambda job: threading.Thread(target=job, daemon=True).start() or True,
                           publish=lambda event: None, make_room=lambda: None, execute=slow,
                           steering_supported=lambda: False)
    other = _Session()
    manager2.start(other, "busy", [])
    assert running.wait(5)
    with pytest.raises(TurnInProgress):
        with manager2.exclusive(other, CancelToken()):
            pass
    release.set()
    with manager.exclusive(session, token):
        manager.shutdown()
        assert token.cancelled  # shutdown stops a running compaction's model call


def test_the_summarizer_prompt_fits_the_window():
    from kward.compaction.run import prompt_budget

    messages = [user(f"{i} " + "w" * 100) for i in range(200)]
    text = serialize(messages, 2_000)
    assert len(text) <= 2_000 + 100 and text.startswith("[... ") and "earlier messages left out" in text
    assert text.endswith("[User]: 199 " + "w" * 100)
    assert serialize(messages, 10**9) == serialize(messages)
    assert prompt_budget(None, 16_384) is None and prompt_budget(200_000, 16_384) == int(181_616 * 3.5)
    assert prompt_budget(20_000, 19_000) == 8_000


def test_a_sum_of_usages_is_estimated_when_any_part_is():
    from kward.model import Usage, usage_plus

    reported, counted = Usage(input_tokens=3), Usage(input_tokens=4, estimated=True)
    assert usage_plus(reported, counted).estimated is True and usage_plus(counted, reported).estimated is True
    assert usage_plus(reported, reported).estimated is False
    assert usage_plus(reported, counted).input_tokens == 7
