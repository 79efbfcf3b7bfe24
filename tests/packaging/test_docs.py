"""Docs are checked against the code: methods, params, events, codes, reasons, flags, env
vars, the man page, and that docs/protocol.md renders and stands alone.

Everything the protocol doc must list is derived from the code (the method table, the
handlers' param accessors, the capabilities, the emitted event types, kward.errors), so a
method, param, event or reason added later fails here until it is documented, and one
removed fails until its documentation goes too.
"""

import ast
import inspect
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from kward import __version__, cli, errors
from kward.agent.eventlog import EVENT_TYPES
from kward.config import rules
from kward.errors import REASONS
from kward.rpc import capabilities, redaction
from kward.rpc.method_table import METHODS, default_table
from lib.paths import REPO

MAN = REPO / "man" / "kward.1"
DOCS = REPO / "docs"
PROTOCOL = DOCS / "protocol.md"


def man_text() -> str:
    out = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=300n", "-rHY=0", str(MAN)],
                         capture_output=True, check=True).stdout.decode()
    return out.replace("\u2010", "-").replace("\u2212", "-")


# --- a small Markdown reader: headings, sections and tables outside code fences --------

@dataclass
class Heading:
    line: int  # index into the document's lines
    level: int
    title: str


@dataclass
class Table:
    line: int  # index of the header row
    rows: list[list[str]]  # header first, delimiter row left out

    @property
    def header(self) -> list[str]:
        return self.rows[0]

    @property
    def body(self) -> list[list[str]]:
        return self.rows[1:]

    def column(self, index: int) -> list[str]:
        return [row[index] for row in self.body]


class Doc:
    def __init__(self, path: Path):
        self.path = path
        self.text = path.read_text()
        self.lines = self.text.split("\n")
        self.in_fence = []
        fence = False
        for line in self.lines:
            if line.startswith("```"):
                self.in_fence.append(True)
                fence = not fence
                continue
            self.in_fence.append(fence)
        self.fences_closed = not fence
        self.headings = [Heading(i, len(m.group(1)), m.group(2).strip())
                         for i, line in enumerate(self.lines) if not self.in_fence[i]
                         for m in [re.match(r"^(#{1,6}) (.+)$", line)] if m]

    def table_blocks(self, start: int = 0, end: int | None = None) -> list[tuple[int, list[str]]]:
        """Runs of consecutive lines starting with `|` (outside fences)."""
        blocks, current, first = [], [], 0
        for i in range(start, len(self.lines) if end is None else end):
            line = self.lines[i]
            if line.startswith("|") and not self.in_fence[i]:
                if not current:
                    first = i
                current.append(line)
            elif current:
                blocks.append((first, current))
                current = []
        if current:
            blocks.append((first, current))
        return blocks

    def tables(self, start: int = 0, end: int | None = None) -> list[Table]:
        return [Table(first, [cells(r) for r in rows[:1] + rows[2:]]) for first, rows in self.table_blocks(start, end)]

    def section(self, title: str, level: int) -> tuple[int, int]:
        """Line range of the section under the heading `title` (level `level`)."""
        found = [h for h in self.headings if h.level == level and h.title == title]
        assert len(found) == 1, f"{self.path.name}: expected one heading {'#' * level} {title}, found {len(found)}"
        start = found[0].line
        later = [h.line for h in self.headings if h.line > start and h.level <= level]
        return start, later[0] if later else len(self.lines)

    def table_in(self, title: str, level: int, first_header: str) -> Table:
        start, end = self.section(title, level)
        found = [t for t in self.tables(start, end) if t.header and t.header[0] == first_header]
        assert found, f"{self.path.name}: no table headed {first_header!r} under {title!r}"
        return found[0]

    def slugs(self) -> set[str]:
        seen: dict[str, int] = {}
        out = set()
        for h in self.headings:
            base = re.sub(r"[^\w\- ]", "", h.title.strip().lower()).replace(" ", "-")
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        return out


def cells(row: str) -> list[str]:
    """The cells of a table row, split on unescaped pipes (as GitHub does, code spans too)."""
    parts = re.split(r"(?<!\\)\|", row.strip())
    return [p.strip() for p in parts[1:-1]]


def code_names(cell: str) -> list[str]:
    """The backticked names in a cell."""
    return re.findall(r"`([^`]+)`", cell)


def first_name(cell: str) -> str:
    names = code_names(cell)
    assert names, f"no backticked name in {cell!r}"
    return names[0]


@pytest.fixture(scope="module")
def doc() -> Doc:
    return Doc(PROTOCOL)


# --- what the code says -------------------------------------------------------------------

ACCESSORS = {"text": "string", "flag": "boolean", "integer": "integer", "number": "number", "mapping": "object",
             "array": "array", "choice": "string"}


@dataclass
class Param:
    name: str
    type: str
    required: bool = False
    default: object = None


def _on_params(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("p", "params")) or \
        (isinstance(node, ast.Attribute) and node.attr == "params")


def code_params(method: str) -> dict[str, Param]:
    """The params a method's handler reads: `call.params.<accessor>("name", ...)` calls
    (and `"name" in p.raw` tests), with type, required and literal default."""
    tree = ast.parse(inspect.getsource(default_table().handler(method)).strip())
    found: dict[str, Param] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ACCESSORS \
                and _on_params(node.func.value) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            name, kind = node.args[0].value, node.func.attr
            param = found.setdefault(name, Param(name, ACCESSORS[kind]))
            if param.type == "value":  # seen first in a `"name" in p.raw` test
                param.type = ACCESSORS[kind]
            keywords = {k.arg: k.value for k in node.keywords}
            if isinstance(keywords.get("required"), ast.Constant) and keywords["required"].value is True:
                param.required = True
            position = 2 if kind == "choice" else 1
            default = keywords.get("default", node.args[position] if len(node.args) > position else None)
            if default is not None:
                try:
                    param.default = ast.literal_eval(default)
                except ValueError:
                    pass
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                isinstance(node.left.value, str) and any(isinstance(c, ast.Attribute) and c.attr == "raw"
                                                         for c in node.comparators):
            found.setdefault(node.left.value, Param(node.left.value, "value"))
    return found


def reserved_methods() -> set[str]:
    """Method names the capabilities reserve for groups not built yet."""
    names: set[str] = set()
    for attr, value in vars(capabilities).items():
        if attr.endswith("_METHODS"):
            names |= set(value)

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if key in ("method", "runMethod") and isinstance(sub, str):
                    names.add(sub)
                walk(sub)
        elif isinstance(value, list):
            for sub in value:
                walk(sub)

    walk(capabilities.build(METHODS))
    return names - set(METHODS)


def kward_sources() -> list[Path]:
    return sorted((REPO / "kward").rglob("*.py"))


def sent_notifications() -> set[str]:
    """Notification methods the server sends (`notify("ns/name", ...)` in the code)."""
    found: set[str] = set()
    for path in kward_sources():
        if path.name != "client.py":  # the client's own notifications go the other way
            found |= set(re.findall(r"\bnotify\(\s*\"([\w]+/[\w/]+)\"", path.read_text()))
    return found


def reserved_notifications() -> set[str]:
    names: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if key == "notification" and isinstance(sub, str):
                    names.add(sub)
                walk(sub)

    walk(capabilities.build(METHODS))
    return names - sent_notifications()


def emitted_event_types() -> set[str]:
    found: set[str] = set()
    for path in kward_sources():
        found |= set(re.findall(r"\b_?emit\(\s*\"(\w+)\"", path.read_text()))
    return found


def error_codes() -> set[int]:
    return {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, int) and v < 0}


# --- the protocol doc against the code ----------------------------------------------------

def test_methods_table_lists_exactly_the_served_methods_with_how_they_run_and_their_params(doc):
    table = doc.table_in("Methods", 2, "method")
    assert table.header[:4] == ["method", "runs", "params", "result"]
    names = [first_name(c) for c in table.column(0)]
    assert sorted(names) == sorted(METHODS) and len(names) == len(set(names))
    for row in table.body:
        method = first_name(row[0])
        assert row[1] == ("slow" if METHODS[method].slow else "quick"), method
        params = code_params(method)
        listed = {name: bool(bracket) for bracket, name in re.findall(r"(\[)?`([^`]+)`", row[2])}
        assert set(listed) == set(params), method
        assert {n for n, optional in listed.items() if not optional} == \
            {n for n, p in params.items() if p.required}, f"{method}: required params not shown without []"


def test_every_method_has_a_section_documenting_each_param_it_reads(doc):
    headed = [m.group(1) for h in doc.headings if h.level == 3 for m in [re.fullmatch(r"`([^`]+)`", h.title)] if m]
    assert sorted(headed) == sorted(METHODS)
    for method in METHODS:
        start, end = doc.section(f"`{method}`", 3)
        params = code_params(method)
        tables = [t for t in doc.tables(start, end) if t.header and t.header[0] == "param"]
        if not params:
            assert not tables and "No params" in "\n".join(doc.lines[start:end]), method
            continue
        assert tables, f"{method}: no params table"
        table = tables[0]
        assert table.header == ["param", "type", "required", "default", "meaning"], method
        top: dict[str, list[str]] = {}
        for row in table.body:
            name = first_name(row[0])
            root = re.split(r"[.\[]", name)[0]
            assert root in params, f"{method}: documents {name}, which the handler does not read"
            if root == name:
                top[name] = row
        assert set(top) == set(params), f"{method}: params without a row: {set(params) - set(top)}"
        for name, param in params.items():
            _, kind, required, default, _ = top[name]
            if param.type != "value":
                assert kind.split()[0] == param.type, f"{method} {name}: type {kind!r}, code reads {param.type}"
            assert required == ("yes" if param.required else "no"), f"{method} {name}: required"
            if not param.required and param.default is not None:
                shown = {True: "true", False: "false"}.get(param.default, param.default) \
                    if isinstance(param.default, bool) else param.default
                literal = "{}" if param.default == {} else "[]" if param.default == [] else str(shown)
                assert f"`{literal}`" in default, f"{method} {name}: default {default!r}, code has {literal}"


def test_reserved_methods_are_listed_as_not_available_and_nothing_else(doc):
    reserved = reserved_methods()
    assert not reserved & set(METHODS)
    if not reserved:  # every method is built: the section says so and lists none
        assert "Every method kward knows of is served." in doc.text
        return
    table = doc.table_in("Not available yet", 2, "group")
    listed = [name for cell in table.column(1) for name in code_names(cell)]
    assert sorted(listed) == sorted(reserved)


def test_no_method_or_notification_is_named_that_does_not_exist(doc):
    known = set(METHODS) | reserved_methods() | sent_notifications() | reserved_notifications()
    known |= set(capabilities.build(METHODS)["security"]["serverRequests"])  # server-to-client requests
    named = {n for n in re.findall(r"`([a-z]+(?:/[A-Za-z]+)+)`", doc.text) if not n.startswith("image/")}
    assert sorted(named - known) == []


def test_notifications_table_lists_what_is_sent_and_what_is_reserved(doc):
    sent, reserved = sent_notifications(), reserved_notifications()
    assert {"turn/event", "ui/question"} <= sent
    table = doc.table_in("Notifications and events", 2, "notification")
    rows = {first_name(row[0]): row[1] for row in table.body}
    assert set(rows) == sent | reserved
    assert {n for n, flag in rows.items() if flag == "yes"} == sent


def test_every_event_type_the_code_emits_is_listed_and_documented(doc):
    from lib.turn_events import EVENT_TYPES as CHECKED_BY_TURN_TESTS

    assert set(EVENT_TYPES) == emitted_event_types()
    assert set(CHECKED_BY_TURN_TESTS) == set(EVENT_TYPES)
    assert redaction.CONTENT_EVENTS <= set(EVENT_TYPES)
    documented = [first_name(c) for c in doc.table_in("Event types", 3, "type").column(0)]
    assert sorted(documented) == sorted(EVENT_TYPES)


def test_every_error_code_and_reason_is_documented_and_no_other(doc):
    codes = [int(c) for c in doc.table_in("Codes", 3, "code").column(0)]
    assert sorted(codes) == sorted(error_codes())
    table = doc.table_in("Reasons", 3, "reason")
    reasons = [first_name(c) for c in table.column(0)]
    assert sorted(reasons) == sorted(REASONS) and len(reasons) == len(set(reasons))
    for cell in table.column(1):
        assert cell in ("failed turn", "none") or all(int(c) in error_codes() for c in re.findall(r"-\d+", cell)), cell


def test_every_known_config_key_is_documented(doc):
    table = doc.table_in("`config/update`", 3, "key")
    listed = [name for cell in table.column(0) for name in code_names(cell)]
    assert sorted(listed) == sorted({path.split('.')[0] for path in rules.KEYS})


def test_protocol_doc_stands_alone(doc):
    lowered = doc.text.lower()
    for banned in ("/work/", "../shared", "shared/", "spec/", "kward-rpc.md", "design.md", "original-behavior",
                   "wire notes", "the spec"):
        assert banned not in lowered, banned
    assert re.search(r"\bissues?\s*#?\d", lowered) is None


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.md")) + [REPO / "README.md"], ids=lambda p: p.name)
def test_links_point_inside_the_repository_or_to_public_urls(path):
    text = Doc(path)
    slugs = text.slugs()
    body = "\n".join(line for line, fenced in zip(text.lines, text.in_fence) if not fenced)
    body = re.sub(r"`[^`\n]*`", "", body)
    links = re.findall(r"\]\(([^)\s]+)\)", body) + re.findall(r"href=\"([^\"]+)\"", body)
    for target in links:
        if re.match(r"https?://", target):
            continue
        assert not re.match(r"\w+:", target), f"{path.name}: {target}"
        file, _, anchor = target.partition("#")
        if not file:
            assert anchor in slugs, f"{path.name}: no heading for #{anchor}"
            continue
        resolved = (path.parent / file).resolve()
        assert resolved.is_relative_to(REPO) and resolved.exists(), f"{path.name}: {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in Doc(resolved).slugs(), f"{path.name}: {target}"


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.md")) + [REPO / "README.md"], ids=lambda p: p.name)
def test_markdown_renders(path):
    text = Doc(path)
    assert text.fences_closed, f"{path.name}: a code fence is not closed"
    levels = [h.level for h in text.headings]
    assert levels and levels[0] == 1 and levels.count(1) == 1, f"{path.name}: one # title first"
    for h, previous in zip(text.headings[1:], levels):
        assert h.level <= previous + 1, f"{path.name}:{h.line + 1}: heading level jumps ({h.title})"
    for first, rows in text.table_blocks():
        where = f"{path.name}:{first + 1}"
        assert first > 0 and text.lines[first - 1].strip() == "", f"{where}: a table needs a blank line before it"
        assert len(rows) >= 2 and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", rows[1]), f"{where}: no delimiter row"
        width = len(cells(rows[0]))
        for n, row in enumerate(rows):
            assert row.rstrip().endswith("|"), f"{path.name}:{first + n + 1}: row does not end in |"
            assert len(cells(row)) == width, f"{path.name}:{first + n + 1}: {len(cells(row))} cells, header {width}"
            assert row.count("`") % 2 == 0, f"{path.name}:{first + n + 1}: unbalanced backticks"
        after = first + len(rows)
        nxt = next((i for i in range(after, len(text.lines)) if text.lines[i].strip()), None)
        if nxt is not None and nxt > after and text.lines[nxt].startswith("|"):  # a row after a blank line
            assert nxt + 1 < len(text.lines) and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", text.lines[nxt + 1]), \
                f"{path.name}:{nxt + 1}: a blank line splits a table"


# --- the man page, the README, CI ---------------------------------------------------------

needs_groff = pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "INTERACTIVE COMMANDS", "KEYS", "RPC MODE",
            "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO")


def man_sections() -> dict[str, str]:
    """The rendered page by section heading (the unindented lines between header and footer)."""
    lines = man_text().splitlines()
    sections: dict[str, list[str]] = {}
    current = None
    for line in lines[1:-1]:
        if line and not line[0].isspace():
            current = line.strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {name: "\n".join(body) for name, body in sections.items()}


def _tagged(section: str, word: str) -> bool:
    """`word` starts an entry (a tagged paragraph) of the rendered section, or is listed
    after a comma in such a tag (`OPENAI_MODEL, OPENROUTER_MODEL`)."""
    return re.search(rf"(?m)^ {{7}}(?:\S+, )*{re.escape(word)}(?=\s|,|$)", section) is not None


@needs_groff
def test_man_page_lints_clean_and_has_the_sections():
    warnings = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(MAN)], capture_output=True)
    assert warnings.stderr == b"" and warnings.stdout == b""
    if shutil.which("mandoc"):
        lint = subprocess.run(["mandoc", "-Tlint", str(MAN)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    assert list(man_sections()) == list(SECTIONS)
    assert f"kward {__version__}" in man_text()


@needs_groff
def test_every_command_option_and_interactive_command_is_in_the_man_page():
    from kward.terminal.commands import table

    sections = man_sections()
    assert [c for c in cli.COMMANDS if not _tagged(sections["COMMANDS"], c)] == []
    flags = [f for flags, _, _ in cli.OPTIONS for f in flags.split(", ")]
    assert "--working-directory" in flags and [f for f in flags if not _tagged(sections["OPTIONS"], f)] == []
    usages = [c.usage for c in table().values()]
    assert "/exit" in usages and "/resume [path]" in usages
    assert [u for u in usages if not _tagged(sections["INTERACTIVE COMMANDS"], u)] == []
    documented = set(re.findall(r"(?m)^ {7}(/[a-z]+)", sections["INTERACTIVE COMMANDS"]))
    assert documented == {f"/{name}" for name in table()}  # and nothing the table does not have


@needs_groff
def test_every_key_of_the_prompt_is_in_the_keys_section():
    from kward.terminal.commands import KEYS

    section = " ".join(man_sections()["KEYS"].split())
    names = [name.replace(" twice", "") for keys, _ in KEYS for name in keys.split(", ") if not name.startswith("/")]
    assert "Ctrl-X Ctrl-E" in names and [n for n in names if n not in section] == []


@needs_groff
def test_kward_help_and_the_man_page_agree():
    help_text = cli.help_text()
    words = set(re.findall(r"(?m)^  ([a-z/][\w/-]*)", help_text)) | set(re.findall(r"(?m)^  (--?[\w-]*)", help_text))
    text = man_text()
    assert len(words) > 20 and sorted(w for w in words if w not in text) == []


@needs_groff
def test_every_rpc_method_is_in_the_rpc_mode_section():
    section = man_sections()["RPC MODE"]
    assert "docs/protocol.md" in section
    assert [m for m in METHODS if not re.search(rf"(?<![\w/]){re.escape(m)}(?![\w/])", section)] == []


@needs_groff
def test_the_files_section_names_every_file_under_the_config_dir():
    section = man_sections()["FILES"]
    for name in ("~/.kward/config.json", "~/.kward/.config.lock", "~/.kward/auth.json", "~/.kward/AGENTS.md",
                 "~/.kward/history", "~/.kward/sessions/", "file.lock", "file.open", "~/.kward/logs/kward.log",
                 "~/.kward/cache/certifi-"):
        assert name in section, name


@needs_groff
def test_every_environment_variable_the_code_reads_is_documented():
    from kward.config import rules
    names = set(rules.ENV)
    for path in [*(REPO / "kward").rglob("*.py"), REPO / "tools" / "zipapp_main.py"]:
        code = path.read_text()
        names |= set(re.findall(r"[\"'](KWARD_[A-Z_]+)[\"']", code))
        names |= set(re.findall(r"(?:environ|env)(?:\.get\(|\[)\s*[\"']([A-Z][A-Z0-9_]+)[\"']", code))
    names |= {variable for _, variable, _ in cli.MODEL_PROVIDERS.values() if variable}
    names.discard("KWARD_LOGGING")  # a prefix named in the capabilities, not a variable
    section = man_sections()["ENVIRONMENT"]
    assert {"NO_COLOR", "KWARD_COLOR", "OPENAI_MODEL", "HOME"} <= names
    assert sorted(n for n in names if not _tagged(section, n)) == []


def test_readme_test_command_is_what_ci_runs():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    blocks = re.findall(r"```(?:sh|bash)\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2
    test_block = blocks[1]
    assert "python3 -m pip install -e '.[test]'" in test_block and "python3 -m pytest -q" in test_block
    assert "python3 -m pip install -e '.[test]'" in ci and "python3 -m pytest -q" in ci
