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
"""

import sys

BUILD_ID = ""  # written by tools/build_zipapp.py; empty: never extract


def _main():
    archive = getattr(getattr(sys.modules[__name__], "__loader__", None), "archive", None)  # zipimport's
    if not archive:
        from kward.cli import main

        return main
    from os import environ, path

    tree = complete = None
    custom = environ.get("KWARD_CONFIG_PATH")
    config = (path.dirname(path.abspath(path.expanduser(custom))) if custom
              else path.join(environ.get("HOME") or path.expanduser("~"), ".kward"))
    if (BUILD_ID and path.isabs(config) and sys.path and sys.path[0] == archive
            and environ.get("KWARD_PYZ_EXTRACT", "").strip().lower() not in ("0", "false", "no", "off")):
        tree = path.join(config, "cache", "pyz", BUILD_ID)
        try:
            with open(path.join(tree, ".kward-pyz"), "rb") as f:
                complete = f.read() == BUILD_ID.encode()
        except OSError:
            complete = False
        if complete and path.exists(path.join(tree, f".kward-pyz-{sys.implementation.cache_tag}")):
            sys.path[0] = tree
            try:
                from kward.cli import main

                return main
            except Exception:  # a damaged tree: _kward_zipapp gives it up
                pass
    import _kward_zipapp

    return _kward_zipapp.start(archive, config, tree, complete, BUILD_ID)


if __name__ == "__main__":
    sys.exit(_main()())
