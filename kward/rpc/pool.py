"""A small worker pool for slow requests and turns.

Threads start on demand, up to `max_workers`, and are reused. `submit` may be called from
any thread; jobs run in FIFO order as workers free up. `shutdown(timeout)` stops taking
jobs, lets running ones finish (their owners cancel them first) and joins every thread
until the timeout. Workers are daemon threads so that a job stuck in an uninterruptible
call can never keep the process alive past shutdown.
"""

from __future__ import annotations

import logging
import threading
import time
from queue import SimpleQueue
from typing import Callable

log = logging.getLogger(__name__)


class WorkerPool:
    def __init__(self, max_workers: int, name: str = "kward-worker"):
        self._max = max_workers
        self._name = name
        self._jobs: SimpleQueue[Callable[[], None] | None] = SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue `job`; False when the pool is shut down (the job will not run)."""
        with self._lock:
            if self._closed:
                return False
            self._jobs.put(job)
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                t = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads) + 1}", daemon=True)
                self._threads.append(t)
                t.start()
        return True

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except BaseException:  # a job must never take its worker down silently
                log.exception("worker job failed")
            self._idle.release()

    def shutdown(self, timeout: float) -> bool:
        """Stop all workers; True when every thread finished within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            threads = list(self._threads)
            for _ in threads:
                self._jobs.put(None)  # a worker's stop
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        if alive:
            log.warning("workers still busy at shutdown: %s", ", ".join(alive))
        return not alive
