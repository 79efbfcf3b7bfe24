"""The wire shapes of the runtime namespace (see kward.rpc.shapes); not declared yet."""

from __future__ import annotations
