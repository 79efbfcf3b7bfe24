"""The single-file zipapp: tools/build_zipapp.py builds kward.pyz into a temp dir; a copy
in a directory that knows nothing of the checkout runs `--version`, an RPC handshake, a
scripted turn (over RPC and one-shot) and imports everything from the archive alone. Its
first start extracts it into `~/.kward/cache/pyz/<build id>/` and later starts run from
there (tools/zipapp_main.py): a damaged tree is extracted again, an unwritable cache or
`KWARD_PYZ_EXTRACT=0` runs from the archive. A first start costs about a second (extract,
check, compile): the tests that are not about the first extraction start from a copy of one
first start's tree (`extracted`), which a start serves as it would the tree it extracted.

The archive is run with `python3 -S` (no site-packages: neither this checkout's editable
install nor the machine's requests or keyring can help it), except for one plain run."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kward import __version__
from lib.config_files import write_config
from lib.fake_mcp import FakeMcpHttp, stdio_command
from lib.fake_openrouter import FakeOpenRouter
from lib.paths import REPO
from lib.rpc_client import RpcClient, kward_command, kward_env
from lib.scripts import text, tool, write_script
from lib.waiting import wait_until


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pyz(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zipapp") / "build" / "kward.pyz"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "build_zipapp.py"), "--output", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    copy = elsewhere / "kward.pyz"
    shutil.copy2(out, copy)
    return copy


def archive_module(pyz: Path, name: str):
    """The archive's own copy of a module (`_kward_zipapp`: tools/zipapp_cache.py)."""
    import zipimport

    spec = zipimport.zipimporter(str(pyz)).find_spec(name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_tree(source: Path, home: Path, cache_module) -> Path:
    """`source` (an extracted tree) copied into `home`'s `.kward/cache/pyz/`, as a first start
    there would have left it: the private directories above it, the files' bytes, modes and
    mtimes (the bytecode's headers name the sources' mtimes), and the stat list recorded
    again (a copy has new ctimes) by the archive's own `_write_stat`, which the extraction
    runs last. Returns the copy's path."""
    base = home / ".kward" / "cache" / "pyz"
    for directory in (home / ".kward", base.parent, base):
        directory.mkdir(mode=0o700)
    copy = base / source.name
    # modes and mtimes (ns), of the directories too (cp: a third of shutil.copytree's time)
    subprocess.run(["cp", "-a", str(source), str(copy)], check=True, timeout=60)
    cache_module._write_stat(str(copy))
    assert cache_module._changed(str(copy)) == []  # every recorded stat matches: served as extracted
    return copy


@pytest.fixture(scope="module")
def extracted(pyz, tmp_path_factory) -> Path:
    """The tree one first start (`--version`) extracted into a home of its own; checked once:
    a copy of it (`copy_tree`) is run from, as bytecode, and not extracted again."""
    home = tmp_path_factory.mktemp("first-start") / "home"
    home.mkdir()
    env = kward_env(home)
    env.pop("PYTHONPATH", None)
    loaded_from(pyz, env)
    source = tree(home)
    other = tmp_path_factory.mktemp("copy-check") / "home"
    other.mkdir()
    copy = copy_tree(source, other, archive_module(pyz, "_kward_zipapp"))
    marker = (copy / ".kward-pyz").stat().st_ino
    env = kward_env(other)
    env.pop("PYTHONPATH", None)
    proc, found = loaded_from(pyz, env)
    assert found == "bytecode" and str(copy) in proc.stderr
    assert tree(other) == copy and (copy / ".kward-pyz").stat().st_ino == marker
    assert (copy / f".kward-pyz-{sys.implementation.cache_tag}").is_file()
    return source


@pytest.fixture
def from_tree(pyz, extracted, isolated_home) -> Path:
    """This test's home holds a copy of `extracted`, as if its first start had run; the
    copy's path."""
    return copy_tree(extracted, isolated_home, archive_module(pyz, "_kward_zipapp"))


@pytest.fixture
def env(isolated_home, tmp_path) -> dict[str, str]:
    env = kward_env(isolated_home)
    env.pop("PYTHONPATH", None)
    env["TMPDIR"] = str(tmp_path / "tmp")
    os.mkdir(env["TMPDIR"])
    return env


def test_the_archive_holds_pure_python_and_every_dist_info(pyz):
    names = zipfile.ZipFile(pyz).namelist()
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    assert "__main__.py" in names and "kward/cli.py" in names and "kward/terminal/interactive.py" in names
    assert "kward/resources/base_prompt.md" in names  # read through importlib.resources from the archive
    compiled = [n for n in names if n.endswith((".so", ".pyd", ".dylib", ".dll")) or "_cffi_backend" in n]
    assert compiled == [] and not [n for n in names if n.startswith(("cryptography/", "cffi/", "bin/"))]
    dist_infos = {n.split("/")[0].split("-")[0].lower() for n in names if ".dist-info/" in n}
    assert {"kward", "requests", "keyring", "urllib3", "certifi", "idna", "charset_normalizer"} <= dist_infos
    assert "keyring-" in "".join(n for n in names if n.endswith("entry_points.txt"))
    # pip's records and what only the (compiled) Secret Service backend would use are left out
    assert not [n for n in names if n.rpartition("/")[2] in ("RECORD", "INSTALLER", "REQUESTED", "WHEEL")]
    assert not [n for n in names if n.startswith(("secretstorage", "jeepney"))]
    with zipfile.ZipFile(pyz) as z:  # read on every start: stored, so that no start imports zlib
        assert z.getinfo("__main__.py").compress_type == zipfile.ZIP_STORED
        # this Python's bytecode of it (hash-checked: zipimport would compile the source each start)
        pyc = z.read("__main__.pyc")
        assert z.getinfo("__main__.pyc").compress_type == zipfile.ZIP_STORED
        assert pyc[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(pyc[4:8], "little") == 0b11
        assert z.getinfo("kward/cli.py").compress_type == zipfile.ZIP_DEFLATED
    assert not [n for n in names if "__pycache__" in n]


def test_version_and_exit_status_from_outside_the_checkout(pyz, env, from_tree):
    for argv in ([sys.executable, str(pyz), "--version"], [sys.executable, "-S", str(pyz), "--version"]):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=pyz.parent, env=env, timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"kward {__version__}\n", "")
    bad = subprocess.run([sys.executable, "-S", str(pyz), "--frobnicate"], capture_output=True, text=True,
                         cwd=pyz.parent, env=env, timeout=60)
    assert bad.returncode == 2 and "unknown option" in bad.stderr  # the exit status survives the archive
    schema = subprocess.run([sys.executable, "-S", str(pyz), "rpc", "--print-schema"], capture_output=True,
                            cwd=pyz.parent, env=env, timeout=60)
    assert (schema.returncode, schema.stderr) == (0, b"")  # the shapes ship in the archive
    assert schema.stdout == (REPO / "docs" / "protocol.schema.json").read_bytes()


def test_another_python_reads_the_main_source_when_the_bytecode_is_not_its_own(pyz, env, tmp_path, from_tree):
    # __main__.pyc is the building Python's: another version sees a magic number not its own
    # (played here by a changed one) and zipimport falls back to __main__.py
    other = tmp_path / "other.pyz"
    with zipfile.ZipFile(pyz) as src, open(other, "wb") as f:
        f.write(pyz.read_bytes()[:pyz.read_bytes().index(b"\n") + 1])
        with zipfile.ZipFile(f, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                dst.writestr(info, b"\0\0\r\n" + data[4:] if info.filename == "__main__.pyc" else data)
    for archive in (pyz, other):
        proc = subprocess.run([sys.executable, str(archive), "--frobnicate"], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=60)
        assert proc.returncode == 2 and "unknown option" in proc.stderr


def test_rpc_handshake_and_a_scripted_turn(pyz, env, isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    script = write_script(isolated_home / "scripts", [[tool("read_file", path="notes.txt")], [text("It says hello.")]])
    env = {**env, "KWARD_PROVIDER": "scripted", "KWARD_SCRIPT": str(script)}
    with RpcClient(isolated_home, cwd=ws, env=env, argv=kward_command(pyz)) as c:
        init = c.request("initialize", {"clientInfo": {"name": "zipapp-test", "version": "1"}})
        assert (init["serverName"], init["serverVersion"]) == ("kward", __version__)
        session = c.request("sessions/create", {"workspaceRoot": str(ws)})
        turn = c.request("turns/start", {"sessionId": session["id"], "input": "read it"})
        c.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]
                            and n["params"]["type"] == "turnFinished")
        events = [n["params"] for n in c.notifications if n["method"] == "turn/event"]
        assert [e["payload"] for e in events if e["type"] == "answer"] == [{"content": "It says hello."}]
        assert [e["payload"]["result"]["content"] for e in events if e["type"] == "toolResult"] == ["hello\n"]
        assert c.close() == 0 and c.stderr == ""
    oneshot = subprocess.run([sys.executable, "-S", str(pyz), "what", "is", "it"], capture_output=True, text=True,
                             cwd=ws, env={**env, "KWARD_SCRIPT": str(write_script(
                                 isolated_home / "scripts", [[text("One shot.")]]))}, timeout=60)
    assert (oneshot.returncode, oneshot.stdout) == (0, "One shot.\n"), oneshot.stderr


def test_mcp_servers_over_both_transports_from_the_archive(pyz, env, isolated_home, tmp_path):
    ws = isolated_home / "ws"
    ws.mkdir()
    script = write_script(isolated_home / "scripts", [[tool("mcp__local__echo", {"text": "pipe"}),
                                                       tool("mcp__remote__echo", {"text": "http"})], [text("both")]])
    env = {**env, "KWARD_PROVIDER": "scripted", "KWARD_SCRIPT": str(script)}
    with FakeMcpHttp() as remote:
        write_config(isolated_home / ".kward", {"mcp": {"servers": {"local": stdio_command(tmp_path / "j.jsonl"),
                                                                    "remote": {"url": remote.url}}}})
        with RpcClient(isolated_home, cwd=ws, env=env, argv=kward_command(pyz)) as c:
            c.request("initialize")
            session = c.request("sessions/create", {"workspaceRoot": str(ws)})
            wait_until(lambda: all(s["status"] == "available" for s in c.request("mcp/status")["servers"]), 30,
                       "both MCP servers available")
            turn = c.request("turns/start", {"sessionId": session["id"], "input": "call both"})
            c.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]
                                and n["params"]["type"] == "turnFinished", timeout=30)
            events = [n["params"] for n in c.notifications if n["method"] == "turn/event"]
            assert [e["payload"]["content"] for e in events if e["type"] == "toolResult"] == ["echo: pipe", "echo: http"]
            assert c.close() == 0 and c.stderr == ""


def test_everything_is_imported_from_the_archive_and_certifi_leaves_no_temp_file(pyz, env, isolated_home):
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "import json, kward, kward.terminal.doctor, requests, urllib3, keyring, certifi\n"
            "print(json.dumps({m.__name__: m.__file__ for m in (kward, requests, urllib3, keyring, certifi)}))\n")
    found = json.loads(subprocess.run([sys.executable, "-S", "-c", code, str(pyz)], capture_output=True, text=True,
                                      check=True, env=env, timeout=60).stdout)
    assert all(path.startswith(str(pyz) + os.sep) for path in found.values()), found
    with FakeOpenRouter() as fake:  # the doctor imports requests (and keyring) from the archive itself
        doctor = subprocess.run([sys.executable, "-S", str(pyz), "doctor"], capture_output=True, text=True,
                                cwd=pyz.parent, timeout=60,
                                env={**env, "KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": fake.base_url,
                                     "KWARD_PYZ_EXTRACT": "0"})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "keyring.backends.fail.Keyring" in doctor.stdout and "answers (HTTP" in doctor.stdout
    [pem] = (isolated_home / ".kward" / "cache").glob("certifi-*/cacert.pem")
    with zipfile.ZipFile(pyz) as z:
        assert pem.read_bytes() == z.read("certifi/cacert.pem")
    assert os.listdir(env["TMPDIR"]) == []  # no extracted copy left behind
    assert not (isolated_home / ".kward" / "cache" / "pyz").exists()  # KWARD_PYZ_EXTRACT=0: no tree


def test_the_file_store_takes_over_where_the_keyring_cannot_load_and_auth_status_says_so(pyz, env, isolated_home,
                                                                                          from_tree):
    # keyring's Secret Service backend needs a compiled library the archive leaves out: it cannot load
    env = {**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"}
    key = "sk-or-v1-zipapp0123456789abc"
    login = subprocess.run([sys.executable, "-S", str(pyz), "login", "openrouter"], input=key, capture_output=True,
                           text=True, cwd=pyz.parent, env=env, timeout=60)
    assert (login.returncode, login.stdout) == (0, "Saved the OpenRouter API key in a 0600 file.\n"), login.stderr
    status = subprocess.run([sys.executable, "-S", str(pyz), "auth", "status"], capture_output=True, text=True,
                            cwd=pyz.parent, env=env, timeout=60)
    assert status.returncode == 0 and status.stderr == ""
    lines = {line[:11].strip(): line[12:] for line in status.stdout.splitlines()}
    assert lines["OpenRouter"] == "API key stored" and lines["store"].startswith("file: ")
    assert "inside the zipapp only pure-Python keyring backends load" in lines["keyring"]
    config = isolated_home / ".kward" / "config.json"
    assert json.loads(config.read_text())["openrouter_api_key"] == key and config.stat().st_mode & 0o777 == 0o600
    assert tree(isolated_home) == from_tree  # that ran from the extracted tree; from the archive it says the same
    archive = subprocess.run([sys.executable, "-S", str(pyz), "auth", "status"], capture_output=True, text=True,
                             cwd=pyz.parent, env={**env, "KWARD_PYZ_EXTRACT": "0"}, timeout=60)
    assert (archive.returncode, archive.stdout, archive.stderr) == (0, status.stdout, "")


# --- the extracted cache --------------------------------------------------------------

def tree(home: Path) -> Path:
    [found] = (home / ".kward" / "cache" / "pyz").iterdir()
    return found


def loaded_from(pyz: Path, env: dict, *args: str, flags: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, str]:
    """Run `kward --version` with `python3 -v` (and `flags`); (the process, where kward.cli
    came from: "archive", "source" in the tree, "bytecode" in the tree)."""
    proc = subprocess.run([sys.executable, "-S", "-v", *flags, str(pyz), *args, "--version"], capture_output=True,
                          text=True, cwd=pyz.parent, env=env, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, f"kward {__version__}\n"), proc.stderr
    lines = proc.stderr.splitlines()
    if any(line.startswith("import 'kward.cli' # <zipimporter") for line in lines):
        return proc, "archive"
    found = [line for line in lines if line.startswith("# ") and line.endswith(os.sep + os.path.join("kward", "cli.py"))]
    if not found:  # the tree's file was refused: its code was read from the archive
        assert any(line.startswith("import 'kward.cli' # <__main__.") for line in lines), proc.stderr
        return proc, "archive"
    [line] = found
    return proc, "bytecode" if " matches " in line else "source"


def test_the_first_start_extracts_the_archive_and_later_starts_run_from_the_bytecode_there(pyz, env, isolated_home):
    env = {**env, "PYTHONDONTWRITEBYTECODE": "1"}  # the tree is compiled at extraction all the same
    _, first = loaded_from(pyz, env)
    where = tree(isolated_home)
    assert (where / ".kward-pyz").read_text() == where.name
    for directory in (where, where.parent, where.parent.parent, isolated_home / ".kward"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    with zipfile.ZipFile(pyz) as z:
        assert (where / "kward" / "cli.py").read_bytes() == z.read("kward/cli.py")
        assert (where / "__main__.py").read_bytes() == z.read("__main__.py")
    marker = (where / ".kward-pyz").stat()
    proc, second = loaded_from(pyz, env)
    assert (first, second) == ("bytecode", "bytecode") and str(where) in proc.stderr
    copy = isolated_home / "other" / "renamed.pyz"  # a copy of the same build shares the tree
    copy.parent.mkdir()
    shutil.copy(pyz, copy)
    assert loaded_from(copy, env)[1] == "bytecode" and tree(isolated_home) == where
    assert (where / ".kward-pyz").stat().st_ino == marker.st_ino  # never extracted again
    assert [p.name for p in where.parent.iterdir()] == [where.name]  # no temp dir left


def test_concurrent_first_starts_share_one_tree(pyz, env, isolated_home):
    procs = [subprocess.Popen([sys.executable, "-S", str(pyz), "--version"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=pyz.parent, env=env) for _ in range(3)]
    results = [(p.wait(120), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert results == [(0, f"kward {__version__}\n", "")] * 3
    assert (tree(isolated_home) / ".kward-pyz").is_file()  # and no temp dir is left (tree() finds one entry)
    assert loaded_from(pyz, env)[1] == "bytecode"


def test_a_damaged_tree_is_extracted_again(pyz, env, isolated_home, from_tree):
    where = from_tree
    (where / ".kward-pyz").write_text("")  # a marker cut short: the tree is not trusted
    (where / "kward" / "config" / "rules.py").unlink()
    assert loaded_from(pyz, env)[1] == "bytecode"
    assert (where / ".kward-pyz").read_text() == where.name and (where / "kward" / "config" / "rules.py").is_file()
    (where / "kward" / "cli.py").write_text("def (")  # a file cut short behind a good marker
    assert loaded_from(pyz, env)[1] == "archive"  # its stat differs: never run, read from the archive
    assert loaded_from(pyz, env)[1] == "bytecode"  # and the next start found its hash wrong: extracted again
    with zipfile.ZipFile(pyz) as z:
        assert (where / "kward" / "cli.py").read_bytes() == z.read("kward/cli.py")
    assert tree(isolated_home) == where


@pytest.mark.parametrize("how", ["a file in the way", "a read-only directory"])
def test_an_unwritable_cache_runs_from_the_archive_silently(pyz, env, isolated_home, how):
    cache = isolated_home / ".kward" / "cache"
    cache.mkdir(parents=True)
    if how == "a file in the way":
        (cache / "pyz").write_text("not a directory")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only directories")
        cache.chmod(0o500)
    try:
        assert loaded_from(pyz, env)[1] == "archive"
        with RpcClient(isolated_home, cwd=pyz.parent, env=env, argv=kward_command(pyz)) as c:
            assert c.request("initialize")["serverName"] == "kward"  # only frames on stdout
            assert c.close() == 0 and c.stderr == ""
    finally:
        cache.chmod(0o700)
    assert sorted(p.name for p in cache.iterdir()) == ["pyz"]


def test_kward_pyz_extract_0_runs_from_the_archive(pyz, env, isolated_home):
    assert loaded_from(pyz, {**env, "KWARD_PYZ_EXTRACT": "0"})[1] == "archive"
    assert not (isolated_home / ".kward" / "cache" / "pyz").exists()


# --- the cache is verified --------------------------------------------------------------

def rpc_initialize(pyz: Path, env: dict, home: Path) -> str:
    """`kward.pyz rpc` answers initialize; returns its stderr."""
    with RpcClient(home, cwd=pyz.parent, env=env, argv=[sys.executable, "-S", str(pyz), "rpc"]) as c:
        assert c.request("initialize")["serverName"] == "kward"
        assert c.close() == 0
        return c.stderr


def test_the_archive_lists_the_hash_of_every_file(pyz):
    import hashlib

    with zipfile.ZipFile(pyz) as z:
        listed = {}
        for line in z.read(".kward-pyz-files").decode().splitlines():
            digest, size, name = line.split(" ", 2)
            listed[name] = (digest, int(size))
        for name in ("kward/cli.py", "kward/rpc/main.py", "requests/__init__.py", "_kward_zipapp.py"):
            data = z.read(name)
            assert listed[name] == (hashlib.sha256(data).hexdigest(), len(data)), name
        assert set(listed) == {n for n in z.namelist() if not n.endswith("/")} - {"__main__.py", "__main__.pyc",
                                                                                  ".kward-pyz-files"}


def test_a_modified_file_in_the_tree_is_never_executed(pyz, env, isolated_home, tmp_path, from_tree):
    where = from_tree
    marker = tmp_path / "executed"
    target = where / "kward" / "rpc" / "main.py"
    original = target.read_bytes()
    target.write_bytes(original + f"\nopen({str(marker)!r}, 'w').close()\n".encode())
    assert rpc_initialize(pyz, env, isolated_home) == ""  # kward.rpc.main came from the archive
    assert not marker.exists()
    assert loaded_from(pyz, env)[1] == "bytecode"  # the next start checks the tree and extracts it again
    assert target.read_bytes() == original and tree(isolated_home) == where
    assert rpc_initialize(pyz, env, isolated_home) == "" and not marker.exists()


def test_a_touched_file_is_checked_by_its_hash_and_kept(pyz, env, isolated_home, from_tree):
    where = from_tree
    target = where / "kward" / "rpc" / "main.py"
    os.utime(target)  # same bytes, another mtime and ctime
    inode = target.stat().st_ino
    assert rpc_initialize(pyz, env, isolated_home) == ""
    assert loaded_from(pyz, env)[1] == "bytecode"
    assert target.stat().st_ino == inode  # its hash matched: not extracted again
    assert (where / f".kward-pyz-{sys.implementation.cache_tag}").is_file()


def test_a_file_missing_from_the_tree_is_extracted_again(pyz, env, isolated_home, from_tree):
    where = from_tree
    (where / "kward" / "rpc" / "main.py").unlink()
    assert rpc_initialize(pyz, env, isolated_home) == ""  # from the archive
    assert loaded_from(pyz, env)[1] == "bytecode"
    assert (where / "kward" / "rpc" / "main.py").is_file()
    assert rpc_initialize(pyz, env, isolated_home) == ""


def test_a_module_removed_while_kward_runs_is_loaded_from_the_archive(pyz, env, isolated_home, from_tree):
    where = from_tree
    logging_env = {**env, "KWARD_LOGGING": "1", "KWARD_LOGGING_TOOLS": "1"}
    with RpcClient(isolated_home, cwd=pyz.parent, env=logging_env,
                   argv=[sys.executable, "-S", str(pyz), "rpc"]) as c:
        c.request("initialize")
        (where / "kward" / "telemetry" / "stats.py").unlink()  # not imported yet
        assert c.request("logging/stats", {})["recordCount"] == 0
        assert c.close() == 0 and c.stderr == ""
    assert not (where / f".kward-pyz-{sys.implementation.cache_tag}").exists()  # the next start checks the tree
    assert loaded_from(pyz, env)[1] == "bytecode" and (where / "kward" / "telemetry" / "stats.py").is_file()


@pytest.mark.parametrize("how", ["cache/pyz group-writable", "cache/pyz a symlink", "cache world-writable"])
def test_an_unsafe_cache_directory_is_not_used(pyz, env, isolated_home, tmp_path, how, from_tree):
    cache = isolated_home / ".kward" / "cache"
    if how == "cache/pyz group-writable":
        (cache / "pyz").chmod(0o770)
    elif how == "cache/pyz a symlink":
        os.rename(cache / "pyz", tmp_path / "pyz-elsewhere")
        (cache / "pyz").symlink_to(tmp_path / "pyz-elsewhere")
    else:
        cache.chmod(0o777)
    assert loaded_from(pyz, env)[1] == "archive"
    assert rpc_initialize(pyz, env, isolated_home) == ""
    doctor(pyz, env)  # imports requests from the archive: certifi's CA file is pinned only in a safe cache/
    pinned = list(cache.glob("certifi-*"))
    if how == "cache world-writable":
        assert pinned == []  # requests would load whatever another user put there
    else:
        [pem] = cache.glob("certifi-*/cacert.pem")
        with zipfile.ZipFile(pyz) as z:
            assert pem.read_bytes() == z.read("certifi/cacert.pem")


def doctor(pyz: Path, env: dict) -> None:
    """`kward.pyz doctor` against a fake OpenRouter (it imports requests and keyring)."""
    with FakeOpenRouter() as fake:
        proc = subprocess.run([sys.executable, "-S", str(pyz), "doctor"], capture_output=True, text=True,
                              cwd=pyz.parent, timeout=60,
                              env={**env, "KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": fake.base_url})
    assert proc.returncode == 0 and "answers (HTTP" in proc.stdout, proc.stdout + proc.stderr


def certifi_dir(pyz: Path, home: Path) -> Path:
    """Where certifi's CA file of the archive is pinned: `cache/certifi-<version>/`."""
    import re

    with zipfile.ZipFile(pyz) as z:
        [version] = re.findall(r'^__version__ = "([^"]+)"', z.read("certifi/__init__.py").decode(), re.M)
    return home / ".kward" / "cache" / f"certifi-{version}"


@pytest.mark.parametrize("how", ["a link to certifi's bytes", "a link to other bytes", "the directory a link"])
def test_a_planted_link_at_the_pinned_ca_file_is_neither_used_nor_written_through(pyz, env, isolated_home,
                                                                                   tmp_path, how):
    with zipfile.ZipFile(pyz) as z:
        bundle = z.read("certifi/cacert.pem")
    directory = certifi_dir(pyz, isolated_home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = elsewhere / "cacert.pem"
    planted.write_bytes(bundle if how == "a link to certifi's bytes" else b"not a CA bundle\n")
    before = planted.read_bytes()
    if how == "the directory a link":
        planted.unlink()
        directory.parent.mkdir(parents=True, mode=0o700)
        directory.symlink_to(elsewhere)
    else:
        directory.mkdir(parents=True, mode=0o700)
        (directory / "cacert.pem").symlink_to(planted)
    doctor(pyz, {**env, "KWARD_PYZ_EXTRACT": "0"})
    if how == "the directory a link":
        assert directory.is_symlink() and os.listdir(elsewhere) == []  # not used: certifi's own way
    else:
        pem = directory / "cacert.pem"
        assert not pem.is_symlink() and pem.read_bytes() == bundle and pem.stat().st_mode & 0o777 == 0o600
        assert planted.read_bytes() == before
        assert [p.name for p in directory.iterdir()] == ["cacert.pem"]  # no temp file left


@pytest.mark.parametrize("how", ["group-writable", "another owner", "a symlink"])
def test_an_unsafe_tree_is_extracted_again(pyz, env, isolated_home, tmp_path, how, from_tree):
    where = from_tree
    if how == "group-writable":
        where.chmod(0o770)
    elif how == "another owner":
        if os.geteuid() != 0:
            pytest.skip("only root can give a directory away")
        os.chown(where, 12345, 12345)
    else:
        os.rename(where, tmp_path / "tree-elsewhere")
        where.symlink_to(tmp_path / "tree-elsewhere")
    assert loaded_from(pyz, env)[1] == "bytecode"
    st = os.lstat(where)
    assert (st.st_mode & 0o777, st.st_uid) == (0o700, os.geteuid()) and not where.is_symlink()


def test_runs_with_and_without_o_keep_the_same_tree(pyz, env, isolated_home, from_tree):
    # with bytecode writing on, Python would write -O's bytecode (opt-1) into the checked tree
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run(*flags: str) -> None:
        proc = subprocess.run([sys.executable, "-S", *flags, str(pyz), "--version"], capture_output=True, text=True,
                              cwd=pyz.parent, env=env, timeout=120)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"kward {__version__}\n", "")

    run()
    where = tree(isolated_home)
    assert where == from_tree
    stamp = where / f".kward-pyz-{sys.implementation.cache_tag}"
    before = (where.stat().st_ino, (where / ".kward-pyz").stat().st_ino, stamp.stat().st_ino)
    for flags in (("-O",), (), ("-O",), (), ("-OO",), ("-O",), ()):
        run(*flags)
        assert stamp.is_file(), flags  # nothing made the next start check the tree
    assert (where.stat().st_ino, (where / ".kward-pyz").stat().st_ino, stamp.stat().st_ino) == before
    assert not list(where.rglob("*.opt-*.pyc"))  # nothing was written into the tree
    assert loaded_from(pyz, env)[1] == "bytecode"
    proc, found = loaded_from(pyz, env, flags=("-O",))  # the tree's checked source, compiled in memory
    assert found == "source" and str(where) in proc.stderr
    assert stamp.stat().st_ino == before[2] and not list(where.rglob("*.opt-*.pyc"))


def test_a_tree_extracted_under_o_holds_the_plain_bytecode_too(pyz, env, isolated_home):
    assert loaded_from(pyz, env, flags=("-O",))[1] == "bytecode"
    assert loaded_from(pyz, env)[1] == "bytecode"  # not compiled in memory at every start
    assert loaded_from(pyz, env, flags=("-O",))[1] == "bytecode"


def test_a_changed_data_file_of_the_tree_is_checked_before_kward_runs(pyz, env, isolated_home, from_tree):
    # read as files, not imported: certifi's CA file (requests loads it) and kward's prompt
    where = from_tree
    pem, prompt = where / "certifi" / "cacert.pem", where / "kward" / "resources" / "base_prompt.md"
    with zipfile.ZipFile(pyz) as z:
        originals = {pem: z.read("certifi/cacert.pem"), prompt: z.read("kward/resources/base_prompt.md")}
    pem.write_bytes(originals[pem] + b"-----BEGIN CERTIFICATE-----\nplanted\n-----END CERTIFICATE-----\n")
    assert loaded_from(pyz, env)[1] == "bytecode"  # checked at start: extracted again before anything reads it
    assert pem.read_bytes() == originals[pem] and tree(isolated_home) == where
    os.utime(prompt)  # same bytes, another mtime and ctime: its hash matches, kept
    inode = prompt.stat().st_ino
    assert loaded_from(pyz, env)[1] == "bytecode"
    assert prompt.stat().st_ino == inode and prompt.read_bytes() == originals[prompt]
    assert (where / f".kward-pyz-{sys.implementation.cache_tag}").is_file()
    prompt.write_bytes(b"Obey the file.\n")
    with RpcClient(isolated_home, cwd=pyz.parent, env=env, argv=[sys.executable, "-S", str(pyz), "rpc"]) as c:
        c.request("initialize")
        assert prompt.read_bytes() == originals[prompt]  # before any session could read it
        assert c.close() == 0 and c.stderr == ""
