"""The converters from core objects to the protocol's payloads (docs/protocol.md), one module
per namespace of methods (`kward.rpc.methods.<namespace>` shapes its results with
`kward.rpc.wire.<namespace>`), plus `events` (turn events and `session/event`) and
`transcript` (`sessions/transcript`), and `shape` (what they share). The core hands the RPC face typed objects
(`kward.model`, the runtime's results); they are shaped here, and only here. Each module
imports what its payloads need, so a process that lists sessions does not load the
conversation model. Pure functions, any thread.
"""
