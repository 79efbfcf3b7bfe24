"""Run an `RpcServer` in this process over OS pipes, built by `kward.rpc.compose` like
`kward rpc`'s, for tests that serve their own method table (one with a method that
blocks, raises or prints added). The client side is the harness's FrameClient
(kward.client.Client, strict and recording)."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

from kward.client import Client
from kward.rpc.compose import build_server
from kward.rpc.method_table import MethodTable
from lib.rpc_client import FrameClient


class InProcessServer(FrameClient):
    def __init__(self, home: Path, env: dict[str, str] | None = None, methods: MethodTable | None = None):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        self._server_out = io.FileIO(out_w, "wb")
        self.server = build_server(io.open(in_r, "rb", buffering=65536), self._server_out,
                                   env={"HOME": str(home), **(env or {})}, launch_cwd=home, methods=methods)
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        super().__init__(io.FileIO(in_w, "wb", closefd=True), io.open(out_r, "rb"),
                         wait_server=self._wait_serve, stop_server=self.server.stop_now)

    def _serve(self) -> None:
        try:
            self.exit_code = self.server.serve()
        finally:  # what a process exit does: the client sees the end of output
            self._server_out.close()

    def _wait_serve(self, timeout: float) -> int | None:
        self._thread.join(timeout)
        return None if self._thread.is_alive() else self.exit_code

    def close_input(self) -> None:
        with self._write_lock:
            self._to_server.close()

    def join(self, timeout: float) -> bool:
        """Wait for serve() to return; then end the client's threads too."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        Client.close(self, timeout)
        return True
