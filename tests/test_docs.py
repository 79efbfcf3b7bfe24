"""Docs are checked against the code: methods, reasons, flags, env vars, the man page."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kward import __version__, cli
from kward.errors import REASONS
from kward.rpc.registry import METHODS

REPO = Path(__file__).resolve().parents[1]
MAN = REPO / "man" / "kward.1"


def man_text() -> str:
    out = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=300n", "-rHY=0", str(MAN)],
                         capture_output=True, check=True).stdout.decode()
    return out.replace("\u2010", "-").replace("\u2212", "-")


def test_every_method_and_reason_is_in_the_protocol_doc():
    doc = (REPO / "docs" / "protocol.md").read_text()
    assert [m for m in METHODS if f"`{m}`" not in doc] == []
    assert [r for r in REASONS if f"`{r}`" not in doc] == []


needs_groff = pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "INTERACTIVE COMMANDS", "RPC MODE",
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
    from kward import rules

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
