"""The wire shapes of the protocol, declared once: every request's params, every result,
every notification, every server request and its reply, every `turn/event` and
`session/event` payload and the `data` of errors (docs/protocol.md).

Each shape is a `TypedDict` (the wire is dicts; `kward.rpc.wire` builds them, mypy checks
that it builds them right) in the module of its namespace; `kward.rpc.shapes.registry`
says which shape each method, notification, server request and event has, and how stable
it is. `kward.rpc.schema` turns the registry into the JSON Schema `kward rpc
--print-schema` prints (docs/protocol.schema.json). Field metadata goes in `Annotated`
(`kward.rpc.shapes.base`): a description, a stability other than the shape's, limits.

Imported only by the schema, the tests and the type checker (the handlers and wire
functions import shapes under TYPE_CHECKING), so nothing here is on the start-up path.
"""
