"""Colours: whether a stream gets them, and the few styles kward uses.

The decision, in this order: `KWARD_COLOR=always|never` (`auto`, or unset, goes on),
`NO_COLOR` set and non-empty turns colours off, `FORCE_COLOR` set to anything but `0` or
`false` turns them on, `CLICOLOR=0` turns them off, and otherwise a stream gets colours
when it is a terminal (and `TERM` is not `dumb`). `is_utf8`: whether a stream's
characters can go beyond ASCII (bullets, bars, ellipses). Pure functions; any thread.
"""

from __future__ import annotations

import codecs
import os
from typing import Mapping, TextIO

COLOR_CHOICES = ("auto", "always", "never")

_CODES = {"dim": "2", "bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36", "magenta": "35",
          "italic": "3", "underline": "4", "strike": "9"}


class ColorSettingError(ValueError):
    """KWARD_COLOR holds a value that is not one of COLOR_CHOICES."""


def check_color_setting(env: Mapping[str, str] = os.environ) -> None:
    value = env.get("KWARD_COLOR", "").strip().lower()
    if value and value not in COLOR_CHOICES:
        raise ColorSettingError(f"KWARD_COLOR must be one of {', '.join(COLOR_CHOICES)}, not {env['KWARD_COLOR']!r}")


def isatty(stream: TextIO) -> bool:
    """Whether `stream` is a terminal (False for one without a usable `isatty`)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def is_utf8(stream: TextIO) -> bool:
    """Whether `stream` encodes UTF-8 (`utf-8-sig` too; not UTF-16 or UTF-32, whose bytes
    a terminal does not read as text)."""
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str):
        return False
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    except LookupError:
        return False


def wants_color(stream: TextIO, env: Mapping[str, str] = os.environ) -> bool:
    """Whether `stream` gets colours (see the module docstring for the order)."""
    setting = env.get("KWARD_COLOR", "").strip().lower()
    if setting == "always":
        return True
    if setting == "never":
        return False
    if env.get("NO_COLOR"):
        return False
    force = env.get("FORCE_COLOR")
    if force is not None and force.strip().lower() not in ("0", "false"):
        return True
    if env.get("CLICOLOR", "").strip() == "0":
        return False
    return isatty(stream) and env.get("TERM") != "dumb"


class Style:
    """Wraps text in ANSI styles when enabled; plain text otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def dim(self, text: str) -> str:
        return self(text, "dim")

    def bold(self, text: str) -> str:
        return self(text, "bold")

    def red(self, text: str) -> str:
        return self(text, "red")

    def green(self, text: str) -> str:
        return self(text, "green")

    def yellow(self, text: str) -> str:
        return self(text, "yellow")

    @classmethod
    def for_stream(cls, stream: TextIO, env: Mapping[str, str] = os.environ) -> Style:
        return cls(wants_color(stream, env))
