"""kward as one file: `python3 kward.pyz ...` runs the `kward` command.

tools/build_zipapp.py copies this file to the root of the archive as `__main__.py` (less
this docstring; with a `__main__.pyc` of the building Python: any other one compiles this
source on every start, so it holds only the cache hit),
with the build's id (a hash of the archive's contents) written into `BUILD_ID`, and
tools/zipapp_cache.py beside it as `_kward_zipapp.py`: everything else (a first start, a
damaged tree, running from the archive). It calls `sys.exit(main())` itself (`zipapp -m`
would drop the exit status).

Running from the cache: zipimport compiles every module it imports on every start (the
archive holds sources only, so it runs on any OS with Python 3.10+). So the first start
extracts the archive once into `<config dir>/cache/pyz/<build id>/`, byte-compiled there
as pip does when it installs, and every start runs from that tree. A start checks the
marker `.kward-pyz` (one open: it holds the build id) and the stamp `.kward-pyz-<cache
tag>` of its interpreter's bytecode (one stat); anything else is `_kward_zipapp.start`'s
(the atomic extraction, a damaged tree, certifi). Where the cache cannot be written, or
with `KWARD_PYZ_EXTRACT=0`, kward runs from the archive as before, silently.

The tree is verified: `cache/`, `cache/pyz/` and the tree must be directories (not
links) of this user that no one else may write (else: the tree is extracted again into a
fresh private dir; an unsafe `cache/` or `cache/pyz/` is not used at all: kward runs from
the archive). Each module loads from the tree only when its source and bytecode still
have the size, mtime and ctime recorded when the extraction checked them against the
archive's hash list (`.kward-pyz-stat`; the stat the import makes anyway, and one fstat);
a file that differs, or a module the tree no longer holds, is read from the archive
instead and the stamp removed, so the next start checks the tree (the hash of what
changed) and extracts it again when it is not intact. The data files of the tree (neither
`.py` nor `.pyc`: certifi's cacert.pem, which requests loads by its path, kward/resources
read through importlib.resources, the dist-info metadata) are compared with their
recorded stat once, at start, before kward is imported (one lstat each, ~40); one that
differs sends the start to `_kward_zipapp.start`, which checks its hash and extracts the
tree again if it is not intact. Not covered: a data file changed while kward runs (read
after the start's check), a change that keeps size, mtime and ctime (ctime cannot be set
back without changing the clock), and directories, whose stat only the check of a start
without the stamp compares (a file added to the tree is never imported from it: it has
no recorded stat). Nothing is ever written into the
tree as kward runs from it (the loaders' `set_data` does nothing): bytecode the extraction
did not write (-O's, of a tree a plain start extracted) counts as missing, so the checked
source is compiled in memory.
"""

import sys

BUILD_ID = ""  # written by tools/build_zipapp.py; empty: never extract
TOPS = frozenset()  # written by tools/build_zipapp.py: the top-level modules and packages of the archive
STAT = ".kward-pyz-stat"  # in the tree: marshal of ({path: (size, mtime ns, ctime ns)} of each file and
# directory, (path of each data file, ...))


def _private(name, uid, lstat):
    """Whether `name` is a directory (not a link) of this user that no one else may write
    (`uid` None, where there are no POSIX owners: a directory, not a link)."""
    try:
        st = lstat(name)
    except OSError:
        return False
    if uid is None:
        return st.st_mode & 0o170000 == 0o040000
    return st.st_mode & 0o170022 == 0o040000 and st.st_uid == uid


class _Changed(ImportError):
    """A file of the tree is not as it was extracted and checked."""


def _checked_finders(tree, archive, stats):
    """The path hook of the tree's directories: their modules load only when the source
    (and its bytecode) still have the size, mtime and ctime recorded at extraction (the
    stat the import makes anyway, and an fstat of the open bytecode); any other file is
    never executed: the module's code is read from the archive instead, and the tree's
    stamp removed, so the next start checks it (`_kward_zipapp.prepare`: the hash of what
    changed) and extracts it again if it is not intact. A bytecode path the stat list does
    not hold (-O's opt-1 in a tree compiled without it) is FileNotFoundError, so the source
    is compiled in memory, and no bytecode is ever written (`set_data`)."""
    from _frozen_importlib_external import (BYTECODE_SUFFIXES, SOURCE_SUFFIXES, FileFinder, SourceFileLoader,
                                            SourcelessFileLoader)
    from _io import FileIO
    from os import fstat, lstat, sep, unlink

    skip = len(tree) + 1
    posix = sep == "/"
    stamp = f"{tree}/.kward-pyz-{sys.implementation.cache_tag}"

    def relative(path):
        return path[skip:] if posix else path[skip:].replace(sep, "/")

    def same(path, st):
        return stats.get(relative(path)) == (st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    class Checked:
        def path_stats(self, path):
            st = lstat(path)
            if not same(path, st):
                raise _Changed(path)
            return {"mtime": st.st_mtime, "size": st.st_size}

        def get_data(self, path):
            name = relative(path)
            if "__pycache__/" in name and name not in stats:
                # bytecode the extraction did not write (-O's opt-1): the source loader
                # compiles the checked source in memory, as for a missing file
                raise FileNotFoundError(path)
            with FileIO(path, "r") as f:
                if not same(path, fstat(f.fileno())):
                    raise _Changed(path)
                return f.read()

        def set_data(self, path, data, *, _mode=0o666):
            pass  # nothing is ever written into the checked tree

        def get_code(self, fullname):
            try:
                return super().get_code(fullname)
            except _Changed:
                from zipimport import zipimporter

                try:
                    unlink(stamp)
                except OSError:
                    pass
                package = fullname.rpartition(".")[0]
                return zipimporter(archive + ("/" + package.replace(".", "/") if package else "")).get_code(fullname)

    class Source(Checked, SourceFileLoader):
        pass

    class Sourceless(Checked, SourcelessFileLoader):
        pass

    def hook(path):
        if path != tree and not path.startswith(tree + sep):
            raise ImportError("not the tree")
        return FileFinder(path, (Source, SOURCE_SUFFIXES), (Sourceless, BYTECODE_SUFFIXES))

    return hook


class _FromArchive:
    """The last entry of `sys.meta_path` while kward runs from the tree: a module of the
    archive's packages that the tree no longer holds (removed while kward runs) is loaded
    from the archive, and the tree's stamp removed, so the next start checks it again."""

    def __init__(self, archive, tree):
        self.archive = archive
        self.tree = tree

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in TOPS:
            return None
        from zipimport import zipimporter

        package = name.rpartition(".")[0]
        try:
            spec = zipimporter(self.archive + ("/" + package.replace(".", "/") if package else "")).find_spec(name)
        except Exception:
            return None
        if spec is not None:
            from os import unlink

            try:
                unlink(f"{self.tree}/.kward-pyz-{sys.implementation.cache_tag}")
            except OSError:
                pass
        return spec


def _main():
    archive = getattr(getattr(sys.modules[__name__], "__loader__", None), "archive", None)  # zipimport's
    if not archive:
        from kward.cli import main

        return main
    import os
    from os import environ, lstat, path

    tree = complete = None
    custom = environ.get("KWARD_CONFIG_PATH")
    config = (path.dirname(path.abspath(path.expanduser(custom))) if custom
              else path.join(environ.get("HOME") or path.expanduser("~"), ".kward"))
    if (BUILD_ID and path.isabs(config) and sys.path and sys.path[0] == archive
            and environ.get("KWARD_PYZ_EXTRACT", "").strip().lower() not in ("0", "false", "no", "off")):
        uid, cache = os.geteuid() if hasattr(os, "geteuid") else None, path.join(config, "cache")
        if not _private(cache, uid, lstat) or not _private(path.join(cache, "pyz"), uid, lstat):
            # missing (made safe by the extraction) or unsafe (refused there: run from the archive)
            complete = False
        tree = path.join(cache, "pyz", BUILD_ID)
        if complete is None and _private(tree, uid, lstat):
            try:
                with open(path.join(tree, ".kward-pyz"), "rb") as f:
                    complete = f.read() == BUILD_ID.encode()
            except OSError:
                complete = False
        else:
            complete = False
        stats = None
        if complete and path.exists(path.join(tree, f".kward-pyz-{sys.implementation.cache_tag}")):
            from marshal import loads

            try:
                with open(path.join(tree, STAT), "rb") as f:
                    stats, data = loads(f.read())
            except (OSError, ValueError, EOFError, TypeError):
                stats = None
            if type(stats) is dict and type(data) is tuple:
                for name in data:  # read as files, not imported: checked here, once
                    try:
                        st = lstat(f"{tree}/{name}")
                    except (OSError, TypeError, ValueError):
                        st = None
                    if st is None or stats.get(name) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
                        stats = None  # _kward_zipapp checks the tree (the hash of what changed)
                        break
        if type(stats) is dict:
            sys.path_hooks.insert(0, _checked_finders(tree, archive, stats))
            sys.path[0] = tree
            sys.meta_path.append(_FromArchive(archive, tree))
            try:
                from kward.cli import main

                return main
            except Exception:  # a damaged tree: _kward_zipapp gives it up
                pass
    import _kward_zipapp

    return _kward_zipapp.start(archive, config, tree, complete, BUILD_ID)


if __name__ == "__main__":
    sys.exit(_main()())
