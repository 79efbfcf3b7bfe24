"""The startup screen, /status and /stats in words, and slash commands that check what
they are given (issue 22, points 3 and 6): the real `kward` on a pseudo-terminal, the
Scripted provider (and the fake OpenRouter where a provider's model list is needed)."""

from __future__ import annotations

import json
import os

import pytest

from kward import __version__
from kward.client import RpcError
from kward.terminal import stats_view, wording
from kward.terminal.cmd_sessions import free_name
from kward.terminal.style import is_utf8
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_openrouter import FakeOpenRouter
from lib.pty_term import PROMPT, term  # noqa: F401 - fixture
from lib.scripts import step, text, usage

KEY = "sk-or-v1-0123456789abcdef0123"


@pytest.fixture
def openrouter():
    with FakeOpenRouter() as fake:  # nothing may reach the real endpoint
        yield fake


def first_screen(k) -> list[str]:
    return [line.rstrip() for line in k.text.splitlines()[:3]]


# --- the startup screen --------------------------------------------------------------

def test_the_first_screen_names_the_model_the_workspace_and_the_credentials(term, cli):
    k = term([[text("x")]])
    assert first_screen(k) == [f"kward {__version__} | Scripted/scripted | {os.path.realpath(cli.ws)}",
                               "credentials: none needed (the Scripted provider plays a script)",
                               "Type a request, /help for the commands, Ctrl-D to exit."]


@pytest.mark.parametrize("provider, env, line", [
    ("openrouter", {}, "credentials: none for OpenRouter: run `kward login openrouter`, or set OPENROUTER_API_KEY"),
    ("openrouter", {"OPENROUTER_API_KEY": KEY}, "credentials: OPENROUTER_API_KEY (environment)"),
    ("codex", {}, "credentials: none for Codex: run `kward login`, or set OPENAI_ACCESS_TOKEN"),
    ("codex", {"OPENAI_ACCESS_TOKEN": "env-token-0123456789"}, "credentials: OPENAI_ACCESS_TOKEN (environment)"),
    ("openai-compatible", {}, "credentials: no OpenAI-compatible server set: set openai_compat_base_url (and "
                              "openai_compat_api_key if it needs a key) in config.json, or KWARD_OPENAI_COMPAT_BASE_URL"),
])
def test_the_first_screen_says_how_to_get_credentials_when_there_are_none(term, cli, openrouter, provider, env, line):
    k = term([[text("x")]], KWARD_PROVIDER=provider, KWARD_OPENROUTER_BASE_URL=openrouter.base_url,
             KWARD_CODEX_BASE_URL=openrouter.base_url, **env)
    first, second, _ = first_screen(k)
    label = {"openrouter": "OpenRouter/openai/gpt-5.5", "codex": "Codex/gpt-5.5",
             "openai-compatible": "OpenAICompatible/default"}[provider]
    assert first == f"kward {__version__} | {label} | {os.path.realpath(cli.ws)}" and second == line
    assert KEY not in k.text


# --- /status and /stats ------------------------------------------------------------

def test_status_and_stats_in_words_with_the_context_as_a_bar(term):
    k = term([step(text("hi"), usage=usage(40000, 12, cost=0.0123, cache_read_tokens=1500))])
    k.line("/status")
    assert "  context    [░░░░░░░░░░░░░░░░░░░░] 0%  0 of 200,000 tokens" in k.expect(PROMPT)  # nothing said yet
    k.line("hello")
    k.expect(PROMPT)
    k.line("/status")
    out = k.expect(PROMPT)
    assert "  model      Scripted/scripted (KWARD_PROVIDER)" in out and "  messages   2" in out
    assert "  context    [████░░░░░░░░░░░░░░░░] 20%  40,012 of 200,000 tokens" in out
    k.line("/stats")
    out = k.expect(PROMPT).splitlines()
    assert out[1:5] == ["  messages   1 from you, 1 answers, 0 tool calls",
                        "  tokens     input 40,000, output 12, cache read 1,500, cache write 0, reasoning 0, "
                        "total 40,012",
                        "  cost       $0.0123",
                        "  context    [████░░░░░░░░░░░░░░░░] 20%  40,012 of 200,000 tokens"]
    assert "cacheRead" not in k.text


def test_the_formatting_of_counts():
    assert [stats_view.number(n) for n in (0, 1234567, 12.5, 3.0, "x")] == ["0", "1,234,567", "12.5", "3", "?"]
    assert [stats_view.money(c) for c in (0.0123, 0.000001, 2, 1234.5)] == ["$0.0123", "$0.0000", "$2.0000",
                                                                            "$1,234.50"]
    assert [stats_view.words(k) for k in ("cacheRead", "cacheWrite", "input", "cache_read_tokens", "reasoningTokens")] \
        == ["cache read", "cache write", "input", "cache read", "reasoning"]
    usage40 = {"tokens": 40000, "contextWindow": 128000, "percent": 31.2}
    assert stats_view.context_text(usage40, True) == "[██████░░░░░░░░░░░░░░] 31%  40,000 of 128,000 tokens"
    assert stats_view.context_text(usage40, False) == "[######..............] 31%  40,000 of 128,000 tokens"
    assert stats_view.context_text(None, True) == "unknown"
    assert stats_view.context_text(None, True, window=128000) == "unknown"  # (only an empty conversation is 0%)
    assert stats_view.context_text({"tokens": 5, "contextWindow": None}, True) == \
        "5 tokens (the context window is unknown)"
    assert stats_view.bar(1.7, False, 4) == "[####]" and stats_view.bar(-1, False, 4) == "[....]"


def test_the_bar_is_plain_ascii_when_the_stream_is_not_utf8(tmp_path):
    with open(tmp_path / "a", "w", encoding="ascii") as ascii_out, open(tmp_path / "u", "w", encoding="utf-8") as utf8:
        assert not is_utf8(ascii_out) and is_utf8(utf8)


# --- /model --------------------------------------------------------------------------

def openrouter_env(fake: FakeOpenRouter, **more: str) -> dict[str, str]:
    return {"KWARD_PROVIDER": "openrouter", "OPENROUTER_API_KEY": KEY, "KWARD_OPENROUTER_BASE_URL": fake.base_url,
            **more}


def test_model_n_picks_the_nth_entry_of_the_numbered_list(term, cli, openrouter):
    k = term([[text("x")]], **openrouter_env(openrouter))
    k.line("/model")
    out = k.expect("empty to cancel]: ")
    assert "   1. * OpenRouter/openai/gpt-5.5  (400,000 tokens)" in out
    assert "   2.   OpenRouter/anthropic/claude-sonnet-4.5  (1,000,000 tokens)" in out
    k.line("")
    k.expect(PROMPT)
    k.line("/model 2")
    assert "model: OpenRouter/anthropic/claude-sonnet-4.5" in k.expect(PROMPT)
    assert json.loads((cli.config_dir / "config.json").read_text())["openrouter_model"] == "anthropic/claude-sonnet-4.5"
    k.line("/model 3")
    assert "error: no model 3: /model lists models 1 to 2" in k.expect(PROMPT)
    k.line("/model openai/gpt-5.5")  # an id of the provider in use
    assert "model: OpenRouter/openai/gpt-5.5" in k.expect(PROMPT)
    k.line("/model meta-llama/llama-3.1-8b-instruct")  # not one the key lists, but in OpenRouter's catalog
    assert "model: OpenRouter/meta-llama/llama-3.1-8b-instruct" in k.expect(PROMPT)


def test_another_providers_models_are_checked_in_its_own_list(term, cli, openrouter):
    k = term([[text("x")]], **openrouter_env(openrouter))
    k.line("/model scripted/nope")  # the Scripted provider lists one model
    assert "error: unknown model nope for Scripted; /model lists them" in k.expect(PROMPT)
    k.line("/model scripted/scripted")
    assert ("model: OpenRouter/openai/gpt-5.5 for now; Scripted/scripted is saved, and applies once KWARD_PROVIDER "
            "(set to openrouter in the environment) is unset") in k.expect(PROMPT)
    saved = json.loads((cli.config_dir / "config.json").read_text())
    assert (saved["provider"], saved["scripted_model"]) == ("scripted", "scripted")


def test_an_unknown_model_is_refused_and_not_saved(term, cli, openrouter):
    config = cli.config_dir / "config.json"
    config.parent.mkdir(mode=0o700)
    config.write_text('{"scripted_model": "scripted"}')
    config.chmod(0o600)
    k = term([[text("x")]], OPENROUTER_API_KEY=KEY, KWARD_OPENROUTER_BASE_URL=openrouter.base_url)
    for typed, line in (("/model nope", "error: unknown model nope for Scripted; /model lists them"),
                        ("/model scripted/nope", "error: unknown model nope for Scripted; /model lists them"),
                        ("/model openrouter/acme/nope", "error: unknown model acme/nope for OpenRouter; /model lists "
                                                        "them"),
                        ("/model openrouter", "error: give the model too: /model openrouter/<id>")):
        k.line(typed)
        assert line in k.expect(PROMPT)
    assert config.read_text() == '{"scripted_model": "scripted"}'  # nothing saved



def test_a_model_that_cannot_be_checked_is_refused_not_saved(term, cli, openrouter):
    # no Codex login: its list cannot be fetched; only kward's built-in list can say yes
    k = term([[text("x")]], KWARD_CODEX_BASE_URL=openrouter.base_url,
             KWARD_OPENAI_COMPAT_BASE_URL="http://127.0.0.1:9/v1")  # (nothing listens there)
    k.line("/model codex/typo-xyz")
    out = k.expect(PROMPT)
    assert ("error: unknown model typo-xyz for Codex: not in kward's built-in list, and the list of Codex cannot be "
            "fetched to check it (run `kward login`, or set OPENAI_ACCESS_TOKEN; `kward doctor` tells what fails)") \
        in out
    assert "not checked" not in out and "auth/" not in out
    k.line("/model openai-compatible/llama-3")
    assert ("error: cannot check model llama-3 for OpenAICompatible: its model list cannot be fetched (set "
            "openai_compat_api_key in config.json if the server needs a key; `kward doctor` tells what fails); "
            "nothing saved") in k.expect(PROMPT)
    assert not (cli.config_dir / "config.json").exists()  # nothing saved
    k.line("/model codex/gpt-5.4")  # in the built-in list: taken
    assert "Codex/gpt-5.4 is saved" in k.expect(PROMPT)
    assert json.loads((cli.config_dir / "config.json").read_text())["openai_model"] == "gpt-5.4"

def test_a_provider_pinned_by_the_environment_is_named_instead_of_silently_kept(term, cli, openrouter):
    # (the test environment sets KWARD_PROVIDER=scripted)
    k = term([[text("x")]], OPENROUTER_API_KEY=KEY, KWARD_OPENROUTER_BASE_URL=openrouter.base_url)
    k.line("/model openrouter/anthropic/claude-sonnet-4.5")
    assert ("model: Scripted/scripted for now; OpenRouter/anthropic/claude-sonnet-4.5 is saved, and applies once "
            "KWARD_PROVIDER (set to scripted in the environment) is unset") in k.expect(PROMPT)
    saved = json.loads((cli.config_dir / "config.json").read_text())
    assert (saved["provider"], saved["openrouter_model"]) == ("openrouter", "anthropic/claude-sonnet-4.5")
    k.line("/status")
    assert "  model      Scripted/scripted (KWARD_PROVIDER)" in k.expect(PROMPT)


def test_a_model_pinned_by_its_variable_or_by_model_is_named(term, cli, openrouter):
    k = term([[text("x")]], **openrouter_env(openrouter, OPENROUTER_MODEL="openai/gpt-5.5"))
    k.line("/model 2")
    assert ("model: OpenRouter/openai/gpt-5.5 for now; OpenRouter/anthropic/claude-sonnet-4.5 is saved, and applies "
            "once OPENROUTER_MODEL (set to openai/gpt-5.5 in the environment) is unset") in k.expect(PROMPT)
    k = term([[text("x")]], "--model", "scripted", OPENROUTER_API_KEY=KEY,
             KWARD_OPENROUTER_BASE_URL=openrouter.base_url)
    k.line("/model openrouter/openai/gpt-5.5")
    assert ("model: Scripted/scripted for now; OpenRouter/openai/gpt-5.5 is saved, and applies to runs without "
            "--model scripted, which sets the provider for this run") in k.expect(PROMPT)


# --- /export, /compact, /memory --------------------------------------------------------

def test_export_without_a_path_writes_a_new_file_in_the_current_directory(term, cli):
    (cli.ws / "kward-my-work.md").write_text("keep me")
    k = term([[text("the answer")]])
    k.line("a question")
    k.expect(PROMPT)
    k.line("/name My work")
    k.expect(PROMPT)
    for name in ("kward-my-work-2.md", "kward-my-work-3.md"):
        k.line("/export")
        assert f"exported (markdown): {os.path.realpath(cli.ws / name)}" in k.expect(PROMPT)
        assert "## User\n\na question" in (cli.ws / name).read_text()
    assert (cli.ws / "kward-my-work.md").read_text() == "keep me"  # never overwritten


def test_free_names_are_derived_without_overwriting(tmp_path):
    assert free_name(str(tmp_path), "kward-x") == str(tmp_path / "kward-x.md")
    (tmp_path / "kward-x.md").write_text("")
    (tmp_path / "kward-x-2.md").symlink_to("nowhere")  # a dangling link is taken too
    assert free_name(str(tmp_path), "kward-x") == str(tmp_path / "kward-x-3.md")


def test_compact_on_a_short_session_says_why_nothing_was_compacted(term):
    k = term([[text("short answer")]])
    k.line("hi")
    k.expect(PROMPT)
    k.line("/compact")
    out = k.expect(PROMPT)
    assert "Nothing to compact yet: the conversation is still short enough to be kept whole." in out
    assert "error" not in out and "nothing_to_compact" not in out and "Nothing to compact\n" not in out


OFF = ('(memory is off: memories are kept but not used in turns; turn it on with /memory enable, `kward memory '
       'enable`, or "memory": {"enabled": true} in config.json)')


def test_memory_commands_say_how_to_enable_memory_while_it_is_off(term, cli):
    k = term([[text("x")]])
    k.line("/memory")
    out = k.expect(PROMPT)
    assert "Memory: disabled; auto-summary: disabled" in out and OFF in out
    k.line("/memory add we use uv")
    out = k.expect(PROMPT)
    assert "Added soft memory soft_001." in out and OFF in out
    k.line("/memory enable")
    assert OFF not in k.expect(PROMPT)
    k.line("/memory list")
    assert OFF not in k.expect(PROMPT)


def test_kward_memory_says_it_on_stderr_while_memory_is_off(cli):
    proc = cli.run("memory", "list")
    assert proc.returncode == 0 and b"Workspace Soft Memories:" in proc.stdout
    assert proc.stderr.decode() == ('kward memory: (memory is off: memories are kept but not used in turns; turn it '
                                    'on with `kward memory enable`, /memory enable in `kward`, or "memory": '
                                    '{"enabled": true} in config.json)\n')
    status = cli.run("memory")
    assert b"`kward memory enable`" in status.stdout and status.stderr == b""


# --- the terminal's words for server errors ------------------------------------------

@pytest.mark.parametrize("error, line", [
    ({"code": -32005, "message": "Not logged in to Codex ... (a UI: auth/startOpenAILogin) ...",
      "data": {"reason": "not_logged_in", "provider": "Codex"}},
     "not logged in to OpenAI (or the login expired): run `kward login`, or set OPENAI_ACCESS_TOKEN; or use "
     "OpenRouter: `kward login openrouter`"),
    ({"code": -32005, "message": "No OpenRouter API key. Run `kward login openrouter` (a UI: auth/loginWithApiKey)",
      "data": {"reason": "not_logged_in", "provider": "OpenRouter"}},
     "no OpenRouter API key: run `kward login openrouter`, or set OPENROUTER_API_KEY"),
    ({"code": -32602, "message": "Invalid params: 'apiKey' must be 8 to 1024 characters long",
      "data": {"reason": "invalid_params", "param": "apiKey"}}, "the API key must be 8 to 1024 characters long"),
    ({"code": -32602, "message": "Invalid params: 'sessionId' is required",
      "data": {"reason": "invalid_params", "param": "sessionId"}}, "the session is required"),
    ({"code": -32602, "message": "Unknown session: 1234", "data": {"reason": "session_not_found", "sessionId": "1234"}},
     "this session is no longer open; start a new one with /new, or /resume it"),
    ({"code": -32602, "message": "Something\n  else", "data": {"reason": "invalid_params"}}, "Something else"),
])
def test_server_errors_in_the_terminals_words(error, line):
    text_of = wording.error_text(RpcError(error))
    assert text_of == line and "auth/" not in text_of and "'apiKey'" not in text_of and "sessionId" not in text_of
    assert wording.turn_error_text({"message": error["message"], "reason": error["data"]["reason"],
                                    "data": error["data"]}) == line
