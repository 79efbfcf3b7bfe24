"""The `data` of an error response and of a failed turn's `error` (docs/protocol.md
"Errors")."""

from __future__ import annotations

from typing import Annotated, TypedDict

from kward.rpc.shapes.base import Doc, shape


class _ErrorDataRequired(TypedDict):
    reason: Annotated[str, Doc("why, in one word (docs/protocol.md \"Reasons\")")]


@shape(open=True)
class ErrorData(_ErrorDataRequired, total=False):
    """What an error carries besides its code and message: always `reason`; the keys that
    name what failed depend on it."""

    param: Annotated[str, Doc("the param that was refused (dotted inside an object)")]
    path: str
    key: Annotated[str, Doc("the config key whose value cannot be used")]
    provider: str
    sessionId: str
    turnId: str
    loginId: str
