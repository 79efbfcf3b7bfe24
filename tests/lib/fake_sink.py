"""A recording `StreamSink` for provider tests.

Records every call in order (`events`: ("text"|"reasoning"|"retry", value)) and when each
text delta arrived (`text_times`, monotonic), and sets `first_text` / `first_any` when the
first delta arrives, so a test can wait for "the stream is running" with a timeout
instead of sleeping. Safe to read from the test thread
while the provider thread writes (list appends are atomic; read after the call returns).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kward.providers.base import RetryInfo


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.first_text = threading.Event()
        self.first_any = threading.Event()
        self.text_times: list[float] = []

    def text_delta(self, delta: str) -> None:
        self.text_times.append(time.monotonic())
        self.events.append(("text", delta))
        self.first_text.set()
        self.first_any.set()

    def reasoning_delta(self, delta: str) -> None:
        self.events.append(("reasoning", delta))
        self.first_any.set()

    def retry(self, info: RetryInfo) -> None:
        self.events.append(("retry", info))

    @property
    def texts(self) -> list[str]:
        return [v for k, v in self.events if k == "text"]

    @property
    def reasonings(self) -> list[str]:
        return [v for k, v in self.events if k == "reasoning"]

    @property
    def retries(self) -> list[RetryInfo]:
        return [v for k, v in self.events if k == "retry"]
