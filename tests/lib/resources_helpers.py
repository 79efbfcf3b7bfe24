"""Helpers for the tests of prompt templates, skills, plugins and AGENTS.md: writing them
into a config directory, and plugin sources the tests load (good ones and broken ones).

Plugins that must report to the test write JSON lines to a file the test names (the
`{out}` placeholder), since they run inside the `kward rpc` child.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any


def front(fields: dict[str, str]) -> str:
    if not fields:
        return ""
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in fields.items()) + "---\n"


def write_prompt(config_dir: Path, name: str, body: str, **fields: str) -> Path:
    path = config_dir / "prompts" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(front({k.replace("_", "-"): v for k, v in fields.items()}) + body, encoding="utf-8")
    return path


def write_skill(config_dir: Path, folder: str, body: str, **fields: str) -> Path:
    path = config_dir / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(front(fields) + body, encoding="utf-8")
    return path


def write_plugin(config_dir: Path, name: str, source: str, *, folder: bool = False, **fmt: Any) -> Path:
    path = config_dir / "plugins" / (f"{name}/plugin.py" if folder else f"{name}.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(source)
    for key, value in fmt.items():
        text = text.replace("{" + key + "}", str(value))
    path.write_text(text, encoding="utf-8")
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except FileNotFoundError:
        return []


#: /hi: says a line and returns text built from its context; /peek: what it sees of the session.
HELLO = '''
    def register(kward):
        @kward.command("hi", description="Say hi", argument_hint="[name]")
        def hi(args, ctx):
            ctx.say("Hello " + (args or "you"))
            return "from " + ctx.workspace_root

        @kward.command("peek", description="Describe the session")
        def peek(args, ctx):
            roles = [m["role"] for m in ctx.transcript]
            try:
                ctx.transcript[0]["role"] = "changed"
                frozen = False
            except (TypeError, IndexError):
                frozen = True
            return repr({"roles": roles, "frozen": frozen, "session": ctx.session_id, "path": ctx.session_path,
                         "name": ctx.session_name, "args": ctx.args})

        @kward.command("quiet")
        def quiet(args, ctx):
            return None
'''

#: /boom raises.
RAISING = '''
    def register(kward):
        @kward.command("boom", description="Always fails")
        def boom(args, ctx):
            raise ValueError("boom " + args)
'''

#: /block never returns; it appends {"started": args} to {out} first.
BLOCKING = '''
    import json, threading

    def register(kward):
        @kward.command("block", description="Never returns")
        def block(args, ctx):
            with open("{out}", "a") as f:
                f.write(json.dumps({"started": args}) + "\\n")
            threading.Event().wait()
'''

#: Broken at load in three ways.
SYNTAX_ERROR = "def register(kward:\n    pass\n"
RAISES_AT_LOAD = "raise RuntimeError('no luck at import')\n"
NO_REGISTER = "X = 1\n"
BLOCKS_AT_LOAD = "import threading\nthreading.Event().wait()\n"
