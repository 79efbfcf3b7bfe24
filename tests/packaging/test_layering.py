"""Imports point downward: nothing under the core imports kward.rpc. Only the RPC package
itself and the faces above it (kward/client/, the command line) may."""

import ast

from lib.paths import REPO

KWARD = REPO / "kward"
ABOVE_RPC = {"rpc", "client", "cli.py", "__main__.py"}  # relative to kward/


def rpc_imports(source: str, module: str, target: str = "kward.rpc") -> list[str]:
    """The imports of kward.rpc (or `target`, or anything in it) in `source`, the code of
    `module` (dotted, for relative imports); also importlib-style string imports."""
    found = []
    leaf = target.rsplit(".", 1)[1]
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == target or a.name.startswith(target + ".")]
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:  # relative: resolve against the importing package
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([name] if name else []))
            if name == target or name.startswith(target + "."):
                found.append(name)
            elif name == target.rsplit(".", 1)[0] and any(a.name == leaf for a in node.names):
                found.append(target)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                (node.value == target or node.value.startswith(target + ".")) and " " not in node.value:
            found.append(node.value)  # e.g. importlib.import_module("kward.rpc.x")
    return found


def core_modules():
    for path in sorted(KWARD.rglob("*.py")):
        rel = path.relative_to(KWARD)
        if rel.parts[0] in ABOVE_RPC:
            continue
        yield path, "kward." + ".".join(rel.with_suffix("").parts)


def test_no_core_module_imports_kward_rpc():
    modules = list(core_modules())
    assert any(name == "kward.runtime.facade" for _, name in modules)  # the walk sees the core
    offenders = {name: rpc_imports(path.read_text(encoding="utf-8"), name) for path, name in modules}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_check_finds_every_form_of_import():
    for source in ["import kward.rpc", "import kward.rpc.server as s", "from kward.rpc import protocol",
                   "from kward.rpc.method_table import Call", "from kward import rpc",
                   "def f():\n    from kward.rpc.params import Params",
                   "importlib.import_module('kward.rpc.methods.turns')"]:
        assert rpc_imports(source, "kward.agent.loop"), source
    assert rpc_imports("from ..rpc import server", "kward.agent.loop") == ["kward.rpc"]
    assert rpc_imports("from . import rpc", "kward.sessions.x") == []  # kward.sessions.rpc is not kward.rpc
    for source in ["import kward.rpcx", "from kward import runtime", "x = 'see kward.rpc for the wire'"]:
        assert rpc_imports(source, "kward.agent.loop") == [], source


def test_no_core_code_reads_tool_calls_from_records():
    """Tool calls are `kward.model.ToolCall`s everywhere but at the two converters (the
    session codec and the RPC face): no other module indexes a record's `function`."""
    converters = {KWARD / "sessions" / "codec.py"}
    found = []
    for path in sorted(KWARD.rglob("*.py")):
        if path in converters or path.relative_to(KWARD).parts[0] == "rpc":
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in ('["function"]', "['function']"):
            if pattern in text:
                found.append(f"{path.relative_to(KWARD)}: {pattern}")
    assert found == []
    codec = (KWARD / "sessions" / "codec.py").read_text(encoding="utf-8")
    assert '"function"' in codec  # the check looks where the records are read


def test_sessions_do_not_import_the_tools():
    """The session store sits below the tools: the read-before-write rule is
    `kward.readstate`'s, call normalization `kward.toolcalls`'."""
    modules = [(p, "kward." + ".".join(p.relative_to(KWARD).with_suffix("").parts))
               for p in sorted((KWARD / "sessions").rglob("*.py"))]
    assert any(name == "kward.sessions.replay" for _, name in modules)
    offenders = {name: rpc_imports(path.read_text(encoding="utf-8"), name, "kward.tools") for path, name in modules}
    assert {name: found for name, found in offenders.items() if found} == {}
    assert rpc_imports("from kward import tools", "kward.sessions.x", "kward.tools") == ["kward.tools"]
    assert rpc_imports("from kward.tools.base import X", "kward.sessions.x", "kward.tools")
    assert rpc_imports("from kward.toolcalls import X", "kward.sessions.x", "kward.tools") == []
