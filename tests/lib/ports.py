"""Loopback ports in tests: one that nothing listens on, and whether anything does."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A 127.0.0.1 port that was free a moment ago (bound, read and closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused(port: int, host: str = "127.0.0.1") -> bool:
    """Nothing listens on `host`:`port` (any more)."""
    try:
        socket.create_connection((host, port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False
