"""The `data` of an error response and of a failed turn's `error` (docs/protocol.md
"Errors").

Every key any error of kward carries (`kward.errors.KwardError.data`, merged by
`kward.rpc.protocol.error_object` after `reason` and `errorClass`): the `data=` of every
error kward raises, the provider errors' (`kward.providers.retry.classify`), the file
system's (`FilesystemError.from_os_error`) and a plugin call's (`kward.resources.bounded`).
A new key is declared here, or the schema refuses the error that carries it."""

from __future__ import annotations

from typing import Annotated, TypedDict

from kward.rpc.shapes.base import Doc, Range


class _ErrorDataRequired(TypedDict):
    reason: Annotated[str, Doc("why, in one word (docs/protocol.md \"Reasons\")")]


class ErrorData(_ErrorDataRequired, total=False):
    """What an error carries besides its code and message: always `reason`; the keys that
    name what failed depend on it."""

    errorClass: Annotated[str, Doc("the class of the error (an unexpected one: the exception's)")]
    # what was refused
    param: Annotated[str, Doc("the param that was refused (dotted inside an object)")]
    usage: Annotated[str, Doc("how the refused param is written (logging ranges)")]
    method: Annotated[str, Doc("the method not found, or stopped by the shutdown")]
    key: Annotated[str, Doc("the config key whose value cannot be used")]
    variable: Annotated[str, Doc("the environment variable config.json names that cannot be used")]
    # files
    path: Annotated[str, Doc("the file or directory")]
    path2: Annotated[str, Doc("a rename's target")]
    errno: Annotated[str, Doc("the OS error's symbolic name, e.g. EROFS")]
    osMessage: Annotated[str, Doc("the OS's own words")]
    notADirectory: Annotated[str, Doc("the part of `path` that is not a directory")]
    directory: Annotated[str, Doc("the directory that does not exist")]
    missing: Annotated[str, Doc("its first missing part")]
    state: Annotated[str, Doc("what became of an open session's file: missing or replaced")]
    entry: Annotated[int, Range(minimum=0), Doc("the position of the unusable record")]
    # what is named
    sessionId: str
    turnId: str
    loginId: str
    questionRequestId: str
    id: Annotated[str, Doc("the memory id")]
    layer: Annotated[str, Doc("the memory layer that is full")]
    limit: Annotated[int, Doc("its cap")]
    command: Annotated[str, Doc("the command (prompt template, skill or plugin command)")]
    plugin: str
    # a plugin call
    exception: Annotated[str, Doc("the class of what the plugin raised")]
    timeoutSeconds: Annotated[float, Doc("the time the plugin command had")]
    stuckCalls: Annotated[int, Doc("earlier calls of the plugin that never returned")]
    # input limits
    input_error_code: Annotated[str, Doc("input_too_large")]
    max_chars: int
    actual_chars: int
    # the model provider
    provider: str
    kind: Annotated[str, Doc("auth, rate_limit, usage_limit, context_overflow, server, network, timeout, "
                             "stream_incomplete or bad_request")]
    status: Annotated[int | str, Doc("the HTTP status of a provider's answer; a login's status")]
    code: Annotated[str, Doc("the provider's error code")]
    planType: str
    resetsAt: Annotated[int, Doc("when the usage limit resets (Unix seconds)")]
    attempts: Annotated[int, Range(minimum=2), Doc("the attempts made before giving up")]
    incompleteReason: Annotated[str, Doc("why the provider ended the response incomplete")]
