"""config `hooks`: what `hooks.<event>` accepts, and how what it refuses is reported (a
problem of its key, named with the entry and the reason; config/update refuses the same)."""

from __future__ import annotations

import pytest

from kward.config import rules
from kward.config.settings import resolve_settings
from kward.config.store import validate_values
from kward.errors import ConfigError, InvalidParams


def test_hooks_are_read_in_order_with_their_defaults():
    s = resolve_settings({"hooks": {"beforeTool": [{"command": "a", "tool": "bash", "commandPattern": "rm"},
                                                   {"command": "b", "timeoutSeconds": 2}],
                                    "turnEnd": [{"command": "c"}]}}, {})
    first, second = s.hooks.beforeTool
    assert (first.source, first.command, first.tool, first.command_pattern, first.timeout) == \
        ("hooks.beforeTool[0]", "a", "bash", "rm", 60.0)
    assert (second.source, second.tool, second.timeout) == ("hooks.beforeTool[1]", None, 2.0)
    assert s.hooks.of("turnEnd")[0].command == "c" and s.hooks.total == 3
    assert s.problems == {} and s.warnings == ()


@pytest.mark.parametrize("value, says", [
    ({"command": "x"}, "must be a list of at most 32 hooks"),
    ([{"command": "x"}] * 33, "must be a list of at most 32 hooks"),
    (["echo hi"], "[0] is not an object with a command"),
    ([{"command": "  "}], "[0].command is not a shell command line"),
    ([{"command": "x", "tool": "("}], "[0].tool is not a valid regular expression"),
    ([{"command": "x", "commandPattern": ""}], "[0].commandPattern is not a regular expression of 1 to"),
    ([{"command": "x", "timeoutSeconds": 0}], "[0].timeoutSeconds is not a number of seconds from 0.05 to 3600"),
    ([{"command": "x", "timeoutSeconds": True}], "[0].timeoutSeconds is not a number"),
    ([{"command": "x"}, {"command": "y", "matcher": "z"}], "[1] has matcher, which beforeTool hooks do not take"),
])
def test_a_hook_list_that_cannot_be_used_is_a_problem_naming_the_entry(value, says):
    s = resolve_settings({"hooks": {"beforeTool": value}}, {})
    assert s.hooks.beforeTool == ()
    with pytest.raises(ConfigError) as info:
        s.check("hooks.beforeTool")
    assert says in info.value.message and info.value.data == {"key": "hooks.beforeTool"}
    with pytest.raises(InvalidParams) as refused:
        validate_values({"hooks": {"beforeTool": value}})
    assert says in refused.value.message


def test_matchers_belong_to_the_tool_events_only():
    for event in rules.HOOK_EVENTS:
        s = resolve_settings({"hooks": {event: [{"command": "x", "tool": "bash"}]}}, {})
        assert (f"hooks.{event}" in s.problems) == (event not in rules.TOOL_HOOK_EVENTS)


def test_a_key_that_is_no_event_is_ignored_with_a_warning():
    s = resolve_settings({"hooks": {"preToolUse": [{"command": "x"}]}}, {})
    assert s.hooks.total == 0 and s.problems == {}
    assert s.warnings == ("config.json: ignoring hooks.preToolUse: not a hook event (the events: beforeTool, "
                          "afterTool, userPromptSubmit, turnEnd, sessionStart)",)
