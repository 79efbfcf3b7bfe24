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


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
def test_man_page_lints_clean_and_documents_the_cli():
    warnings = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(MAN)], capture_output=True)
    assert warnings.stderr == b"" and warnings.stdout == b""
    if shutil.which("mandoc"):
        lint = subprocess.run(["mandoc", "-Tlint", str(MAN)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    text = man_text()
    words = set(re.findall(r"(?m)^  (\S+)", cli.HELP)) | set(re.findall(r"(-\w|--[\w-]+)", cli.HELP))
    assert words and [w for w in words if w.rstrip(",") not in text] == []
    assert f"kward {__version__}" in text


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
def test_every_environment_variable_the_code_reads_is_documented():
    names = set()
    for path in (REPO / "kward").rglob("*.py"):
        names |= set(re.findall(r"[\"'](KWARD_[A-Z_]+)[\"']", path.read_text()))
    names.discard("KWARD_LOGGING")  # a prefix named in the capabilities, not a variable
    text = man_text()
    assert names and sorted(n for n in names if n not in text) == []


def test_readme_test_command_is_what_ci_runs():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    blocks = re.findall(r"```(?:sh|bash)\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2
    test_block = blocks[1]
    assert "python3 -m pip install -e '.[test]'" in test_block and "python3 -m pytest -q" in test_block
    assert "python3 -m pip install -e '.[test]'" in ci and "python3 -m pytest -q" in ci
