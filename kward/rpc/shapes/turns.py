"""turns/start, turns/cancel, turns/status, turns/events and the turn object they answer
(docs/protocol.md "Turns")."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from kward.agent.attachments import MAX_ATTACHMENTS
from kward.limits import MAX_IMAGE_BYTES
from kward.rpc.shapes.base import ADDITION, AN_ADDITION, Doc, Entry, Length, Range, shape
from kward.rpc.shapes.envelopes import TurnEvent
from kward.rpc.shapes.events import TurnError
from kward.rpc.shapes.sessions import Session, SessionIdParams


class _TurnRequired(TypedDict):
    id: str
    sessionId: Annotated[str, Doc("the RPC session id the turn was started through")]
    status: Literal["queued", "running", "completed", "failed", "canceled"]
    cancelRequested: Annotated[bool, Doc("turns/cancel was called")]
    createdAt: Annotated[str, Doc("ISO 8601, UTC, with milliseconds")]


class Turn(_TurnRequired, total=False):
    """The turn object (a turn: one user input worked through by the model)."""

    startedAt: Annotated[str, Doc("when it started running")]
    finishedAt: Annotated[str, Doc("when it finished")]
    error: Annotated[TurnError, Doc("for a failed turn: the error event's payload")]


_Size = Annotated[int | None, Range(minimum=0, maximum=MAX_IMAGE_BYTES)]


class _ImageAttachmentRequired(TypedDict):
    type: Literal["image"]
    data: Annotated[str, Length(minimum=1), Doc("raw base64, no data: prefix (at most 10 MiB decoded)")]


class ImageAttachment(_ImageAttachmentRequired, total=False):
    """An image sent with the input. The MIME type (image/png, image/jpeg, image/gif or
    image/webp, in any case) is required, under one of mimeType, mime_type, media_type."""

    mimeType: str | None
    mime_type: str | None
    media_type: str | None
    name: Annotated[str | None, Doc("shown as the image's alt")]
    sizeBytes: Annotated[_Size, Doc("the declared size; checked against the limit")]
    size_bytes: Annotated[_Size, Doc("sizeBytes, as another writer may spell it")]


class _TurnsStartRequired(TypedDict):
    sessionId: str
    input: Annotated[str, Doc("the user's text: at most capabilities.rpc.inputLimits.maxChars characters; "
                              "/name args runs a prompt template or plugin command, /skill:<name> args a skill")]


class TurnsStartParams(_TurnsStartRequired, total=False):
    streamingBehavior: Annotated[Literal["newTurn", "followUp", "steer"] | None,
                                 Doc("default newTurn; steer while a turn runs when the provider steers")]
    attachments: Annotated[list[ImageAttachment] | None, Length(maximum=MAX_ATTACHMENTS)]


class TurnsCancelParams(TypedDict):
    turnId: str


class TurnsStatusParams(TypedDict):
    turnId: str


class _TurnsEventsRequired(TypedDict):
    turnId: str


class TurnsEventsParams(_TurnsEventsRequired, total=False):
    afterSequence: Annotated[int | None, Range(minimum=0), Doc("only events with a larger sequence (default 0)")]


class TurnsEventsResult(TypedDict):
    turn: Turn
    events: Annotated[list[TurnEvent], Doc("exactly what the turn/event notifications carried, in order")]
    truncated: Annotated[bool, AN_ADDITION, Doc("events after afterSequence were dropped from the buffer")]
    firstSequence: Annotated[int, AN_ADDITION, Range(minimum=1),
                             Doc("the first sequence the buffer still holds (the next to come if it holds none)")]


# --- sessions/attach, sessions/detach: here, beside the turns the attach result lists ---------


class AttachedTurn(Turn):
    """A turn of the attached session that turns/events can still replay."""

    lastSequence: Annotated[int, Doc("the sequence of its last event so far (0: none yet)")]


@shape(stability=ADDITION)
class SessionsAttachResult(TypedDict):
    session: Session
    turns: Annotated[list[AttachedTurn], Doc("its running turn and the recent ones, oldest first")]


@shape(stability=ADDITION)
class SessionsDetachResult(TypedDict):
    detached: Annotated[bool, Doc("false: this connection was not attached (on stdio: never is, it hears "
                                  "every session)")]


METHODS: dict[str, Entry] = {
    "turns/start": Entry(TurnsStartParams, Turn),
    "turns/cancel": Entry(TurnsCancelParams, Turn),
    "turns/status": Entry(TurnsStatusParams, Turn),
    "turns/events": Entry(TurnsEventsParams, TurnsEventsResult),
    "sessions/attach": Entry(SessionIdParams, SessionsAttachResult, ADDITION),
    "sessions/detach": Entry(SessionIdParams, SessionsDetachResult, ADDITION),
}
