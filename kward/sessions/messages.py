"""Helpers over the conversation of a session (typed messages, `kward.model`): roles, ids
and the texts forks and memory read (entry ids and the live list after a compaction are
`kward.sessions.entries`'; the texts a listing shows, read from records,
`kward.sessions.format`'s).

Pure functions: safe from any thread. Nothing here changes a message.
"""

from __future__ import annotations

from kward.model import (
    Content,
    Message,
    OtherPart,
    TextPart,
    message_id,
)


def role_of(message: Message) -> str:
    return message.role


def content_text(content: Content, joiner: str = " ") -> str:
    """The text of a message's content: the string, or the text of each part that has one."""
    if isinstance(content, str):
        return content
    texts = (p.text for p in content if isinstance(p, (TextPart, OtherPart)))
    return joiner.join(text for text in texts if text is not None)


def full_text(message: Message) -> str:
    """A user message's whole text (parts joined by newlines, stripped): for fork."""
    return content_text(getattr(message, "content", ""), "\n").strip()


def message_ident(message: Message) -> object:
    return message_id(message)
