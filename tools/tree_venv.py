"""A tree of this repository as a user installs it: a wheel built from the tree's sources,
installed into a fresh virtual environment of its own (the recipe of tests/packaging/test_install.py
and bench_startup.venv()).

- `export_tree(spec, dest)`: the sources of a commit (`git archive`, which changes
  nothing in the repository: no checkout, no worktree), or of the working tree as it is
  now (`WORKTREE` or `.`: copied without build output, caches and VCS data).
- `install(source, root)`: `pip wheel` of `source` into `root/dist`, a venv in
  `root/venv` made without pip and without the system site-packages, and the wheel
  installed into it by the running interpreter's pip (`--python`), which byte-compiles the
  package as any `pip install` does. kward's two dependencies, `requests` and `keyring`,
  are borrowed from the running interpreter through a `.pth` line, so no package index is
  needed. Modules the wheel leaves out (see `complete`) are copied in and reported.

Standard library only, and nothing of kward is imported: old trees build the same way.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORKTREE = ("WORKTREE", ".")
IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".venv", "*.pyz",
                                ".benchmarks")


def run(argv: list[str], **kw) -> str:
    """Run a command; its stdout, or RuntimeError with both streams when it fails."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def site_dir(module: str) -> str:
    """The site-packages directory the running interpreter imports `module` from."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not installed"
    return str(Path(spec.origin).parent.parent)


def resolve_commit(spec: str) -> str:
    """The full hash of a commit-ish of this repository (ValueError when unknown)."""
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"not a commit of {REPO}: {spec}")
    return proc.stdout.strip()


def export_tree(spec: str, dest: Path) -> Path:
    """The sources of `spec` (a commit-ish, or WORKTREE / '.') in the new directory `dest`."""
    if spec in WORKTREE:
        shutil.copytree(REPO, dest, ignore=IGNORE)
        return dest
    commit = resolve_commit(spec)
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", "--format=tar", commit], stdout=subprocess.PIPE)
    try:
        subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True, timeout=600)
    finally:
        archive.stdout.close()
        if archive.wait(600) != 0:
            raise RuntimeError(f"git archive {commit} failed")
    return dest


def install(source: Path, root: Path) -> dict[str, Any]:
    """Build `source` into a wheel and install it into a fresh venv under `root`;
    {"root", "python", "kward"} (the venv's interpreter and the installed console script).
    `pip wheel` builds inside `source` (build/, *.egg-info): give it a copy, not a checkout."""
    dist = root / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", str(dist),
         str(source)])
    (wheel,) = dist.glob("kward-*.whl")
    env_dir = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    python = env_dir / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
         "--disable-pip-version-check", "-q", str(wheel)])
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    deps = sorted({site_dir("requests"), site_dir("keyring")})
    Path(purelib, "_kward_bench_deps.pth").write_text("\n".join(deps) + "\n")
    return {"root": root, "python": python, "kward": env_dir / "bin" / "kward",
            "completed": complete(source / "kward", Path(purelib) / "kward", python)}


def complete(package: Path, installed: Path, python: Path) -> list[str]:
    """Copy into the venv the modules of `package` its wheel left out, byte-compiled as pip
    does; the packages they belong to (empty for a sound wheel). Some old trees have
    subpackages without an ``__init__.py``, which setup.cfg's ``packages = find:`` skips:
    their installed console script cannot start (ModuleNotFoundError); completed like
    this, the tree is measured as it would install with its packaging fixed."""
    missing = sorted(p.relative_to(package) for p in package.rglob("*.py")
                     if not (installed / p.relative_to(package)).exists())
    for rel in missing:
        (installed / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(package / rel, installed / rel)
    if missing:
        run([str(python), "-m", "compileall", "-q", *(str(installed / rel) for rel in missing)])
    return sorted({".".join((package.name, *rel.parent.parts)) for rel in missing})
