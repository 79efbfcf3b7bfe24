"""kward.config.secrets: the credential values kward holds and the scrub of tool output and frames."""

import json
import os

from kward.config.store import ConfigStore, resolve_paths
from kward.redact import REDACTED
from kward.rpc import protocol
from kward.config.secrets import KnownSecrets, Snapshot, is_credential_variable
from kward.tools.base import ToolContext, ToolResult, ToolSpec
from kward.tools.registry import ToolRegistry
from lib.fake_codex import make_jwt

TOKEN = make_jwt("acct_unit_1")
KEY = "sk-or-v1-unitunitunit0123456789"


def known(home, env=None, config=None, auth=None, ttl=1.0):
    paths = resolve_paths({"HOME": str(home)})
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    if config is not None:
        paths.config_file.write_text(json.dumps(config), encoding="utf-8")
    if auth is not None:
        paths.auth_file.write_text(json.dumps(auth), encoding="utf-8")
    return KnownSecrets(env or {}, ConfigStore(paths), paths.auth_file, ttl=ttl), paths


def test_values_from_environment_config_and_stored_login(isolated_home):
    env = {"OPENAI_ACCESS_TOKEN": f" {TOKEN}\n", "OPENROUTER_API_KEY": KEY, "KWARD_EXTRA_TOKEN": "kward-extra-123",
           "HOME": "/home/somebody", "OTHER_TOKEN": "not-kwards-own-value"}
    config = {"openai_compat_api_key": "compat-key-9876", "openrouter_api_key": "short",
              "plugins": [{"name": "x", "client_secret": "plugin-secret-42"}], "model": "gpt-long-model-name",
              "apiKeyProviders": ["openrouter-provider"], "tokens_budget": 123456789}
    auth = {"tokens": {"access_token": "auth-access-1111", "refresh_token": "auth-refresh-2222",
                       "id_token": "auth-id-3333"}, "last_refresh": "2026-01-01T00:00:00Z"}
    secrets, _ = known(isolated_home, env, config, auth)
    values = set(secrets.refresh().values)
    assert values == {TOKEN, KEY, "kward-extra-123", "compat-key-9876", "plugin-secret-42", "auth-access-1111",
                      "auth-refresh-2222", "auth-id-3333"}
    # names that are not secrets, values that are too short, numbers: none of them
    assert is_credential_variable("kward_some_api_key") and not is_credential_variable("GITHUB_TOKEN")


def test_scrub_output_replaces_known_values_and_jwts_only(isolated_home):
    secrets, _ = known(isolated_home, {"OPENROUTER_API_KEY": KEY}, {"openai_compat_api_key": "compat-key-9876"})
    other_jwt = make_jwt("acct_someone_else")
    text = (f"OPENROUTER_API_KEY={KEY}\nkey: compat-key-9876!\ntoken {other_jwt} end\n"
            "pip install sk-learn-extra-stuff\nAuthorization: Bearer abc.def\npassword=hunter2\n")
    assert secrets.scrub_output(text) == (
        f"OPENROUTER_API_KEY={REDACTED}\nkey: {REDACTED}!\ntoken {REDACTED} end\n"
        "pip install sk-learn-extra-stuff\nAuthorization: Bearer abc.def\npassword=hunter2\n")
    assert secrets.scrub_output("eyJhbGciOi.abc.def is no token") == "eyJhbGciOi.abc.def is no token"


def test_sources_are_rechecked_when_their_files_change(isolated_home):
    secrets, paths = known(isolated_home, config={"openai_compat_api_key": "first-key-0001"})
    assert secrets.scrub_output("first-key-0001") == REDACTED
    paths.config_file.write_text(json.dumps({"openai_compat_api_key": "second-key-0002"}), encoding="utf-8")
    paths.auth_file.write_text(json.dumps({"tokens": {"access_token": "login-token-0003"}}), encoding="utf-8")
    out = secrets.scrub_output("first-key-0001 second-key-0002 login-token-0003")
    assert out == f"{REDACTED} {REDACTED} {REDACTED}"  # a value once known stays known
    paths.config_file.write_text("{not json", encoding="utf-8")  # a broken file keeps what was known
    assert secrets.scrub_output("second-key-0002") == REDACTED


def test_snapshot_is_rechecked_after_the_ttl_only(isolated_home):
    secrets, paths = known(isolated_home, ttl=3600)
    assert secrets.snapshot().values == ()
    paths.config_file.write_text(json.dumps({"openrouter_api_key": "late-key-00001"}), encoding="utf-8")
    assert secrets.snapshot().values == ()  # within the ttl: the cached snapshot
    secrets.refresh()  # what every tool call does
    assert secrets.snapshot().values == ("late-key-00001",)
    eager, paths = known(isolated_home / "other", ttl=0)
    paths.config_file.write_text(json.dumps({"openrouter_api_key": "late-key-00002"}), encoding="utf-8")
    assert eager.snapshot().values == ("late-key-00002",)


def test_frame_check_finds_escaped_values_and_never_cuts_an_escape():
    snap = Snapshot.of(['quote"d-secret', "nabcdefgh", "\u00fcn\u00efcode-secret"])
    for value in ('quote"d-secret', "\u00fcn\u00efcode-secret"):
        message = {"result": {"content": f"say {value} now"}}
        assert snap.found_in(protocol.encode(message))
        assert snap.scrub_value(message) == {"result": {"content": f"say {REDACTED} now"}}
    # "line\nabcdefgh" encodes as `line\nabcdefgh`: the bytes match, the string holds no value
    message = {"result": {"content": "line\nabcdefgh"}}
    assert snap.found_in(protocol.encode(message))
    assert json.loads(protocol.encode(snap.scrub_value(message))) == message
    assert snap.scrub_value({"nabcdefgh-key": ["x nabcdefgh", 5, True, None]}) == {
        f"{REDACTED}-key": [f"x {REDACTED}", 5, True, None]}
    assert not snap.found_in(protocol.encode({"result": "nothing here"}))


def test_longer_values_are_replaced_first():
    snap = Snapshot.of(["abcdefgh", "abcdefgh-and-more"])
    assert snap.scrub("abcdefgh-and-more abcdefgh") == f"{REDACTED} {REDACTED}"


def test_registry_applies_the_context_scrub_to_content_and_diff(tmp_path):
    def handler(args, ctx):
        return ToolResult(content="out SECRET-VALUE-1", diff="+SECRET-VALUE-1\n", changed_files=["f"])

    registry = ToolRegistry([ToolSpec("leak", "d", {}, (), handler)])
    scrub = Snapshot.of(["SECRET-VALUE-1"]).scrub
    result = registry.run("leak", "{}", ToolContext(workspace_root=tmp_path, scrub=scrub))
    assert (result.content, result.diff, result.changed_files) == (f"out {REDACTED}", f"+{REDACTED}\n", ["f"])
    plain = registry.run("leak", "{}", ToolContext(workspace_root=tmp_path))
    assert plain.content == "out SECRET-VALUE-1"


def test_log_lines_lose_known_values(isolated_home):
    import logging

    from kward.diagnostics import RedactingFormatter

    secrets, _ = known(isolated_home, {"OPENROUTER_API_KEY": "plainkey-without-prefix"})
    formatter = RedactingFormatter("%(message)s", secrets)
    record = logging.LogRecord("kward.x", logging.WARNING, __file__, 1, "got %s and Bearer abcdefgh",
                               ("plainkey-without-prefix",), None)
    assert formatter.format(record) == f"got {REDACTED} and Bearer {REDACTED}"
    assert os.environ.get("OPENROUTER_API_KEY") is None  # the test did not touch the real environment


def test_config_strings_shaped_like_secrets_are_known_under_any_key(isolated_home):
    jwt = make_jwt("acct_in_a_list")
    config = {"someplugin": {"endpoint": "sk-or-v1-plainkey0123456789", "headers": ["Authorization: Bearer hdr-value-0123456789"],
                             "url": "https://x.invalid/?access_token=query-value-0123456789&a=1", "jwts": [jwt],
                             "note": "plain words, https://x.invalid/v1", "embedded": 'cfg {"api_key": "json-value-0123456789"}'}}
    secrets, _ = known(isolated_home, config=config)
    assert set(secrets.refresh().values) == {"sk-or-v1-plainkey0123456789", "hdr-value-0123456789", "query-value-0123456789",
                                             jwt, "json-value-0123456789"}


def test_prose_in_config_teaches_no_secrets(isolated_home):
    config = {"someplugin": {"description": "Uses Bearer authentication; see docs?password=required",
                             "hint": 'set {"api_key": "yourkeyhere"} or token=placeholder-value',
                             "mystery": KEY}}
    secrets, _ = known(isolated_home, config=config)
    assert set(secrets.refresh().values) == {KEY}  # a real key under a key that says nothing is still known
    text = "authentication is required; yourkeyhere placeholder-value"
    assert secrets.scrub_output(text) == text
