"""initialize, initialized, shutdown, rpc/schema (docs/protocol.md "Lifecycle methods")."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, AN_ADDITION, EXPERIMENTAL, OPEN, Doc, Entry, shape
from kward.rpc.shapes.capabilities import Capabilities


class ClientInfo(TypedDict, total=False):
    name: str
    version: str


class ClientCapabilities(TypedDict, total=False):
    experimentalApi: Annotated[bool, Doc("receive experimental methods, events and fields")]
    serverRequests: Annotated[list[str], AN_ADDITION, Doc("the server requests this client answers")]
    optOutNotificationMethods: Annotated[list[str], Doc("notification methods (or method:type) never to send")]
    closeBehavior: Annotated[Literal["keepTurns", "cancelTurns"], AN_ADDITION,
                             Doc("a listening server: what becomes of this client's turns when it goes away "
                                 "(default keepTurns)")]


class InitializeParams(TypedDict, total=False):
    clientInfo: ClientInfo | None
    capabilities: ClientCapabilities | None


class InitializeWarning(TypedDict):
    reason: str
    message: str


@shape(stability=ADDITION)
class Platform(TypedDict):
    os: Annotated[str, Doc("linux, macos, windows or the system's own lower-case name")]
    family: Annotated[str, Doc("unix or windows")]


class _InitializeResultRequired(TypedDict):
    protocolVersion: int
    serverName: str
    serverVersion: str
    experimental: bool
    userAgent: Annotated[str, AN_ADDITION, Doc("kward/<version> (<os>; Python <version>)")]
    configDir: Annotated[str, AN_ADDITION]
    platform: Annotated[Platform, AN_ADDITION]
    capabilities: Capabilities


class InitializeResult(_InitializeResultRequired, total=False):
    warnings: list[InitializeWarning]


class RpcSchemaResult(TypedDict):
    """The protocol's JSON Schema (draft 2020-12), as `kward rpc --print-schema` prints it."""

    schema: Annotated[dict[str, Any], OPEN]


class ShutdownResult(TypedDict):
    ok: bool


@shape(stability=ADDITION)
class PingResult(TypedDict):
    """The heartbeat's answer: the server is alive and reading."""

    pong: bool
    pid: Annotated[int, Doc("the server's process id (a new one: the server was started again)")]
    connections: Annotated[int, Doc("clients connected now (1 on stdio)")]
    activeTurns: Annotated[int, Doc("turns queued or running now, of every client")]


METHODS = {
    "initialize": Entry(InitializeParams, InitializeResult),
    "initialized": Entry(None, None),
    "shutdown": Entry(None, ShutdownResult),
    "$/ping": Entry(None, PingResult, ADDITION),
    "rpc/schema": Entry(None, RpcSchemaResult, EXPERIMENTAL),
}
