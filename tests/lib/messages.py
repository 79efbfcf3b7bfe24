"""Typed messages (kward.model) from the record dicts tests write them as, and back: the
session codec in both directions (`kward.sessions.codec`)."""

from __future__ import annotations

import copy
from typing import Any, Iterable

from kward.model import Message
from kward.sessions.codec import decode, encode


def typed(record: dict[str, Any]) -> Message:
    """The typed message of a record's `message` object (a copy: decoding keeps it)."""
    return decode(copy.deepcopy(record))


def typed_all(records: Iterable[dict[str, Any]]) -> list[Message]:
    return [typed(r) for r in records]


def recorded(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The record objects of `messages` (as the session file holds them)."""
    return [encode(m) for m in messages]


def payload(handle: Any) -> dict[str, Any]:
    """The session payload of a SessionHandle now (as the protocol shows it)."""
    from kward.rpc.wire import sessions as wire

    return wire.session(handle.info())


def opened(handle: Any) -> dict[str, Any]:
    """The session payload a SessionHandle was opened with."""
    from kward.rpc.wire import sessions as wire

    return wire.session(handle.opened)
