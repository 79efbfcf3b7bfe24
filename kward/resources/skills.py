"""Skills: `<config>/skills/<folder>/SKILL.md`, and the `read_skill` tool that reads them.

A skill's front matter gives `name` (default: the folder's name; it must match
`NAME_RE` and be at most `MAX_SKILL_NAME` characters) and `description`. Folders are read
in name order; a later skill with a name already taken is skipped with a warning, as is a
folder whose SKILL.md is missing, unreadable or larger than `MAX_SKILL_FILE`.

SKILL.md is one of kward's own files: it is read with `kward.fsutil.read_own` at discovery
and whenever it is read again (`skill_text`: `read_skill` of SKILL.md, a `/skill:<name>`
turn), so a symlink, a FIFO or another user's file in its place is refused every time. The
skill's folder may be a symlink: it is resolved once at discovery (`Skill.folder`).

`read_skill {name, path = "SKILL.md"}` reads one file of a skill's folder: `path` is
relative to the folder (an absolute path must lie inside it), walked confined
(`kward.confined`: no symlink leads out, even if the tree changes meanwhile), a regular
file of at most `MAX_SKILL_FILE` bytes, text only. The tool is offered only when skills
exist (`kward.resources.catalog`).

Pure functions over the filesystem: any thread; the handler runs on the turn's thread.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from kward.confined import Escape, open_below, split_below
from kward.errors import InputTooLarge
from kward.fsutil import read_fd, read_own
from kward.resources.prompts import Warning_
from kward.resources.system_prompt import capped
from kward.resources.text import NAME_RE, decode, one_line, split_front_matter
from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec

MAX_SKILL_FILE = 100_000
SKILL_FILE = "SKILL.md"
#: The longest skill name (the Agent Skills format's limit).
MAX_SKILL_NAME = 64


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: str  # real path of the skill's folder
    path: str  # its SKILL.md


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def discover_skills(directory: Path) -> tuple[list[Skill], list[Warning_]]:
    skills: list[Skill] = []
    warnings: list[Warning_] = []
    seen: set[str] = set()
    try:
        folders = sorted(e.name for e in os.scandir(directory) if not e.name.startswith(".") and _is_dir(e))
    except OSError:
        return skills, warnings
    for folder_name in folders:
        folder = directory / folder_name
        path = folder / SKILL_FILE

        def skip(why: str) -> None:
            warnings.append(Warning_("skill", str(path), f"Skill {folder_name} skipped: {why}"))

        try:
            data = read_own(path, MAX_SKILL_FILE)  # as `skill_text` reads it later
        except FileNotFoundError:
            skip(f"no {SKILL_FILE} in the folder")
            continue
        except OSError as exc:
            skip(f"{SKILL_FILE} {exc.strerror or exc}")
            continue
        fields, _ = split_front_matter(decode(data))
        name = fields.get("name", "").strip() or folder_name
        if len(name) > MAX_SKILL_NAME:
            skip(f"the name {name[:MAX_SKILL_NAME]!r}... is longer than {MAX_SKILL_NAME} characters "
                 f"(a skill name is at most {MAX_SKILL_NAME} characters)")
            continue
        if not NAME_RE.fullmatch(name):
            skip(f"the name {name!r} must start with a letter or digit and hold only letters, digits, '_' and '-'")
            continue
        if name in seen:
            skip(f"a skill named {name} is already defined")
            continue
        seen.add(name)
        skills.append(Skill(name=name, description=one_line(fields.get("description", "")),
                            folder=os.path.realpath(folder), path=str(path)))
    return skills, warnings


def skills_prompt(skills: list[Skill]) -> str | None:
    """The system prompt's part that lists the skills (None without skills), capped at
    32 KiB like the other parts (`system_prompt.capped`)."""
    if not skills:
        return None
    lines = ["Configured skills: instructions for particular kinds of tasks, kept in files. When a task "
             "matches a skill's description, use read_skill with the skill's name to read its SKILL.md "
             "before you start, and read_skill with a path for any other file of the skill it refers to.",
             "Available skills:"]
    lines += [f"- {s.name}: {s.description}" if s.description else f"- {s.name}" for s in skills]
    return capped("\n".join(lines))


def skill_text(skill: Skill) -> str:
    """The text of the skill's SKILL.md now (a file of kward's own: `kward.fsutil.read_own`,
    so a symlink in its place is refused as at discovery). OSError when it cannot be read;
    ValueError for a binary file."""
    data = read_own(os.path.join(skill.folder, SKILL_FILE), MAX_SKILL_FILE)
    if b"\0" in data:
        raise ValueError(f"binary file: {SKILL_FILE}")
    return decode(data)


def expand_skill(skill: Skill, arguments: str, limit: int | None = None) -> str:
    """What a `/skill:<name> arguments` turn sends the model: the skill's SKILL.md body
    (front matter left out) inside ``<skill name=... location=...>`` with the folder that
    its relative references start from, then the arguments after a blank line (none:
    nothing). Over `limit` characters: InputTooLarge, before the text is built."""
    _, body = split_front_matter(skill_text(skill))
    body, arguments = body.strip(), arguments.strip()
    location = html.escape(os.path.join(skill.folder, SKILL_FILE))  # a folder name may hold `"` or `<`
    head = (f'<skill name="{skill.name}" location="{location}">\n'
            f"References are relative to {skill.folder}.\n\n")
    tail = "\n</skill>"
    size = len(head) + len(body) + len(tail) + (len(arguments) + 2 if arguments else 0)
    if limit is not None and size > limit:
        raise InputTooLarge(size, limit, f"/skill:{skill.name}")
    return head + body + tail + (f"\n\n{arguments}" if arguments else "")


def read_skill_file(skill: Skill, path: str) -> str:
    """The text of `path` inside the skill's folder. Raises ValueError with the message the
    model sees (outside the folder, missing, not a file, too large, binary)."""
    root = os.path.normpath(skill.folder)
    parts = split_below(root, path)
    if parts is None or not parts:
        raise ValueError(f"path outside the skill folder: {path}" if parts is None else f"not a file: {path}")
    if parts == [SKILL_FILE]:  # read as at discovery: a symlink in its place is refused
        try:
            return skill_text(skill)
        except FileNotFoundError:
            raise ValueError(f"no such file in skill {skill.name}: {path}") from None
        except OSError as exc:
            raise ValueError(f"{path} {exc.strerror or exc}") from None
    try:
        node = open_below(root, parts)
    except Escape:
        raise ValueError(f"path outside the skill folder: {path}") from None
    except FileNotFoundError:
        raise ValueError(f"no such file in skill {skill.name}: {path}") from None
    except NotADirectoryError:
        raise ValueError(f"no such file in skill {skill.name}: {path}") from None
    with node:
        if not node.is_file or node.fd is None or node.st is None:  # is_file: both are set
            raise ValueError(f"not a file: {path}")
        if node.st.st_size > MAX_SKILL_FILE:
            raise ValueError(f"file too large: {path} ({node.st.st_size} bytes; the limit is {MAX_SKILL_FILE})")
        data = read_fd(node.fd, MAX_SKILL_FILE + 1)
    if len(data) > MAX_SKILL_FILE:
        raise ValueError(f"file too large: {path} (over {MAX_SKILL_FILE} bytes)")
    if b"\0" in data:
        raise ValueError(f"binary file: {path}")
    return decode(data)


def read_skill_spec(lookup: Callable[[], Mapping[str, Skill]]) -> ToolSpec:
    """The `read_skill` ToolSpec over the skills `lookup()` returns (by name)."""

    def handler(args: Args, ctx: ToolContext) -> ToolResult:
        name = args.string("name")
        path = args.string("path", required=False, default=SKILL_FILE) or SKILL_FILE
        skills = lookup()
        skill = skills.get(name or "")
        if skill is None:
            known = ", ".join(sorted(skills)) or "none"
            raise ToolError(f"unknown skill: {name} (available: {known})")
        try:
            return ToolResult.text(read_skill_file(skill, path))
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    return ToolSpec(
        name="read_skill",
        description="Read a configured skill's SKILL.md (or another file in the skill's folder, with path). "
                    "The system prompt lists the available skills.",
        properties={"name": {"type": "string", "description": "The skill's name, as listed."},
                    "path": {"type": "string",
                             "description": f"A file inside the skill's folder, relative to it (default {SKILL_FILE})."}},
        required=("name",), handler=handler, read_only=True)
