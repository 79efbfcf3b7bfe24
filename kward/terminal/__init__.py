"""The terminal faces of kward: the interactive session and the one-shot prompt.

Both are clients of the server core through `kward.client`'s in-process transport: every
feature they offer is a protocol request, as it would be for a UI over `kward rpc`. Modules:

- `host`: process-level set-up both modes share with `kward rpc` (logging, the processes
  commands leave behind, signals, the environment check);
- `style`: whether and how to colour output;
- `render`: how turn events look on a terminal;
- `turn`: running one turn (events, inline questions, Ctrl-C);
- `oneshot`, `interactive`: the two modes;
- `lineedit`: the interactive prompt's line editor (`lineedit_term`: the terminal's modes
  and keys, `lineedit_keys`: the key decoder, `lineedit_buffer`: the edits,
  `lineedit_layout`: the screen, `lineedit_history`: the history file,
  `lineedit_external`: $VISUAL/$EDITOR);
- `commands` (the one slash-command table), `cmd_sessions`, `cmd_runtime`, `cmd_edit`: its commands;
- `doctor`: `kward doctor`.

Threads: everything here runs on the main thread; `kward.client` owns its own reader and
callback threads, and the server core runs on threads of its own.
"""
