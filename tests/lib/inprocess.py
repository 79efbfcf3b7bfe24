"""Run an `RpcServer` in this process over OS pipes, for tests that need to add a
misbehaving method (one that blocks, raises or prints) to the method table."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

from kward.config import ConfigStore, resolve_paths, resolve_settings
from kward.rpc.server import RpcServer
from lib.rpc_client import FrameClient


class InProcessServer(FrameClient):
    def __init__(self, home: Path, env: dict[str, str] | None = None):
        paths = resolve_paths({"HOME": str(home)})
        config = ConfigStore(paths)
        settings = resolve_settings({}, env or {})
        in_r, self._in_w = os.pipe()
        out_r, out_w = os.pipe()
        self.server = RpcServer(io.open(in_r, "rb", buffering=65536), io.FileIO(out_w, "wb"), paths=paths,
                                config=config, settings=settings, launch_cwd=home)
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
