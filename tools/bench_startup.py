"""Start-up benchmarks: what a user's process costs before it is useful.

`bench(quick)` returns rows `{"name", "value", "unit", "target"}` for `tools/bench.py`
(section `startup`); `python3 tools/bench_startup.py [--quick]` prints them alone.

Two settings, each against `python3 -c pass` of the same interpreter, interleaved run by
run so that machine noise hits every figure alike (medians of 21 runs, 10 with --quick):

- the checkout: `python3 -m kward rpc` to the `initialize` response with the running
  interpreter (what a developer's checkout costs; this machine's interpreter loads site
  `.pth` hooks, so even `-c pass` is slow here);
- a user's install: a fresh virtual environment in a temp dir, without pip and
  without the system site-packages, with the wheel built from the working tree installed
  into it (as tests/packaging/test_install.py does; kward's two dependencies are borrowed from the
  running interpreter through a `.pth` line, so no package index is needed): the
  installed `kward --version`, `kward help`, `kward rpc` to the `initialize` response, and
  `python3 kward.pyz rpc` (tools/build_zipapp.py into the temp dir, as built by default
  and with `--compile`) with the venv's interpreter: the default build from its extracted
  cache (the first of the interleaved runs extracts it), from inside the archive
  (`KWARD_PYZ_EXTRACT=0`) and, with a new home each time, its first start;
- one-shot `kward PROMPT` (the installed script) against a loopback fake OpenRouter and
  with the Scripted provider: spawn to the first answer byte on stdout.

The virtual environment is made once per run (`venv()`) and shared with bench_warmup.

The `initialize` exchange is written and read here with kward's framing on the pipes
directly, not through `kward.client`: `Client.spawn` starts two threads and hands the
answer over between them, which added 1.6-2.6 ms to each measured start (41 interleaved
runs, against ~30 ms), as much as the difference the figures are meant to show.
"""

from __future__ import annotations

import atexit
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tools"))

from bench import env_for, frame, read_frame  # noqa: E402
from tree_venv import export_tree, install, run  # noqa: E402

_VENV: dict[str, Path] = {}


def venv() -> dict[str, Path]:
    """{"root", "python", "kward", "pyz", "pyz_compiled"}: built once per run in a temp dir
    (tree_venv.install of a copy of the working tree, then the two zipapps)."""
    if _VENV:
        return _VENV
    root = Path(tempfile.mkdtemp(prefix="kward-bench-venv-"))
    atexit.register(shutil.rmtree, root, True)  # shared by the sections of one run, removed at its end
    _VENV.update(install(export_tree("WORKTREE", root / "src"), root))
    build = [sys.executable, str(REPO / "tools" / "build_zipapp.py")]
    run(build + ["--output", str(root / "kward.pyz")])
    run(build + ["--compile", "--output", str(root / "compiled" / "kward.pyz")])
    _VENV.update(pyz=root / "kward.pyz", pyz_compiled=root / "compiled" / "kward.pyz")
    return _VENV


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment that knows nothing of the checkout (no PYTHONPATH)."""
    env = env_for(home)
    env.pop("PYTHONPATH", None)
    for key in ("OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY", "KWARD_PROVIDER", "KWARD_LOG_LEVEL", "KWARD_SCRIPT"):
        env.pop(key, None)
    env.update(extra)
    return env


# --- measurements ------------------------------------------------------------------------

def time_command(cmd: list[str], env: dict, cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def time_initialize(cmd: list[str], env: dict, cwd: Path) -> float:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    p.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
    p.stdin.flush()
    msg = read_frame(p.stdout)
    elapsed = time.perf_counter() - t0
    assert msg and msg.get("id") == 1 and "result" in msg, msg
    p.stdin.close()
    p.wait(10)
    p.stdout.close()
    return elapsed


def time_first_byte(cmd: list[str], env: dict, cwd: Path) -> float:
    """Spawn to the first byte on stdout (the process is then waited for)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env, cwd=cwd)
    first = p.stdout.read(1)
    elapsed = time.perf_counter() - t0
    rest = p.stdout.read()
    assert p.wait(30) == 0 and first, (first, rest)
    p.stdout.close()
    return elapsed


def interleaved(runs: int, cases: dict) -> dict[str, float]:
    """Median seconds of each case (name -> zero-argument callable), run in turn."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            times[name].append(case())
    return {name: statistics.median(values) for name, values in times.items()}


def _row(name: str, value: float, unit: str, target: str = "-") -> dict:
    return {"name": name, "value": value, "unit": unit, "target": target}


def bench_checkout(runs: int) -> list[dict]:
    home = Path(tempfile.mkdtemp(prefix="kward-bench-"))
    env = env_for(home)
    py = sys.executable
    m = interleaved(runs, {
        "pass": lambda: time_command([py, "-c", "pass"], env, home),
        "rpc": lambda: time_initialize([py, "-m", "kward", "rpc"], env, home),
        "version": lambda: time_command([py, "-m", "kward", "--version"], env, home),
    })
    return [
        _row(f"baseline: python3 -c pass (median of {runs})", m["pass"] * 1000, "ms"),
        _row(f"kward rpc: spawn to initialize response (median of {runs})", m["rpc"] * 1000, "ms", "<= 2x baseline"),
        _row("kward rpc start-up / baseline", m["rpc"] / m["pass"], "x", "<= 2"),
        _row(f"python3 -m kward --version (median of {runs})", m["version"] * 1000, "ms"),
    ]


def bench_installed(runs: int) -> list[dict]:
    v = venv()
    home = Path(tempfile.mkdtemp(prefix="kward-bench-"))
    env = user_env(home)
    py, kward = str(v["python"]), str(v["kward"])
    archive_env = {**env, "KWARD_PYZ_EXTRACT": "0"}
    m = interleaved(runs, {
        "pass": lambda: time_command([py, "-c", "pass"], env, home),
        "version": lambda: time_command([kward, "--version"], env, home),
        "help": lambda: time_command([kward, "help"], env, home),
        "rpc": lambda: time_initialize([kward, "rpc"], env, home),
        "pyz": lambda: time_initialize([py, str(v["pyz"]), "rpc"], env, home),
        "pyza": lambda: time_initialize([py, str(v["pyz"]), "rpc"], archive_env, home),
        "pyzc": lambda: time_initialize([py, str(v["pyz_compiled"]), "rpc"], env, home),
    })
    b = m["pass"]
    rows = [_row(f"venv baseline: python3 -c pass (median of {runs})", b * 1000, "ms")]
    for key, label, target in (
            ("version", "installed `kward --version`", "-"),
            ("help", "installed `kward help`", "-"),
            ("rpc", "installed `kward rpc` console script: spawn to initialize response", "<= 2.5"),
            ("pyz", "`python3 kward.pyz rpc` (default build, sources only; from its extracted cache): spawn to "
                    "initialize response", "<= 2.5"),
            ("pyza", "`python3 kward.pyz rpc` (default build, KWARD_PYZ_EXTRACT=0: from inside the archive): spawn to "
                     "initialize response", "-"),
            ("pyzc", "`python3 kward.pyz rpc` (built with --compile): spawn to initialize response", "info")):
        rows.append(_row(f"{label} (median of {runs})", m[key] * 1000, "ms"))
        rows.append(_row(f"{label} / baseline", m[key] / b, "x", target))
    first = []
    for _ in range(max(3, runs // 4)):  # a new home each time: the start that extracts the archive
        fresh = Path(tempfile.mkdtemp(prefix="kward-bench-"))
        first.append(time_initialize([py, str(v["pyz"]), "rpc"], user_env(fresh), fresh))
    rows.append(_row(f"`python3 kward.pyz rpc` (default build): first start, extracting and byte-compiling into the "
                     f"cache (median of {len(first)})", statistics.median(first) * 1000, "ms", "info"))
    return rows


def bench_oneshot(runs: int) -> list[dict]:
    from lib import fake_openrouter as fo

    v = venv()
    home = Path(tempfile.mkdtemp(prefix="kward-bench-"))
    work = home / "project"
    work.mkdir()
    (work / "README.md").write_text("# Widget\n")
    script = home / "script.json"
    script.write_text(json.dumps({"steps": [[{"type": "text", "text": "Hello there."}]], "loop": True}))
    kward = str(v["kward"])
    rows = []
    with fo.FakeOpenRouter() as fake:
        def routed() -> float:
            fake.script("chat", fo.text(("Hel", "lo")))
            return time_first_byte([kward, "say hello"], env_http, work)

        env_http = user_env(home, KWARD_PROVIDER="openrouter", KWARD_OPENROUTER_BASE_URL=fake.base_url,
                            OPENROUTER_API_KEY="sk-or-v1-bench-0000000000000000", KWARD_RETRY_DELAYS="")
        env_scripted = user_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
        m = interleaved(runs, {
            "pass": lambda: time_command([str(v["python"]), "-c", "pass"], env_scripted, work),
            "http": routed,
            "scripted": lambda: time_first_byte([kward, "say hello"], env_scripted, work),
        })
    rows += [
        _row(f"venv baseline: python3 -c pass (median of {runs})", m["pass"] * 1000, "ms"),
        _row(f"one-shot `kward PROMPT`, loopback fake OpenRouter: spawn to first answer byte on stdout "
             f"(median of {runs})", m["http"] * 1000, "ms", "info"),
        _row(f"one-shot `kward PROMPT`, Scripted provider: spawn to first answer byte on stdout (median of {runs})",
             m["scripted"] * 1000, "ms", "info"),
    ]
    return rows


def bench(quick: bool = False) -> list[dict]:
    runs = 10 if quick else 21
    return bench_checkout(runs) + bench_installed(runs) + bench_oneshot(max(5, runs // 2))


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})", flush=True)
