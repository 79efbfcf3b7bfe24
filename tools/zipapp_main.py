"""kward as one file: `python3 kward.pyz ...` runs the `kward` command.

tools/build_zipapp.py copies this file to the root of the archive as `__main__.py`, with
the build's id (a hash of the archive's contents) written into `BUILD_ID`, and
tools/zipapp_cache.py beside it as `_kward_zipapp.py` (what only a first start, or a start
from the archive, needs: this file is compiled on every start, so it stays small). It
calls `sys.exit(main())` itself (`zipapp -m` would drop the exit status).

Running from the cache: zipimport compiles every module it imports on every start (the
archive holds sources only, so it runs on any OS with Python 3.10+). So the first start
extracts the archive once into `<config dir>/cache/pyz/<build id>/`, byte-compiled there
as pip does when it installs, and every start runs from that tree. A start checks the
marker `.kward-pyz` (one open: it holds the build id) and the stamp `.kward-pyz-<cache
tag>` of its interpreter's bytecode (one stat); anything else is `_kward_zipapp`'s (the
atomic extraction, a damaged tree, certifi). Where the cache cannot be written, or with
`KWARD_PYZ_EXTRACT=0`, kward runs from the archive as before, silently.
"""

import os
import sys

BUILD_ID = ""  # written by tools/build_zipapp.py; empty: never extract
MARKER = ".kward-pyz"  # at the root of an extracted tree (kward.auth.stores.in_zipapp looks for it)
ENV_EXTRACT = "KWARD_PYZ_EXTRACT"


def config_dir() -> str:
    custom = os.environ.get("KWARD_CONFIG_PATH")
    if custom:
        return os.path.dirname(os.path.abspath(os.path.expanduser(custom)))
    return os.path.join(os.environ.get("HOME") or os.path.expanduser("~"), ".kward")


def _tree(archive: str) -> "str | None":
    """This build's extracted tree (extracted now if need be), or None: run from the archive."""
    if not BUILD_ID or os.environ.get(ENV_EXTRACT, "").strip().lower() in ("0", "false", "no", "off"):
        return None
    tree = os.path.join(config_dir(), "cache", "pyz", BUILD_ID)
    if not os.path.isabs(tree):
        return None
    try:
        with open(os.path.join(tree, MARKER), "rb") as f:
            complete = f.read() == BUILD_ID.encode()
    except OSError:
        complete = False
    if complete and os.path.exists(os.path.join(tree, f"{MARKER}-{sys.implementation.cache_tag}")):
        return tree
    import _kward_zipapp

    return _kward_zipapp.prepare(archive, tree, BUILD_ID, MARKER, complete)


def _load_main():
    archive = getattr(sys.modules[__name__], "__loader__", None)
    archive = getattr(archive, "archive", None)  # zipimport's: the archive's path
    tree = _tree(archive) if archive and sys.path and sys.path[0] == archive else None
    if tree:
        sys.path[0] = tree
        try:
            from kward.cli import main

            return main
        except Exception:  # a damaged tree: this start runs from the archive
            import _kward_zipapp

            _kward_zipapp.give_up(tree, archive, MARKER)
    if archive:
        import _kward_zipapp

        _kward_zipapp.watch_certifi(config_dir())
    from kward.cli import main

    return main


if __name__ == "__main__":
    sys.exit(_load_main()())
