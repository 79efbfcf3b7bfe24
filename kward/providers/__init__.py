"""Model providers: one interface (`base.Provider`), one module per provider.

Modules, lowest first:
- `base`: the interface (`Provider`, `ModelRequest`, `ModelResponse`, `StreamSink`, `ProviderSetup`);
- `specs`: the table of known providers (keys, labels, settings, the code each names);
- `select`: which provider, model and reasoning level a turn uses, and building it;
- `settings`, `retry`: an HTTP provider's base URL, timeouts and retry policy, and the error table;
- `http`, `tracking`, `sse`: the HTTP transport (cancellable requests) and the SSE parser;
- `streaming`: the request/stream/retry loop of the HTTP providers;
- `codex` + `codex_wire` (Responses API), `openrouter` and `openai_compat` + `chat_wire`
  (chat completions), `wire_common` (what both wire formats share), `jwt_claims`;
- `scripted` + `scripted_demo`: the offline provider;
- `catalog`, `model_service`: model listings, reasoning levels, the current model.
"""
