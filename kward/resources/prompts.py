"""Prompt templates: `<config>/prompts/<name>.md`, submitted as `/name args`.

A template's command is its file name without `.md`; it must match `NAME_RE`
(``[A-Za-z0-9][A-Za-z0-9_-]*``) and must not be a built-in command name (`RESERVED`).
Optional front matter gives `description` and `argument-hint`; the body (the rest,
stripped) is the prompt, with every `$ARGUMENTS` replaced by the text after the command.
Files are read in name order, once, when the catalog is loaded (the body is kept: no later
read); a bad name, a reserved name, an unreadable, empty or oversized file (over
`MAX_TEMPLATE_BYTES`) is skipped with a warning. A template is one of kward's own files
(`kward.fsutil.read_own`): a symlink, a FIFO or another user's file in its place is skipped
with a warning; a directory named x.md is no template and is passed over silently.
`PromptTemplate.expand` works out the expansion's length before building it and refuses
one over the input limit (InputTooLarge).

Pure functions over the filesystem: any thread.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kward.errors import InputTooLarge
from kward.fsutil import read_own
from kward.resources.text import NAME_RE, decode, one_line, split_front_matter

MAX_TEMPLATE_BYTES = 64 * 1024
PLACEHOLDER = "$ARGUMENTS"
#: A skill command's prefix: `/skill:<name> args` runs the skill <name>.
SKILL_PREFIX = "skill:"
_SLASH = re.compile(r"/(\S+)(?:\s+(.*))?", re.S)

#: Built-in command names no template or plugin command may take: the original's reserved
#: list and every command of the terminal's table (kward/terminal; a test keeps them in step).
RESERVED = frozenset({
    "exit", "quit", "new", "resume", "name", "clone", "tree", "copy", "export", "compact", "redraw", "settings",
    "login", "logout", "model", "openrouter", "catalog", "reasoning", "reload", "status", "stats", "memory",
    "help", "fork", "edit",
})


@dataclass(frozen=True)
class Warning_:
    """A resource that was skipped, and why (reported by resources/startup and logged)."""

    source: str  # "prompt", "skill", "plugin"
    path: str
    message: str


@dataclass(frozen=True)
class PromptTemplate:
    command: str  # without the slash
    description: str
    argument_hint: str
    path: str
    body: str

    def expand(self, arguments: str = "", limit: int | None = None) -> str:
        """The body with every `$ARGUMENTS` replaced by `arguments` (stripped). Its length
        is worked out first: over `limit` characters, InputTooLarge and nothing is built."""
        arguments = arguments.strip()
        size = len(self.body) + self.body.count(PLACEHOLDER) * (len(arguments) - len(PLACEHOLDER))
        if limit is not None and size > limit:
            raise InputTooLarge(size, limit, f"/{self.command}")
        return self.body.replace(PLACEHOLDER, arguments)


def discover_prompts(directory: Path, taken: set[str]) -> tuple[list[PromptTemplate], list[Warning_]]:
    """The templates of `directory` (missing: none) and the warnings of the skipped ones.
    `taken` holds names already in use (built-ins); accepted names are added to it."""
    templates: list[PromptTemplate] = []
    warnings: list[Warning_] = []
    try:
        names = sorted(e.name for e in os.scandir(directory)
                       if e.name.endswith(".md") and not e.is_dir(follow_symlinks=False))
    except OSError:
        return templates, warnings
    for file_name in names:
        path = directory / file_name
        command = file_name[:-3]

        def skip(why: str) -> None:
            warnings.append(Warning_("prompt", str(path), f"Prompt template {file_name} skipped: {why}"))

        if not NAME_RE.fullmatch(command):
            skip("the name must start with a letter or digit and hold only letters, digits, '_' and '-'")
            continue
        if command in RESERVED:
            skip(f"/{command} is a built-in command")
            continue
        if command in taken:
            skip(f"/{command} is already defined")
            continue
        try:
            data = read_own(path, MAX_TEMPLATE_BYTES)
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                skip(f"larger than {MAX_TEMPLATE_BYTES // 1024} KiB")
            elif exc.errno != errno.ENOENT:  # (gone since the listing: nothing to say)
                skip(f"the file {exc.strerror or exc}")
            continue
        fields, body = split_front_matter(decode(data))
        body = body.strip()
        if not body:
            skip("the template is empty")
            continue
        taken.add(command)
        templates.append(PromptTemplate(command=command, description=one_line(fields.get("description", "")),
                                        argument_hint=one_line(fields.get("argument-hint", "")),
                                        path=str(path), body=body))
    return templates, warnings


def parse_slash(text: str) -> tuple[str, str] | None:
    """(name, arguments) of input shaped like `/name args`; None for anything else (a
    path such as `/usr/bin`, a lone slash, text not starting with one)."""
    match = _SLASH.fullmatch(text)
    if match is None or not NAME_RE.fullmatch(match.group(1)):
        return None
    return match.group(1), (match.group(2) or "").strip()


def parse_skill(text: str) -> tuple[str, str] | None:
    """(skill name, arguments) of input shaped like `/skill:<name> args` (the name as
    typed: any name, to be looked up); None otherwise."""
    match = _SLASH.fullmatch(text)
    if match is None or not match.group(1).startswith(SKILL_PREFIX):
        return None
    return match.group(1)[len(SKILL_PREFIX):], (match.group(2) or "").strip()
