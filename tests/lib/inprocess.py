"""Run an `RpcServer` in this process over OS pipes, built by `kward.rpc.compose` like
`kward rpc`'s, for tests that serve their own method table (one with a method that
blocks, raises or prints added)."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

from kward.rpc.compose import build_server
from kward.rpc.registry import MethodTable
from lib.rpc_client import FrameClient


class InProcessServer(FrameClient):
    def __init__(self, home: Path, env: dict[str, str] | None = None, methods: MethodTable | None = None):
        in_r, self._in_w = os.pipe()
        out_r, out_w = os.pipe()
        self.server = build_server(io.open(in_r, "rb", buffering=65536), io.FileIO(out_w, "wb"),
                                   env={"HOME": str(home), **(env or {})}, launch_cwd=home, methods=methods)
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        super().__init__(io.FileIO(self._in_w, "wb", closefd=True), io.open(out_r, "rb"))

    def _serve(self) -> None:
        self.exit_code = self.server.serve()

    def close_input(self) -> None:
        self._to_server.close()

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()
