"""Which shape each message of the protocol has (`kward.rpc.shapes`), and how stable it is.

- `METHODS`: every method a client calls: its params and result shapes (None: no params
  object is read / the result is null), by method name; `kward.rpc.method_table.METHODS`
  must have the same names (a test says so).
- `NOTIFICATIONS`: every notification the server sends, its params.
- `SERVER_REQUESTS`: every request the server sends a client, its params and the result
  the client answers with.
- `TURN_EVENTS` / `SESSION_EVENTS`: the payload of each `turn/event` / `session/event`
  type.
- the `data` of an error response (and of a failed turn's `error`): `ErrorData` of
  `kward.rpc.shapes.errors`.
- `INTERNAL`: messages that exist but are not part of the published protocol, and why.

Each namespace module (`kward.rpc.shapes.namespaces.MODULES`) declares the tables of its
names; they are merged here. A name's schema definitions are named after it (`kward.rpc.schema.def_name`):
``sessions/create`` has `SessionsCreateParams` and `SessionsCreateResult`, the
``toolResult`` event `TurnEventToolResultPayload`.
"""

from __future__ import annotations

from typing import Any

from kward.rpc.shapes.base import Entry


def _merged(*modules: Any) -> dict[str, dict[str, Entry]]:
    """Each table of the namespace modules (`METHODS`, `NOTIFICATIONS`, ...), merged; a
    name twice is a mistake."""
    tables: dict[str, dict[str, Entry]] = {name: {} for name in TABLES}
    for module in modules:
        for name in TABLES:
            for key, entry in getattr(module, name, {}).items():
                if key in tables[name]:
                    raise ValueError(f"{name} {key} is declared twice")
                tables[name][key] = entry
    return tables


TABLES = ("METHODS", "NOTIFICATIONS", "SERVER_REQUESTS", "TURN_EVENTS", "SESSION_EVENTS")


def _load() -> dict[str, dict[str, Entry]]:
    from kward.rpc.shapes import namespaces

    return _merged(*namespaces.MODULES)


_TABLES = _load()
METHODS: dict[str, Entry] = _TABLES["METHODS"]
NOTIFICATIONS: dict[str, Entry] = _TABLES["NOTIFICATIONS"]
SERVER_REQUESTS: dict[str, Entry] = _TABLES["SERVER_REQUESTS"]
TURN_EVENTS: dict[str, Entry] = _TABLES["TURN_EVENTS"]
SESSION_EVENTS: dict[str, Entry] = _TABLES["SESSION_EVENTS"]
#: Messages left out of the schema, and why.
INTERNAL: dict[str, str] = {}
