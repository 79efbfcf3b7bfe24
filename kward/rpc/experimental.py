"""What of the protocol is experimental: sent to, and served for, only a client that passed
``initialize {capabilities: {experimentalApi: true}}`` (docs/protocol.md "Experimental").

The stabilities are declared with the wire shapes (`kward.rpc.shapes`, ``EXPERIMENTAL``);
this is their index for the running server, kept here so that answering a message never
loads the shapes (tests/packaging/test_schema.py checks that the two agree).

- `METHODS`: refused with `ExperimentalApiRequired` (-32601, reason
  ``experimental_api_required``) for any other client, before anything runs;
- `FIELDS`: per notification method, the paths inside its params left out for any other
  client (`strip`).

Pure data and functions, any thread.
"""

from __future__ import annotations

from typing import Any, Final, Mapping

from kward.errors import MethodNotFound

METHODS: frozenset[str] = frozenset({"rpc/schema"})
FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {"hook/started": (("run", "exitStatus"),),
                                                  "hook/completed": (("run", "exitStatus"),)}
REASON: Final = "experimental_api_required"


class ExperimentalApiRequired(MethodNotFound):
    reason = REASON


def refusal(method: str) -> ExperimentalApiRequired:
    return ExperimentalApiRequired(
        f"{method} is experimental: pass capabilities.experimentalApi: true in initialize to use it",
        data={"method": method})


def strip(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """`params` of a `method` notification without its experimental fields (a copy where
    one was there; `params` itself when none was)."""
    for path in FIELDS.get(method, ()):
        params = _without(params, path)
    return params


def _without(value: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    head, rest = path[0], path[1:]
    if head not in value:
        return value
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    inner = value[head]
    if not isinstance(inner, Mapping):
        return value
    changed = _without(inner, rest)
    return value if changed is inner else {**value, head: changed}


def methods() -> list[str]:
    """The experimental methods, as the `rpc.experimentalApi` capability lists them."""
    return sorted(METHODS)


def fields() -> list[str]:
    """The experimental fields, as the `rpc.experimentalApi` capability lists them:
    ``<notification method> params.<path>``."""
    return sorted(f"{method} params.{'.'.join(path)}" for method, paths in FIELDS.items() for path in paths)
