"""The provider table (kward/providers/specs.py): one table that names, chooses,
builds and lists every provider. Adding a provider is one entry and one module: a copy of
kward with an extra entry serves it through `kward rpc` (selection, its config keys and
their check, models, a turn, the steering capability) with no other change."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kward
from kward.config import rules
from kward.providers import specs
from kward.providers.base import Provider
from lib.loopback_kward import create_session, run_turn, workspace
from lib.rpc_client import RpcClient, kward_env
from lib.turn_events import deltas, finished


@pytest.mark.parametrize("name, key", [
    ("codex", "codex"), (" Codex ", "codex"), ("OPENROUTER", "openrouter"), ("OpenAICompatible", "openai-compatible"),
    ("openai_compatible", "openai-compatible"), ("openai-compat", "openai-compatible"), ("Scripted", "scripted"),
])
def test_every_spelling_of_a_provider_names_its_spec(name, key):
    assert specs.find(name).key == key
    assert rules.PROVIDER.normalize(name) == key  # the `provider` setting accepts the same names


@pytest.mark.parametrize("name", ["", "copilot", "open ai", None, 5])
def test_anything_else_names_no_provider(name):
    assert specs.find(name) is None
    with pytest.raises(rules.Invalid, match="^must be one of codex, openrouter, openai-compatible, scripted$"):
        rules.PROVIDER.normalize(name)


def test_every_spec_names_a_class_that_builds_itself_and_code_that_exists():
    for spec in specs.PROVIDERS:
        cls = specs.provider_class(spec)
        assert issubclass(cls, Provider) and cls.name == spec.label and cls.supports_steering == spec.steering
        assert cls.create.__func__ is not Provider.create.__func__, spec.key  # not the base class's
        for name in (spec.listing, spec.wider_listing):
            assert name is None or callable(specs.listing(name)), name
        assert spec.builtin is None or callable(specs.builtin(spec.builtin)), spec.builtin
        assert spec.model and spec.model[0].key and [s for s in spec.effort if s.key]  # models/set has keys to write


def test_choosing_a_provider_loads_no_provider_module(tmp_path):
    code = ("import sys; from pathlib import Path; from kward.config.settings import resolve_settings; "
            "from kward.providers.select import FileCredentials, choose_spec; "
            "spec, why = choose_spec(resolve_settings({}, {'OPENROUTER_API_KEY': 'k'}), "
            "FileCredentials({'OPENROUTER_API_KEY': 'k'}, Path(sys.argv[1]))); "
            "loaded = [m for m in sys.modules if m.startswith('requests') or m in "
            "('kward.providers.codex', 'kward.providers.openrouter', 'kward.providers.base')]; "
            "print(spec.key, why, loaded)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "auth.json")], capture_output=True, text=True,
                         env=kward_env(tmp_path), timeout=30)
    assert out.stdout.strip() == "openrouter OpenRouter API key []", out.stderr


ECHO_ENTRY = '''    ProviderSpec(
        key="echo", label="Echo", cls="kward.providers.echo.EchoProvider", steering=True,
        model=(Setting("echo_model", "ECHO_MODEL"),), default_model="echo-1",
        effort=(Setting("echo_reasoning_effort", kind="effort"),),
        secret=Setting(env="ECHO_KEY"), auth_type="api_key", auto="Echo key"),
'''
ECHO_MODULE = '''"""A provider that answers every request with one line (a test of the provider table)."""

from kward.providers.scripted import ScriptedProvider, validate_script


class EchoProvider(ScriptedProvider):
    name = "Echo"
    supports_steering = True

    @classmethod
    def create(cls, setup):
        text = "echo, key " + ("set" if setup.secret() else "unset")
        return cls(validate_script({"steps": [[{"type": "text", "text": text}]], "loop": True}))
'''


@pytest.fixture
def kward_with_echo(tmp_path):
    """A copy of this kward whose provider table has one more entry, and that entry's module."""
    root = tmp_path / "src"
    shutil.copytree(Path(kward.__file__).parent, root / "kward", ignore=shutil.ignore_patterns("__pycache__"))
    table = root / "kward" / "providers" / "specs.py"
    text = table.read_text()
    assert text.count("\n)\nDEFAULT = ") == 1
    table.write_text(text.replace("\n)\nDEFAULT = ", "\n" + ECHO_ENTRY + ")\nDEFAULT = "))
    (root / "kward" / "providers" / "echo.py").write_text(ECHO_MODULE)
    return root


def start(home, root, **env):
    workspace(home)
    return RpcClient(home, env={**kward_env(home, **env), "PYTHONPATH": str(root)})


@pytest.mark.slow
def test_a_new_provider_is_one_entry_and_one_module(isolated_home, kward_with_echo):
    with start(isolated_home, kward_with_echo, KWARD_PROVIDER="echo") as c:
        caps = c.request("initialize")["capabilities"]
        assert caps["turns"]["busyInput"]["steer"] == "native"  # the entry's steering
        session = create_session(c, isolated_home)
        state = c.request("runtime/state", {"sessionId": session["id"]})
        assert (state["defaultProvider"], state["defaultModel"], state["providerReason"]) == (
            "Echo", "Echo/echo-1", "KWARD_PROVIDER")
        assert [(m["provider"], m["id"], m["current"]) for m in c.request("models/list")["models"]] == [
            ("Echo", "echo-1", True)]
        assert c.request("models/set", {"model": "echo-2"})["id"] == "echo-2"
        assert c.request("reasoning/set", {"effort": "high"})["reasoningEffort"] == "high"
        config = json.loads((isolated_home / ".kward" / "config.json").read_text())
        assert config == {"echo_model": "echo-2", "echo_reasoning_effort": "high"}  # the entry's keys
        error = c.error("config/update", {"values": {"echo_model": 5}})  # checked by the rule of its kind
        assert error.code == -32602 and error.reason == "invalid_config" and "echo_model" in error.error["message"]
        events = run_turn(c, session["id"])
        assert finished(events)["status"] == "completed", finished(events)
        assert deltas(events) == ["echo, key unset"]
        assert c.close() == 0 and c.stderr == ""


@pytest.mark.slow
def test_a_new_provider_is_chosen_by_its_credential(isolated_home, kward_with_echo):
    with start(isolated_home, kward_with_echo, ECHO_KEY="k-123", ECHO_MODEL="echo-9") as c:
        session = create_session(c, isolated_home)
        state = c.request("runtime/state", {"sessionId": session["id"]})
        assert (state["defaultProvider"], state["defaultModel"], state["providerReason"]) == (
            "Echo", "Echo/echo-9", "Echo key")
        assert deltas(run_turn(c, session["id"])) == ["echo, key set"]
        assert c.close() == 0 and c.stderr == ""
