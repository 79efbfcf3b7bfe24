"""The wire shapes of the ui namespace (see kward.rpc.shapes); not declared yet."""

from __future__ import annotations
