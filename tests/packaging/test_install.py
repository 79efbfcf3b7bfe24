"""What users run, not the checkout: the wheel pip builds, installed into a fresh virtual
environment and used from a directory outside the checkout; and the sdist's contents.

The wheel is built from a copy of the working tree (so the checkout gets no `build/` or
`*.egg-info`) with the same `pip wheel` a `pip install .` runs. The virtual environment is
made without pip and without the system site-packages (which hold the editable install of
this checkout: its import hook would hide a subpackage missing from the wheel); kward's two
runtime dependencies are borrowed from the running interpreter through a `.pth` line, so no
test reaches a package index for them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kward import __version__
from lib.paths import REPO
from lib.rpc_client import RpcClient, kward_command, kward_env

IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".venv", "*.pyz")

pytestmark = pytest.mark.slow


def _run(argv, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _site_dir(module: str) -> str:
    """The sys.path entry the running interpreter imports `module` from."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not installed"
    return str(Path(spec.origin).parent.parent)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """Build the wheel and the sdist once from a copy of the working tree."""
    root = tmp_path_factory.mktemp("install")
    src, sdist_src = root / "src", root / "sdist-src"
    shutil.copytree(REPO, src, ignore=IGNORE)
    shutil.copytree(REPO, sdist_src, ignore=IGNORE)  # each build writes its egg-info into its tree
    out = root / "dist"
    out.mkdir()
    # the two builds at once, from copies of their own
    sdist_build = subprocess.Popen(
        [sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"],
        cwd=sdist_src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
              "-w", str(out), str(src)])
        output, _ = sdist_build.communicate(timeout=300)
    finally:
        if sdist_build.poll() is None:
            sdist_build.kill()
            sdist_build.wait()
    assert sdist_build.returncode == 0, f"build_sdist failed ({sdist_build.returncode}):\n{output}"
    (wheel,) = out.glob("kward-*.whl")
    (sdist,) = out.glob("kward-*.tar.gz")
    return {"root": root, "wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def venv(dist) -> Path:
    """A fresh virtual environment with the wheel installed and kward's dependencies borrowed."""
    env_dir = dist["root"] / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    python = env_dir / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", "-q", str(dist["wheel"])])
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    deps = sorted({_site_dir("requests"), _site_dir("keyring")})
    Path(purelib, "_kward_test_deps.pth").write_text("\n".join(deps) + "\n")
    return env_dir


def _outside_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment and a working directory that know nothing of the checkout."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = kward_env(home)
    env.pop("PYTHONPATH", None)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    return env, elsewhere


def test_the_wheel_holds_every_module_of_the_source_tree_and_the_man_page(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    source = {p.relative_to(REPO).as_posix() for p in (REPO / "kward").rglob("*.py")}
    assert source and sorted(source - names) == []
    data = {p.relative_to(REPO).as_posix() for p in (REPO / "kward").rglob("*.md")}
    assert "kward/resources/base_prompt.md" in data and sorted(data - names) == []
    assert "kward-%s.data/data/share/man/man1/kward.1" % __version__ in names
    metadata = zipfile.ZipFile(dist["wheel"]).read(f"kward-{__version__}.dist-info/METADATA").decode()
    requires = sorted(line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:"))
    assert [r for r in requires if "extra ==" not in r] == ["keyring", "requests"]


def test_the_sdist_carries_docs_man_tests_tools_and_license(dist):
    with tarfile.open(dist["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    wanted = {"LICENSE", "README.md", "setup.cfg", "pyproject.toml", "docs/protocol.md", "man/kward.1",
              "tests/conftest.py", "tests/lib/rpc_client.py", "tests/packaging/test_install.py", "tools/demo.py",
              "tools/bench.py", "kward/rpc/server.py", "kward/rpc/methods/sessions.py"}
    assert sorted(wanted - names) == []
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_installed_kward_runs_from_outside_the_checkout(venv, tmp_path):
    env, elsewhere = _outside_env(tmp_path)
    kward = venv / "bin" / "kward"
    assert _run([str(kward), "--version"], cwd=elsewhere, env=env).stdout == f"kward {__version__}\n"
    code = ("import importlib, json, pkgutil, kward\n"
            "mods = [m.name for m in pkgutil.walk_packages(kward.__path__, 'kward.')]\n"
            "[importlib.import_module(m) for m in mods if m != 'kward.__main__']\n"
            "print(json.dumps({'file': kward.__file__, 'modules': mods}))\n")
    found = json.loads(_run([str(venv / "bin" / "python"), "-c", code], cwd=elsewhere, env=env).stdout)
    assert Path(found["file"]).resolve().is_relative_to(venv.resolve())
    assert not Path(found["file"]).resolve().is_relative_to(REPO)
    assert {"kward.rpc", "kward.rpc.server", "kward.rpc.methods.sessions", "kward.tools.search_worker"} <= set(
        found["modules"])
    schema = _run([str(kward), "rpc", "--print-schema"], cwd=elsewhere, env=env)  # the shapes are installed
    assert schema.stdout == (REPO / "docs" / "protocol.schema.json").read_text(encoding="utf-8")


def test_man_finds_the_installed_page(venv, tmp_path):
    page = venv / "share" / "man" / "man1" / "kward.1"
    assert page.read_bytes() == (REPO / "man" / "kward.1").read_bytes()
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    env, elsewhere = _outside_env(tmp_path)
    env.pop("MANPATH", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    where = subprocess.run(["man", "-w", "kward"], capture_output=True, text=True, cwd=elsewhere, env=env)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve() == page.resolve()


def test_installed_kward_rpc_handshake_and_scripted_turn(venv, tmp_path):
    env, elsewhere = _outside_env(tmp_path)
    env["KWARD_PROVIDER"] = "scripted"
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Widget\n\nA tiny widget library.\n")
    with RpcClient(tmp_path / "home", cwd=elsewhere, env=env, argv=kward_command(venv / "bin" / "kward")) as k:
        info = k.request("initialize")
        assert info["serverName"] == "kward" and info["serverVersion"] == __version__
        session = k.request("sessions/create", {"workspaceRoot": str(workspace)})
        turn = k.request("turns/start", {"sessionId": session["id"], "input": "What is this?"})
        done = k.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]
                                   and n["params"]["type"] == "turnFinished", timeout=30)
        assert done["params"]["payload"]["status"] == "completed", done
        answer = [n["params"]["payload"]["content"] for n in k.notifications
                  if n["method"] == "turn/event" and n["params"]["type"] == "answer"]
        assert answer and "Widget" in answer[0]
        assert k.protocol_errors == []
        assert k.close() == 0
    assert k.stderr == ""


def test_the_demo_runs_the_installed_kward_and_separates_reasoning_from_the_answer(venv, tmp_path):
    env, elsewhere = _outside_env(tmp_path)
    workspace = tmp_path / "project"
    for name in ("build", "dist", "widget.egg-info", "src"):
        (workspace / name).mkdir(parents=True)
    (workspace / "README.md").write_text("# Widget\n\nA tiny widget library.\n")
    proc = _run([sys.executable, str(REPO / "tools" / "demo.py"), "--workspace", str(workspace),
                 "--kward", str(venv / "bin" / "kward")], cwd=elsewhere, env=env)
    lines = proc.stdout.splitlines()
    assert any(line.startswith("session file ") and line.endswith(".jsonl") for line in lines)
    assert any(line.startswith("reasoning: ") for line in lines)
    answer = "\n".join(lines[next(i for i, line in enumerate(lines) if line.startswith("answer: The workspace")):])
    assert "src/" in answer and "build/" not in answer and "egg-info" not in answer and "dist/" not in answer
    assert lines[-1] == "[turnFinished: completed]"


FAKE_SERVER = r'''
import json, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
def send(obj):
    body = json.dumps(obj).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body); out.flush()
while True:
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        if line in (b"\r\n", b"\n"):
            break
        length = int(line.split(b":")[1])
    msg = json.loads(inp.read(length))
    result = {"initialize": {"serverName": "kward", "serverVersion": "0", "protocolVersion": 1},
              "sessions/create": {"id": "s", "workspaceRoot": "/w", "path": "/w/s.jsonl"},
              "turns/start": {"id": "t"}}[msg["method"]]
    send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    if msg["method"] == "turns/start":
        sys.exit(3)  # dies mid-turn
'''


def test_the_demo_says_so_when_the_server_dies_mid_turn(tmp_path):
    server = tmp_path / "fake_kward.py"
    server.write_text(FAKE_SERVER)
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "demo.py"), "--workspace", str(tmp_path),
                           "--kward", f"{sys.executable} {server}"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "exited with status 3 before the turn finished" in proc.stderr
