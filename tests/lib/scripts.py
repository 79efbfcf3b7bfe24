"""Scripts for the Scripted provider (docs/scripted.md), built and written the one way
every test does it.

A script is `{"steps": [step, ...], ...}`; a step is what one model call plays: a list
of events, or `step(*events, usage=usage(...))` when it also declares the usage it
reports. The event builders give the documented shapes: `text`, `reasoning`, `tool` (a
toolCall), `delay`, `wait_for_steer` and `model_error` (an `error` event); optional fields
are left out at their defaults, so a built event is the dict a test would write by hand. `write_script` writes a
script to a fresh numbered file and returns its path (what `KWARD_SCRIPT` names).

Tests of the script format itself (its validation errors) keep writing events by hand:
there the dict is the subject, not a means.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def text(t: str, repeat: int = 1, **fields: Any) -> dict[str, Any]:
    """Streamed text (`repeat` times, `interval=` seconds apart if given)."""
    return {"type": "text", "text": t, **({"repeat": repeat} if repeat != 1 else {}), **fields}


def reasoning(t: str, repeat: int = 1, **fields: Any) -> dict[str, Any]:
    """Streamed reasoning (`repeat` times, `interval=` seconds apart if given)."""
    return {"type": "reasoning", "text": t, **({"repeat": repeat} if repeat != 1 else {}), **fields}


def tool(name: str, arguments: Any = None, id: str | None = None, **kw: Any) -> dict[str, Any]:
    """A tool call: `arguments` as given (an object or JSON text), else the keywords."""
    event: dict[str, Any] = {"type": "toolCall", "name": name, "arguments": kw if arguments is None else arguments}
    if id is not None:
        event["id"] = id
    return event


def delay(seconds: float) -> dict[str, Any]:
    return {"type": "delay", "seconds": seconds}


def wait_for_steer(timeout: float = 30) -> dict[str, Any]:
    """Hold the model call until steering input arrives (at most `timeout` seconds)."""
    return {"type": "waitForSteer", "timeout": timeout}


def model_error(message: str, **fields: Any) -> dict[str, Any]:
    """The model call fails with `message` (`kind=`, `status=`, ... as documented)."""
    return {"type": "error", "message": message, **fields}


def usage(input_tokens: int, output_tokens: int, **more: Any) -> dict[str, Any]:
    """The usage a step declares (`cost=`, `reasoning_tokens=`, ... as documented)."""
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, **more}


def step(*events: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """One model call's events with the usage it reports."""
    out: dict[str, Any] = {"events": list(events)}
    if usage is not None:
        out["usage"] = usage
    return out


def write_script(directory: Path, steps: list[Any], **extra: Any) -> Path:
    """Write `{"steps": steps, **extra}` (`loop=True`, `model=...`, ...) to a new
    `script-<n>.json` in `directory`; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"script-{len(list(directory.glob('script-*.json')))}.json"
    path.write_text(json.dumps({"steps": steps, **extra}), encoding="utf-8")
    return path
