"""The namespace modules of the wire shapes, whose tables (`METHODS`, `NOTIFICATIONS`,
`SERVER_REQUESTS`, `TURN_EVENTS`, `SESSION_EVENTS`) `kward.rpc.shapes.registry` merges."""

from __future__ import annotations

from kward.rpc.shapes import (
    auth,
    capabilities,
    config,
    events,
    lifecycle,
    memory,
    models,
    resources,
    runtime,
    sessions,
    telemetry,
    tools,
    transcript,
    turns,
    ui,
    workspace,
)

MODULES = (lifecycle, capabilities, workspace, config, sessions, transcript, turns, events, ui, tools, runtime,
           models, auth, memory, resources, telemetry)
