"""The cold half of kward.pyz's `__main__.py` (tools/zipapp_main.py), in the archive as
`_kward_zipapp.py`: imported only by a start that extracts or repairs the cache tree, or
that runs from the archive (`start`).

The extracted tree: `prepare` extracts the archive into a temp dir beside
`<config dir>/cache/pyz/<build id>/`, checks every file against the archive's hash list
(`.kward-pyz-files`: sha256 and size, written by tools/build_zipapp.py; what zipfile's CRC
check adds to it: the bytes read back from disk match the build's list), makes it private
(0700 directories, 0600 files), byte-compiles it (as pip does when it installs, so
the start is as fast with PYTHONDONTWRITEBYTECODE set), records the size, mtime and ctime
of every file and directory and the names of the data files (`.kward-pyz-stat`, which
`__main__` compares as it imports each module, and for the data files once at start),
writes the marker `.kward-pyz` (the build id) last and renames the temp dir into place, so a start never sees a
half-extracted tree; a concurrent first start loses the rename and uses the winner's
tree. A tree without the right marker is moved aside, removed and extracted again; only
the tree this start judged (the same inode): one that another start put in place since
is used, never moved from under the starts that already run from it. A tree
whose files fail the import of `kward.cli` is given up for that start (`give_up`: it runs
from the archive) and extracted again at the next. Another Python version compiles a
complete tree for itself once (the stamp `.kward-pyz-<cache tag>`); a start without
that stamp first checks the tree (`_intact`): every entry whose stat changed must be a
listed file whose hash still matches, else the tree is extracted again. A `cache/` or
`cache/pyz/` that is a link, another user's or writable by others is not used. Anything that fails
(an unwritable cache, a full disk) leaves kward running from the archive, silently. A
copy of the same archive elsewhere uses the same tree. Temp and discarded trees that
killed starts left behind are removed by the next extraction after an hour.

certifi, when running from the archive (`watch_certifi`): inside a zip, `certifi.where()`
extracts cacert.pem to a new temp file at `import requests`, removed only at a clean
exit, so a SIGKILLed process leaves it behind. Just before `requests` is first imported,
a one-shot import hook copies cacert.pem once to
`<config dir>/cache/certifi-<version>/cacert.pem` (read as kward's own file: a link, a
FIFO or another user's file there is not used but replaced, through a temp file of a
random name created exclusively) and points `certifi.where` at it. When `cache/` or
`certifi-<version>/` is a link, another user's or writable by others, or anything fails
(an unwritable home), certifi's own way is left in place. Nothing is imported for it
before then. (In the extracted tree certifi's file is a real file, which `__main__`
compares with its recorded stat at start like the tree's other data files.)
"""

import os
import sys

STALE_SECONDS = 3600  # a temp or discarded tree older than this is left over from a killed start
MARKER = ".kward-pyz"  # at the root of an extracted tree (kward.auth.stores.in_zipapp looks for it)
FILE_LIST = ".kward-pyz-files"  # in the archive (tools/build_zipapp.py): `<sha256> <size> <path>` per file
STAT = ".kward-pyz-stat"  # in the tree: marshal of ({path: (size, mtime ns, ctime ns)} per file and
# directory, (path of each data file, ...))


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
    """Byte-compile the tree for this interpreter (best effort), then write its stamp: the
    plain bytecode, and that of the running optimization level (-O, -OO) when it is one."""
    if sys.implementation.cache_tag is None or not os.access(tree, os.W_OK):
        return
    try:
        import compileall

        compileall.compile_dir(tree, quiet=2, optimize=sorted({0, sys.flags.optimize}))
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


def _private(name: str) -> bool:
    """A directory (not a link) of this user that no one else may write."""
    try:
        st = os.lstat(name)
    except OSError:
        return False
    if not hasattr(os, "geteuid"):  # no POSIX owners: a directory, not a link
        return st.st_mode & 0o170000 == 0o040000
    return st.st_mode & 0o170022 == 0o040000 and st.st_uid == os.geteuid()


def _listing(archive: str) -> "dict[str, tuple[str, int]]":
    """The archive's hash list: {path: (sha256 hex, size)}."""
    import zipfile

    with zipfile.ZipFile(archive) as z:
        text = z.read(FILE_LIST).decode("utf-8")
    listed = {}
    for line in text.splitlines():
        digest, size, name = line.split(" ", 2)
        listed[name] = (digest, int(size))
    return listed


def _matches(path: str, expected: "tuple[str, int]") -> bool:
    import hashlib

    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size != expected[1]:
                return False
            return hashlib.sha256(f.read()).hexdigest() == expected[0]
    except OSError:
        return False


def _verify(tree: str, listed: "dict[str, tuple[str, int]]") -> bool:
    """Every listed file is in `tree` with its hash. zipfile has already checked each
    entry's CRC as it extracted it; this reads back what was written and ties the tree to
    the build's hash list, which the stat list then stands for (a start compares stats,
    and hashes only what changed)."""
    return all(_matches(os.path.join(tree, name), expected) for name, expected in listed.items())


def _entries(tree: str) -> "list[str]":
    """The files and directories of `tree` the stat list covers (all but the root's own
    marker files), as posix paths relative to it."""
    found = []
    for top, dirs, files in os.walk(tree):
        rel = os.path.relpath(top, tree).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        for name in dirs + files:
            if prefix or not name.startswith(MARKER):
                found.append(prefix + name)
    return found


def _private_modes(tree: str) -> None:
    """No one but this user may write in the tree (extractall follows the umask)."""
    for top, dirs, files in os.walk(tree):
        os.chmod(top, 0o700)
        for name in files:
            os.chmod(os.path.join(top, name), 0o600)


def _write_stat(tree: str) -> None:
    """Record the size, mtime and ctime of every file and directory of the checked tree,
    which `__main__` compares as it imports (the hash only when they differ), and the
    names of its data files (neither `.py` nor `.pyc`: certifi's cacert.pem, what
    importlib.resources and importlib.metadata read), which it compares at each start.
    The tree is private (its directory is this user's, 0700): a plain open is safe."""
    import marshal
    import stat

    stats = {}
    data = []
    for name in _entries(tree):
        st = os.lstat(os.path.join(tree, name))
        stats[name] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stat.S_ISREG(st.st_mode) and not name.endswith((".py", ".pyc")):
            data.append(name)
    temp = os.path.join(tree, f"{STAT}.{os.getpid()}.tmp")
    with open(temp, "wb") as f:
        f.write(marshal.dumps((stats, tuple(data))))
    os.replace(temp, os.path.join(tree, STAT))


def read_stat(path: str) -> "tuple[dict, tuple] | None":
    """The stat list `_write_stat` wrote at `path`, or None when it is missing or not one.
    (`__main__` reads it the same way, inline, before this module is imported.)"""
    import marshal

    try:
        with open(path, "rb") as f:
            loaded = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if type(loaded) is not tuple or len(loaded) != 2 or type(loaded[0]) is not dict or type(loaded[1]) is not tuple:
        return None
    return loaded


def _changed(tree: str) -> "list[str] | None":
    """The entries of the stat list whose size, mtime or ctime differ now (missing ones
    too), plus entries of the tree it does not list; None when there is no stat list."""
    loaded = read_stat(os.path.join(tree, STAT))
    if loaded is None:
        return None
    stats = loaded[0]
    changed = []
    for name, recorded in stats.items():
        try:
            st = os.lstat(os.path.join(tree, name))
        except (OSError, TypeError, ValueError):
            changed.append(name)
            continue
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns) != recorded:
            changed.append(name)
    return changed + [name for name in _entries(tree) if name not in stats]


def _intact(archive: str, tree: str) -> bool:
    """Whether the tree still holds what was extracted: every entry whose stat changed is
    a listed file whose hash still matches (then the stat list is written again); a changed
    directory, a changed bytecode file, a missing or an unknown file: no."""
    changed = _changed(tree)
    if changed is None:
        return False
    if changed:
        listed = _listing(archive)
        for name in changed:
            expected = listed.get(name)
            if expected is None or not _matches(os.path.join(tree, name), expected):
                return False
        if os.access(tree, os.W_OK):
            _write_stat(tree)
    return True


def _identity(path: str) -> "tuple[int, int] | None":
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _extract(archive: str, final: str, build_id: str, marker: str, judged: "tuple[int, int] | None") -> bool:
    """Extract `archive` into `final` atomically; True when `final` is then complete.
    `judged`: the identity of what was at `final` when the caller found it incomplete or
    damaged (None: nothing); only that is replaced."""
    import tempfile
    import time
    import zipfile

    base = os.path.dirname(final)
    _private_dirs(base)
    if not (_private(os.path.dirname(base)) and _private(base)):
        return False  # a link, another user's or a writable-by-others cache: not used
    _sweep(base, time.time())
    temp = tempfile.mkdtemp(prefix=f".{build_id}.", suffix=".tmp", dir=base)
    try:
        with zipfile.ZipFile(archive) as z:
            z.extractall(temp)
        if not _verify(temp, _listing(archive)):
            return False
        _private_modes(temp)
        _compile(temp, build_id, marker)
        _write_stat(temp)
        with open(os.path.join(temp, marker), "w") as f:
            f.write(build_id)
        current = _identity(final)
        if current is not None and current != judged:
            return _complete(final, build_id, marker)  # another start's tree, in use: kept
        if current is not None:  # the incomplete or damaged tree: moved aside, then removed
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
        base = os.path.dirname(tree)
        if os.path.lexists(base) and not (_private(os.path.dirname(base)) and _private(base)):
            return None  # a link, another user's or a writable-by-others cache: not used
        judged = _identity(tree)
        if not complete:  # another start may have put its tree in place since __main__ looked
            complete = _complete(tree, build_id, marker)
        if complete and _private(tree) and _intact(archive, tree):
            if not os.path.exists(os.path.join(tree, f"{marker}-{sys.implementation.cache_tag}")):
                _compile(tree, build_id, marker)
                _write_stat(tree)
            return tree
        return tree if _extract(archive, tree, build_id, marker, judged) else None
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
    """Point certifi at `cache/certifi-<version>/cacert.pem`, written when missing or
    different; nothing when `cache/` or that directory is a link, another user's or
    writable by others (requests would load a CA file someone else put there), or when
    anything fails: certifi's own way then stays."""
    try:
        import certifi
        import certifi.core
        from importlib.resources import files
        from pathlib import Path

        from kward.fsutil import atomic_write_bytes, read_own

        data = files("certifi").joinpath("cacert.pem").read_bytes()
        cache = os.path.join(config_dir, "cache")
        _private_dirs(cache)
        if not _private(cache):
            return
        directory = os.path.join(cache, f"certifi-{certifi.__version__}")
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        if not _private(directory):
            return
        target = os.path.join(directory, "cacert.pem")
        try:  # kward's own file: a link, a FIFO, another user's or a bigger file is not read
            current: "bytes | None" = read_own(target, len(data))
        except OSError:
            current = None
        if current != data:  # a random temp name created exclusively, renamed over a link in the way
            atomic_write_bytes(Path(target), data)
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
