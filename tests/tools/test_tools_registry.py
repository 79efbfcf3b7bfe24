"""The registry: schemas, unknown tools, argument decoding errors, unexpected failures,
cancellation before a tool starts, and the result payload."""

import json

import pytest

from kward.errors import Canceled
from kward.tools.base import ToolResult, ToolSpec, is_error_text
from kward.tools.registry import DEFAULT_SPECS, ToolRegistry, default_registry
from lib.tools_helpers import call, ctx  # noqa: F401 (fixtures)

EXPECTED = ["list_directory", "read_file", "write_file", "edit_file", "run_shell_command", "search_files"]


def _check_object_schemas(schema, where):
    """Every object schema closes additionalProperties and requires only known keys."""
    if schema.get("type") == "object":
        assert schema.get("additionalProperties") is False, where
        props = schema.get("properties", {})
        assert set(schema.get("required", [])) <= set(props), where
        assert list(props) == sorted(props), where
        for key, sub in props.items():
            assert isinstance(sub.get("type"), str), f"{where}.{key}"
            _check_object_schemas(sub, f"{where}.{key}")
    if schema.get("type") == "array":
        _check_object_schemas(schema["items"], f"{where}[]")


def test_schemas_are_valid_function_envelopes():
    schemas = default_registry().schemas(True)
    assert [s["function"]["name"] for s in schemas] == EXPECTED + ["ask_user_question"]
    assert default_registry().names(False) == EXPECTED
    for schema in schemas:
        assert set(schema) == {"type", "function"} and schema["type"] == "function"
        fn = schema["function"]
        assert set(fn) == {"name", "description", "parameters"} and fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object" and params["required"] == sorted(params["required"])
        _check_object_schemas(params, fn["name"])
        json.dumps(schema)  # plain JSON


def test_unknown_tool(ctx):
    r = default_registry().run("frobnicate", "{}", ctx)
    assert (r.content, r.is_error) == ("Unknown tool: frobnicate", True)


def test_invalid_json_and_argument_types(ctx):
    reg = default_registry()
    r = reg.run("read_file", "{not json", ctx)
    assert r.is_error and r.content.startswith("Error: invalid JSON arguments for read_file: ")
    assert reg.run("read_file", "[1, 2]", ctx).content == "Error: arguments for read_file must be a JSON object"
    assert reg.run("read_file", "", ctx).content == "Error: path is required"
    deep = reg.run("read_file", "[" * 100_000, ctx)  # too deep for the decoder: still "invalid JSON"
    assert deep.is_error and deep.content.startswith("Error: invalid JSON arguments for read_file: ")
    assert call(ctx, "read_file", path=3).content == "Error: path must be a string"
    assert call(ctx, "read_file", path="a", offset="x").content == "Error: offset must be an integer"
    assert call(ctx, "read_file", path="a", limit=True).content == "Error: limit must be an integer"


def test_lenient_integers(ctx):
    (ctx.workspace_root / "a.txt").write_text("1\n2\n3")
    assert call(ctx, "read_file", path="a.txt", offset=2.0, limit="1").content == \
        "2\n\n[1 more lines in file. Use offset=3 to continue.]"


def test_dict_arguments_are_accepted(ctx):
    (ctx.workspace_root / "a.txt").write_text("hi")
    assert default_registry().run("read_file", {"path": "a.txt"}, ctx).content == "hi"


def test_unexpected_exception_becomes_error_result(ctx, caplog):
    def boom(args, ctx):
        raise RuntimeError("kaput")

    reg = ToolRegistry([ToolSpec("boom", "explodes", {}, (), boom)])
    r = reg.run("boom", "{}", ctx)
    assert (r.content, r.is_error) == ("Error: boom failed: RuntimeError: kaput", True)
    assert "tool boom failed" in caplog.text


def test_os_error_becomes_error_result(ctx):
    def denied(args, ctx):
        raise PermissionError(13, "Permission denied", "/x/y")

    r = ToolRegistry([ToolSpec("t", "d", {}, (), denied)]).run("t", "{}", ctx)
    assert r.content == "Error: Permission denied: /x/y"


def test_os_error_names_the_models_path_when_the_os_named_a_relative_one(ctx):
    def walked(args, ctx):  # a step relative to a directory descriptor, or a temporary name
        raise FileNotFoundError(2, "No such file or directory", ".x.txt.1234.tmp")

    reg = ToolRegistry([ToolSpec("t", "d", {}, (), walked)])
    assert reg.run("t", '{"path": "sub/x.txt"}', ctx).content == "Error: No such file or directory: sub/x.txt"
    assert reg.run("t", "{}", ctx).content == "Error: No such file or directory: .x.txt.1234.tmp"


def test_os_error_without_words_or_path(ctx):
    def bare(args, ctx):
        raise OSError("device went away")

    def nothing(args, ctx):
        raise BlockingIOError()

    reg = ToolRegistry([ToolSpec("bare", "d", {}, (), bare), ToolSpec("nothing", "d", {}, (), nothing)])
    assert reg.run("bare", "{}", ctx).content == "Error: device went away"
    assert reg.run("nothing", '{"path": "p"}', ctx).content == "Error: BlockingIOError: p"


def test_a_handler_returning_no_result_is_an_error_result(ctx, caplog):
    reg = ToolRegistry([ToolSpec("none", "d", {}, (), lambda args, ctx: None)])
    r = reg.run("none", "{}", ctx)
    assert r.is_error and r.content == "Error: none failed: TypeError: the handler returned NoneType, not a ToolResult"
    assert "tool none failed" in caplog.text


def test_cancelled_before_start_raises(ctx):
    ctx.cancel.cancel()
    with pytest.raises(Canceled):
        call(ctx, "list_directory", path=".")


def test_duplicate_names_rejected():
    with pytest.raises(ValueError):
        ToolRegistry([*DEFAULT_SPECS, DEFAULT_SPECS[0]])


def test_result_payload_and_error_rule():
    from kward.sessions.codec import tool_result_record  # the protocol's toolResult.result (kward.rpc.wire)

    assert tool_result_record(ToolResult.text("ok")) == {"content": "ok", "isError": False, "images": []}
    r = ToolResult.text("Edited a: replaced 1 block(s)\nd", diff="d", changed_files=["a"])
    assert tool_result_record(r) == {"content": r.content, "isError": False, "images": [], "diff": "d",
                                     "changedFiles": ["a"]}
    for text, err in (("Error: x", True), ("Declined: x", True), ("Cancelled.", True), ("Exit status: 1\n", False)):
        assert is_error_text(text) is err and ToolResult.text(text).is_error is err
