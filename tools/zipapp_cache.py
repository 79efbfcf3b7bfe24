"""The cold half of kward.pyz's `__main__.py` (tools/zipapp_main.py), in the archive as
`_kward_zipapp.py`: imported only by a start that extracts or repairs the cache tree, or
that runs from the archive (`start`).

The extracted tree: `prepare` extracts the archive into a temp dir beside
`<config dir>/cache/pyz/<build id>/`, byte-compiles it (as pip does when it installs, so
the start is as fast with PYTHONDONTWRITEBYTECODE set), writes the marker `.kward-pyz`
(the build id) last and renames the temp dir into place, so a start never sees a
half-extracted tree; a concurrent first start loses the rename and uses the winner's
tree. A tree without the right marker is moved aside, removed and extracted again. A tree
whose files fail the import of `kward.cli` is given up for that start (`give_up`: it runs
from the archive) and extracted again at the next. Another Python version compiles a
complete tree for itself once (the stamp `.kward-pyz-<cache tag>`). Anything that fails
(an unwritable cache, a full disk) leaves kward running from the archive, silently. A
copy of the same archive elsewhere uses the same tree. Temp and discarded trees that
killed starts left behind are removed by the next extraction after an hour.

certifi, when running from the archive (`watch_certifi`): inside a zip, `certifi.where()`
extracts cacert.pem to a new temp file at `import requests`, removed only at a clean
exit, so a SIGKILLed process leaves it behind. Just before `requests` is first imported,
a one-shot import hook copies cacert.pem once to
`<config dir>/cache/certifi-<version>/cacert.pem` (rewritten when its bytes differ) and
points `certifi.where` at it; when that cannot be done (an unwritable home) certifi's own
way is left in place. Nothing is imported for it before then. (In the extracted tree
certifi's file is a real file: nothing to do.)
"""

import os
import sys

STALE_SECONDS = 3600  # a temp or discarded tree older than this is left over from a killed start
MARKER = ".kward-pyz"  # at the root of an extracted tree (kward.auth.stores.in_zipapp looks for it)


def start(archive: str, config_dir: str, tree: "str | None", complete: "bool | None", build_id: str):
    """kward.cli's `main` for a start that `__main__` could not serve from the cache:
    `tree` None (no extraction: running from the archive), `tree` on `sys.path[0]` (its
    import of kward failed: give it up), else a missing, incomplete or uncompiled tree
    (`complete`: its marker is right) to prepare."""
    if tree and sys.path and sys.path[0] == tree:
        give_up(tree, archive, MARKER)
    elif tree:
        ready = prepare(archive, tree, build_id, MARKER, bool(complete))
        if ready:
            sys.path[0] = ready
            try:
                from kward.cli import main

                return main
            except Exception:  # a damaged tree: this start runs from the archive
                give_up(ready, archive, MARKER)
    watch_certifi(config_dir)
    from kward.cli import main

    return main


# --- the extracted tree ------------------------------------------------------------------

def _complete(tree: str, build_id: str, marker: str) -> bool:
    try:
        with open(os.path.join(tree, marker), "rb") as f:
            return f.read() == build_id.encode()
    except OSError:
        return False


def _compile(tree: str, build_id: str, marker: str) -> None:
    """Byte-compile the tree for this interpreter (best effort), then write its stamp."""
    if sys.implementation.cache_tag is None or not os.access(tree, os.W_OK):
        return
    try:
        import compileall

        compileall.compile_dir(tree, quiet=2)
        with open(os.path.join(tree, f"{marker}-{sys.implementation.cache_tag}"), "w") as f:
            f.write(build_id)
    except Exception:  # the sources still run
        pass


def _private_dirs(path: str) -> None:
    """`path` and the missing directories above it, each made 0700 (os.makedirs would make
    all but the last with the umask's mode: DESIGN.md wants the config dir's at 0700)."""
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass


def _remove(path: str) -> None:
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _sweep(base: str, now: float) -> None:
    """Remove temp and discarded trees that killed starts left behind."""
    for entry in os.scandir(base):
        if entry.name.startswith(".") and entry.name.endswith((".tmp", ".bad")):
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS:
                    _remove(entry.path)
            except OSError:
                pass


def _extract(archive: str, final: str, build_id: str, marker: str) -> bool:
    """Extract `archive` into `final` atomically; True when `final` is then complete."""
    import tempfile
    import time
    import zipfile

    base = os.path.dirname(final)
    _private_dirs(base)
    _sweep(base, time.time())
    temp = tempfile.mkdtemp(prefix=f".{build_id}.", suffix=".tmp", dir=base)
    try:
        with zipfile.ZipFile(archive) as z:
            z.extractall(temp)
        _compile(temp, build_id, marker)
        with open(os.path.join(temp, marker), "w") as f:
            f.write(build_id)
        if os.path.lexists(final):  # incomplete or damaged: moved aside, then removed
            aside = temp[: -len(".tmp")] + ".bad"
            try:
                os.rename(final, aside)
            except OSError:
                pass  # another start moved it first
            else:
                _remove(aside)
        try:
            os.rename(temp, final)
        except OSError:
            pass  # another start put its tree in place first
    finally:
        if os.path.lexists(temp):
            _remove(temp)
    return _complete(final, build_id, marker)


def prepare(archive: str, tree: str, build_id: str, marker: str, complete: bool) -> "str | None":
    """`tree` once it is complete and compiled for this interpreter, or None (run from
    the archive). `complete`: the caller found the right marker in it."""
    try:
        if complete:
            _compile(tree, build_id, marker)
            return tree
        return tree if _extract(archive, tree, build_id, marker) else None
    except Exception:  # unwritable, full disk, ...: the archive still runs
        return None


def give_up(tree: str, archive: str, marker: str) -> None:
    """The tree failed to import kward: forget what came from it, run from the archive, and
    have the next start extract it again (its marker is removed)."""
    prefix = tree + os.sep
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(prefix):
            del sys.modules[name]
    sys.path[:] = [archive if entry == tree else entry for entry in sys.path]
    sys.path_importer_cache.pop(tree, None)
    try:
        os.unlink(os.path.join(tree, marker))
    except OSError:
        pass


# --- certifi from the archive ------------------------------------------------------------

def _pin_certifi(config_dir: str) -> None:
    try:
        import certifi
        import certifi.core
        from importlib.resources import files

        data = files("certifi").joinpath("cacert.pem").read_bytes()
        directory = os.path.join(config_dir, "cache", f"certifi-{certifi.__version__}")
        target = os.path.join(directory, "cacert.pem")
        try:
            with open(target, "rb") as f:
                current = f.read()
        except OSError:
            current = None
        if current != data:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            temp = f"{target}.{os.getpid()}.tmp"
            with open(temp, "wb") as f:
                f.write(data)
            os.replace(temp, target)
    except Exception:  # certifi's own temp-file way still verifies HTTPS
        return

    def where() -> str:
        return target

    certifi.where = certifi.core.where = where


class _BeforeRequests:
    """A meta-path entry that only watches for the first `import requests` (it stays in
    `sys.meta_path`: removing it while the import system iterates that list would make it
    skip the next finder)."""

    def __init__(self, config_dir: str):
        self.config_dir = config_dir
        self.done = False

    def find_spec(self, name, path=None, target=None):
        if name == "requests" and not self.done:
            self.done = True
            _pin_certifi(self.config_dir)
        return None  # the normal finders load it


def watch_certifi(config_dir: str) -> None:
    """Pin certifi's CA file to the cache just before `requests` is first imported."""
    sys.meta_path.insert(0, _BeforeRequests(config_dir))
