"""kward as one file: `python3 kward.pyz ...` runs the `kward` command.

tools/build_zipapp.py copies this file to the root of the archive as `__main__.py`.
It calls `sys.exit(main())` itself (`zipapp -m` would drop the exit status), and keeps
certifi from leaking a temp file per process: inside a zip, `certifi.where()` extracts
cacert.pem to a new temp file at `import requests`, removed only at a clean exit, so a
SIGKILLed process leaves it behind. Just before `requests` is first imported, a one-shot
import hook copies cacert.pem once to `<config dir>/cache/certifi-<version>/cacert.pem`
(rewritten when its bytes differ) and points `certifi.where` at it; when that cannot be
done (an unwritable home) certifi's own way is left in place. Nothing is imported for it
before then, so `kward rpc` starts as fast as from a normal install.
"""

import os
import sys


def _config_dir() -> str:
    custom = os.environ.get("KWARD_CONFIG_PATH")
    if custom:
        return os.path.dirname(os.path.abspath(os.path.expanduser(custom)))
    return os.path.join(os.environ.get("HOME") or os.path.expanduser("~"), ".kward")


def _pin_certifi() -> None:
    try:
        import certifi
        import certifi.core
        from importlib.resources import files

        data = files("certifi").joinpath("cacert.pem").read_bytes()
        directory = os.path.join(_config_dir(), "cache", f"certifi-{certifi.__version__}")
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

    done = False

    def find_spec(self, name, path=None, target=None):
        if name == "requests" and not self.done:
            self.done = True
            _pin_certifi()
        return None  # the normal finders load it


if __name__ == "__main__":
    sys.meta_path.insert(0, _BeforeRequests())
    from kward.cli import main

    sys.exit(main())
