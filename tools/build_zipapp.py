#!/usr/bin/env python3
"""Build dist/kward.pyz: kward and its dependencies in one file for any OS with Python 3.10+.

    python3 tools/build_zipapp.py                  # -> dist/kward.pyz
    python3 tools/build_zipapp.py --output /tmp/kward.pyz --compile

Steps (docs: README "One file: kward.pyz"):
1. `pip install --target STAGE` of a copy of this source tree (the copy keeps `build/`
   and `*.egg-info` out of the checkout; pip uses its usual index configuration).
2. Remove what is compiled or platform-bound: cryptography, cffi and pycparser (with their
   metadata; keyring's Secret Service backend needs cryptography, so it is not offered
   from the archive and the file store takes over), `_cffi_backend*`, every `*.so`,
   `*.pyd`, `*.dylib` and `*.dll` (charset_normalizer falls back to its pure-Python
   modules), `bin/`, `share/` and `__pycache__/`; and secretstorage and jeepney, which
   only that backend uses. Then refuse (exit 1) if any compiled file is left.
3. Keep every other `*.dist-info` (keyring finds its backends through entry points), less
   pip's installation records (`RECORD`, `INSTALLER`, `REQUESTED`, `WHEEL`,
   `direct_url.json`), setuptools-scm's file lists and `top_level.txt` (only
   `packages_distributions()` reads it; nothing here calls it), and drop the type checkers' files
   (`py.typed`, `*.pyi`): every entry of the archive costs every start a little (the
   interpreter reads the whole directory of the archive before it runs `__main__`, ~40k
   instructions an entry). The licenses stay.
4. Add the root `__main__.py` (tools/zipapp_main.py: exit status, the extracted cache)
   with the build id written into it: a hash of every file staged, which names the
   archive's tree in the cache (`<config dir>/cache/pyz/<build id>/`), and beside it
   `_kward_zipapp.py` (tools/zipapp_cache.py: extracting that tree, certifi's cacert.pem)
   and `.kward-pyz-files`, the sha256 and size of every file, which the extracted tree
   is checked against;
   and `__main__.pyc`, hash-checked, of the building Python (zipimport would compile the
   source on every start; another version sees the wrong magic number and reads the source).
5. `--compile`: legacy `.pyc` beside each `.py` (zipimport reads only those), faster
   imports; bytecode of one Python version is ignored by later ones (they read the
   source) but one built on a newer Python failed on an older one, so it is off by default.
6. The archive, as `zipapp.create_archive(..., interpreter="/usr/bin/env python3",
   compressed=True)` writes it, but with `__main__.py[c]` stored uncompressed: a start from
   the extracted cache then never imports zlib.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import os
import py_compile
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = ("kward", "man", "setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")
PLATFORM_PACKAGES = ("cryptography", "cffi", "pycparser")
NEED_PLATFORM = ("secretstorage", "jeepney")  # keyring's Secret Service backend, useless without cryptography
INSTALL_RECORDS = ("RECORD", "INSTALLER", "REQUESTED", "WHEEL", "direct_url.json")
BUILD_RECORDS = ("scm_file_list.json", "scm_version.json")  # what setuptools-scm leaves in a dist-info
# read only by importlib.metadata.packages_distributions(), which nothing in the archive calls
UNREAD_RECORDS = ("top_level.txt",)
PLATFORM_DIRS = ("bin", "share")
COMPILED = (".so", ".pyd", ".dylib", ".dll")
INTERPRETER = "/usr/bin/env python3"
MAIN = ("__main__.py", "__main__.pyc")  # read on every start: stored, not deflated


def log(message: str) -> None:
    print(f"build_zipapp: {message}", file=sys.stderr, flush=True)


def copy_source(target: Path) -> Path:
    src = target / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in SOURCE:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.exists():
            shutil.copy2(path, src / name)
    return src


def install(src: Path, stage: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--target", str(stage), "--no-compile", "--no-warn-script-location",
           "--disable-pip-version-check", "-q", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"build_zipapp: pip install failed ({proc.returncode})")


def _distribution(dist_info: Path) -> str:
    return dist_info.name[: -len(".dist-info")].rsplit("-", 1)[0].lower().replace("-", "_")


def prune(stage: Path) -> list[str]:
    """Remove the compiled and platform-bound parts; returns what was removed."""
    removed = []
    for name in PLATFORM_PACKAGES + NEED_PLATFORM + PLATFORM_DIRS:
        if (stage / name).is_dir():
            shutil.rmtree(stage / name)
            removed.append(name + "/")
    for dist_info in stage.glob("*.dist-info"):
        if _distribution(dist_info) in PLATFORM_PACKAGES + NEED_PLATFORM:
            shutil.rmtree(dist_info)
            removed.append(dist_info.name + "/")
            continue
        for name in INSTALL_RECORDS + BUILD_RECORDS + UNREAD_RECORDS:
            (dist_info / name).unlink(missing_ok=True)
    for path in sorted(stage.rglob("*"), reverse=True):
        if path.is_dir() and path.name == "__pycache__":
            shutil.rmtree(path)
        elif path.is_file() and (path.name.startswith("_cffi_backend") or path.suffix in COMPILED):
            path.unlink()
            removed.append(str(path.relative_to(stage)))
        elif path.is_file() and (path.name == "py.typed" or path.suffix == ".pyi"):
            path.unlink()  # type checkers' files: nothing reads them at run time
    return removed


def compiled_files(stage: Path) -> list[str]:
    return sorted(str(p.relative_to(stage)) for p in stage.rglob("*")
                  if p.is_file() and (p.suffix in COMPILED or ".so." in p.name or p.name.startswith("_cffi_backend")))


def build_id(stage: Path) -> str:
    """A hash of every staged file's path and bytes: equal archives share one cache tree."""
    digest = hashlib.sha256()
    for path in sorted(p for p in stage.rglob("*") if p.is_file()):
        data = path.read_bytes()
        digest.update(f"{path.relative_to(stage).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:20]


FILE_LIST = ".kward-pyz-files"  # in the archive: `<sha256> <size> <path>` of every other file


def write_file_list(stage: Path) -> None:
    """The hash list the extracted tree is checked against (tools/zipapp_cache.py): one
    line `<sha256 hex> <size> <posix path>` per file of `stage`, sorted by path."""
    lines = []
    for path in sorted(p for p in stage.rglob("*") if p.is_file()):
        data = path.read_bytes()
        lines.append(f"{hashlib.sha256(data).hexdigest()} {len(data)} {path.relative_to(stage).as_posix()}\n")
    (stage / FILE_LIST).write_text("".join(lines), encoding="utf-8")


def _fill(code: str, placeholder: str, value: str) -> str:
    if code.count(placeholder) != 1:
        raise SystemExit(f"build_zipapp: tools/zipapp_main.py has no single {placeholder} placeholder")
    return code.replace(placeholder, value)


def add_main(stage: Path) -> None:
    """tools/zipapp_cache.py as `_kward_zipapp.py`, the hash list of the files, then
    tools/zipapp_main.py as `__main__.py` with the build id (of everything else) and the
    top-level names of the tree written in."""
    shutil.copy2(REPO / "tools" / "zipapp_cache.py", stage / "_kward_zipapp.py")
    write_file_list(stage)
    tops = sorted({p.name.split(".")[0] for p in stage.iterdir()
                   if (p.is_dir() and not p.name.endswith(".dist-info")) or p.suffix == ".py"})
    code = (REPO / "tools" / "zipapp_main.py").read_text()
    if code.startswith('"""'):  # the docstring: compiled on every start, read by no one
        code = code[code.index('"""', 3) + 3:].lstrip("\n")
    code = _fill(code, 'BUILD_ID = ""', f'BUILD_ID = "{build_id(stage)}"')
    code = _fill(code, "TOPS = frozenset()", f"TOPS = frozenset({tuple(tops)!r})")
    (stage / "__main__.py").write_text(code)
    # zipimport compiles a source with compile(), whose first call builds the AST types (~10 M
    # instructions); a hash-checked __main__.pyc of this Python skips it, and any other
    # version finds the wrong magic number and falls back to __main__.py
    py_compile.compile(str(stage / "__main__.py"), cfile=str(stage / "__main__.pyc"), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)


def _namespace_package(directory: Path) -> bool:
    """A directory without `__init__.py` holding Python code (jaraco/): zipimport finds a
    namespace package only through its directory entry."""
    return not (directory / "__init__.py").exists() and any(directory.rglob("*.py"))


def write_archive(stage: Path, target: Path) -> None:
    """What `zipapp.create_archive(stage, target, interpreter=INTERPRETER, compressed=True)`
    writes (the shebang line, then every file of `stage` deflated, in sorted order,
    executable), except `__main__.py`, stored: the only entry every start reads; and of
    the directories only those of namespace packages (nothing else reads directory
    entries: zipimport finds a regular package by its `__init__.py`, zipfile.Path and
    importlib.metadata imply the directories), as every entry costs each start a little
    (the interpreter reads the whole directory of the archive before it runs `__main__`)."""
    with open(target, "wb") as f:
        f.write(b"#!" + INTERPRETER.encode() + b"\n")
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for child in sorted(stage.rglob("*")):
                if child.is_dir() and not _namespace_package(child):
                    continue
                arcname = child.relative_to(stage).as_posix()
                z.write(child, arcname, compress_type=zipfile.ZIP_STORED if arcname in MAIN else None)
    target.chmod(target.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)


def build(output: Path, compile_bytecode: bool = False) -> Path:
    with tempfile.TemporaryDirectory(prefix="kward-zipapp-") as tmp:
        tmp_path = Path(tmp)
        stage = tmp_path / "stage"
        log(f"installing kward and its dependencies into {stage}")
        install(copy_source(tmp_path), stage)
        removed = prune(stage)
        log("removed: " + (", ".join(removed) if removed else "nothing"))
        left = compiled_files(stage)
        if left:
            raise SystemExit("build_zipapp: refusing to build: compiled files remain: " + ", ".join(left))
        if not any(stage.glob("keyring-*.dist-info")):
            raise SystemExit("build_zipapp: refusing to build: keyring's metadata is missing (its backends "
                             "are found through entry points)")
        if compile_bytecode:
            compileall.compile_dir(str(stage), quiet=1, legacy=True)
        add_main(stage)
        if compile_bytecode:
            for name in ("_kward_zipapp.py",):
                compileall.compile_file(str(stage / name), quiet=1, legacy=True)
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".partial")
        write_archive(stage, partial)
        os.replace(partial, output)
    log(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB)")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the single-file kward.pyz.")
    parser.add_argument("--output", type=Path, default=REPO / "dist" / "kward.pyz", help="where to write the archive")
    parser.add_argument("--compile", action="store_true",
                        help="add legacy .pyc files for faster imports (run the archive with this Python version "
                             "or a later one)")
    args = parser.parse_args(argv)
    build(args.output.resolve(), args.compile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
