"""Params checked against the shapes before a handler runs (kward.rpc.paramcheck over the
generated kward/rpc/params_table.py): the table is what the shapes give (a stale one fails),
every served method is in it, every param a handler reads is one its shape declares, and the
check's answers name the param and its path in the words of kward.rpc.params."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

from kward.errors import InvalidParams
from kward.rpc import paramcheck
from kward.rpc.method_table import METHODS
from kward.rpc.params_table import DEFS, PARAMS
from kward.rpc.schema import params_table_source
from lib.paths import REPO

ACCESSORS = {"text", "flag", "integer", "number", "mapping", "array", "choice", "has"}


def test_the_params_table_is_what_the_shapes_give():
    assert (REPO / "kward" / "rpc" / "params_table.py").read_text(encoding="utf-8") == params_table_source(), (
        "kward/rpc/params_table.py is stale: run `python3 tools/gen_params_table.py`")


def test_every_served_method_has_its_params_checked():
    assert set(METHODS) - {"initialized"} <= set(PARAMS)  # (initialized is a notification: nothing read)


def _params_read(func) -> set[str]:
    """The literal names `func` asks `call.params` (or a name bound to it) for."""
    tree = ast.parse(inspect.getsource(func).lstrip() if not inspect.getsource(func).startswith(" ")
                     else "if 1:\n" + inspect.getsource(func))
    holders = {"call.params"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and ast.unparse(node.value) == "call.params":
            holders |= {ast.unparse(t) for t in node.targets}
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            owner = ast.unparse(node.func.value)
            if (node.func.attr in ACCESSORS and owner in holders) or \
                    (node.func.attr == "get" and owner in {h + ".raw" for h in holders}):
                read.add(node.args[0].value)
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and len(node.comparators) == 1 \
                and ast.unparse(node.comparators[0]) in {h + ".raw" for h in holders}:
            read.add(node.left.value)
    return read


def test_every_param_a_handler_reads_is_declared_by_its_shape():
    undeclared, looked_at = {}, 0
    for method, spec in METHODS.items():
        if not isinstance(spec.target, str) or method not in PARAMS:
            continue
        module, name = spec.target.rsplit(".", 1)
        read = _params_read(getattr(importlib.import_module(module), name))
        looked_at += len(read)
        spec = PARAMS[method]
        spec = DEFS[spec["$ref"].rsplit("/", 1)[1]] if "$ref" in spec else spec
        missing = read - set(spec.get("properties", {}))
        if missing:
            undeclared[method] = sorted(missing)
    assert undeclared == {}
    assert looked_at > 60  # (the walk sees the handlers' reads)


def test_a_handler_reading_an_undeclared_param_is_seen():
    def handler(call):
        p = call.params
        return p.text("sessionId", required=True), p.integer("nope"), "other" in p.raw

    assert _params_read(handler) == {"sessionId", "nope", "other"}


def refused(method: str, params: dict) -> tuple[str, str]:
    with pytest.raises(InvalidParams) as info:
        paramcheck.check(method, params)
    assert info.value.code == -32602
    return info.value.message, info.value.data["param"]


def test_answers_name_the_param_and_its_path():
    assert refused("turns/start", {"input": "x"}) == ("Invalid params: 'sessionId' is required", "sessionId")
    assert refused("turns/start", {"sessionId": None, "input": "x"})[1] == "sessionId"  # null is missing
    assert refused("turns/start", {"sessionId": 5, "input": "x"}) == (
        "Invalid params: 'sessionId' must be a string", "sessionId")
    assert refused("turns/start", {"sessionId": "s", "input": "x", "streamingBehavior": "later"}) == (
        "Invalid params: 'streamingBehavior' must be one of newTurn, followUp, steer", "streamingBehavior")
    message, where = refused("turns/start", {"sessionId": "s", "input": "x", "attachments": [{"type": "image"}]})
    assert (message, where) == ("Invalid params: 'attachments[0].data' is required", "attachments[0].data")
    assert refused("sessions/list", {"limit": 0}) == (
        "Invalid params: 'limit' must be an integer >= 1, <= 100000", "limit")
    assert refused("sessions/list", {"limit": True})[0] == "Invalid params: 'limit' must be an integer"
    assert refused("auth/loginWithOAuth", {"providerId": "p", "timeoutSeconds": 0}) == (
        "Invalid params: 'timeoutSeconds' must be a number more than 0 and at most 3600", "timeoutSeconds")
    assert refused("sessions/rename", {"sessionId": "s", "name": "x" * 10_001})[0] == (
        "Invalid params: 'name' must be at most 10000 characters")


def test_what_fits_passes_extra_params_and_nulls_included():
    paramcheck.check("turns/start", {"sessionId": "s", "input": "x", "streamingBehavior": None, "clientHint": [1]})
    paramcheck.check("sessions/list", {"limit": 3.0, "workspaceRoot": None})  # an integral number is an integer
    paramcheck.check("ui/answerQuestion", {"sessionId": "s", "questionRequestId": "q", "answers": None})
    paramcheck.check("plugin/ownMethod", {"anything": object()})  # no shape: not checked here
