"""The wire shapes of the resources namespace (see kward.rpc.shapes); not declared yet."""

from __future__ import annotations
