"""What `kward.client` hands its callers besides the Client: typed errors and subscriptions.

Thread contract: a Subscription is fed by the client's reader thread and read by any one
consumer thread; `close` may be called from any thread.
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from kward.client.connection import Client

#: One decoded JSON-RPC message (a frame's JSON object), as it is on the wire.
Message = dict[str, Any]


class Closed:
    """The end of the connection, offered to subscriptions and to the callback queue."""


CLOSED = Closed()


class RpcError(Exception):
    """An error response: `code`, `message`, `reason` (the stable slug in `data.reason`)
    and the whole `data`."""

    def __init__(self, error: Mapping[str, Any]):
        code, data = error.get("code"), error.get("data")
        self.code: int | None = code if isinstance(code, int) else None
        self.message = str(error.get("message", ""))
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}
        reason = self.data.get("reason")
        self.reason: str | None = reason if isinstance(reason, str) else None
        super().__init__(f"{self.message} ({self.code}, {self.reason})")


class ClientClosed(ConnectionError):
    """The server ended (or the client was closed) before the answer came."""


class Subscription:
    """Notifications that arrived after `Client.subscribe`, in order. Iterating ends when the
    client closes; `get` waits for the next one (TimeoutError, or ClientClosed once the
    client closed and nothing is left)."""

    def __init__(self, client: Client, predicate: Callable[[Message], bool] | None):
        self._client = client
        self._predicate = predicate
        self._queue: queue.SimpleQueue[Message | Closed] = queue.SimpleQueue()

    def _offer(self, msg: Message | Closed) -> None:
        if isinstance(msg, Closed) or self._predicate is None or self._predicate(msg):
            self._queue.put(msg)

    def get(self, timeout: float | None = None) -> Message:
        try:
            msg = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no notification within {timeout} s") from None
        if isinstance(msg, Closed):
            self._queue.put(CLOSED)  # every later get sees it too
            raise ClientClosed("the kward server ended")
        return msg

    def __iter__(self) -> Iterator[Message]:
        while True:
            try:
                yield self.get()
            except ClientClosed:
                return

    def close(self) -> None:
        self._client._unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
