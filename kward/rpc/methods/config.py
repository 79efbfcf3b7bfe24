"""config/read, config/update."""

from __future__ import annotations

from kward.redact import redact
from kward.rpc.registry import Call, Unredacted


def read(call: Call) -> dict | Unredacted:
    redacted = call.params.bool("redacted", True)
    result = {"path": str(call.app.config.path), "config": call.app.config.load()}
    return redact(result) if redacted else Unredacted(result)


def update(call: Call) -> dict:
    values = call.params.obj("values", required=True)
    config = call.app.config.update(values)
    return redact({"path": str(call.app.config.path), "config": config})
