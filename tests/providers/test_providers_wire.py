"""What both wire formats share: usage parsing, tool fields, interrupted tool calls (kward/providers/wire_common.py)."""

from kward.providers import chat_wire, codex_wire, wire_common
from lib.session_records import recorded, typed_all


def test_complete_histories_are_passed_through_untouched():
    history = [{"role": "user", "content": "x"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
               {"role": "toolResult", "tool_call_id": "c1", "content": "ok"},
               {"role": "assistant", "content": "done"}]
    messages = typed_all(history)
    assert wire_common.with_interrupted_results(messages) is messages
    assert wire_common.with_interrupted_results([]) == []


def test_each_missing_result_follows_its_own_tool_calls():
    history = [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}, {"id": "b"}]},
               {"role": "tool", "tool_call_id": "b", "content": "B"},
               {"role": "assistant", "content": "then"}]
    messages = typed_all(history)
    fixed = recorded(wire_common.with_interrupted_results(messages))
    assert [(m["role"], m.get("tool_call_id"), m.get("name"), m.get("content")) for m in fixed] == [
        ("assistant", None, None, None), ("tool", "b", None, "B"),
        ("tool", "a", "f", wire_common.INTERRUPTED_RESULT), ("assistant", None, None, "then")]
    assert len(messages) == 3  # the stored conversation is not changed


def test_usage_of_both_formats_and_odd_values():
    codex = codex_wire.parse_usage({"input_tokens": 10, "output_tokens": 5, "input_tokens_details": {"cached_tokens": 4},
                                    "output_tokens_details": {"reasoning_tokens": 2}})
    assert (codex.input_tokens, codex.output_tokens, codex.cache_read_tokens, codex.reasoning_tokens,
            codex.total_tokens, codex.cost) == (10, 5, 4, 2, 15, None)
    chat = chat_wire.parse_usage({"prompt_tokens": True, "completion_tokens": 3, "prompt_tokens_details": [1],
                                  "cost": 0.5})
    assert (chat.input_tokens, chat.output_tokens, chat.cache_read_tokens, chat.total_tokens, chat.cost) == \
        (0, 3, 0, 3, 0.5)
    assert codex_wire.parse_usage(None) is None and chat_wire.parse_usage("x") is None


def test_tool_schemas_in_both_shapes():
    tool = {"type": "function", "function": {"name": "f", "description": "d"}}
    empty = {"type": "object", "properties": {}}
    assert codex_wire.build_tools([tool]) == [{"type": "function", "name": "f", "description": "d",
                                               "parameters": empty, "strict": False}]
    assert chat_wire.build_tools([tool]) == [{"type": "function", "function": {"name": "f", "description": "d",
                                                                                "parameters": empty}}]
