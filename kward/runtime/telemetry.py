"""`runtime.telemetry`: the opt-in telemetry of the runtime facade (see `kward.telemetry`).

`recorder(headers)` is asked once per turn, on the turn's worker thread: with every
category off it answers None at the cost of reading the live settings (a stat of
config.json), and the turn runs with nothing wrapped. `stats` and `token_csv` read the
log files of a range (slow: run them on a worker) and return typed results
(`kward.telemetry.stats.Stats`, `kward.telemetry.tokens.TokenCsv`) the face shapes.

Thread contract: any thread; the writer (`TelemetryLog`) locks itself and is built once
under `_lock`.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from kward.config.secrets import KnownSecrets
from kward.config.settings import LiveSettings
from kward.config.store import ConfigStore
from kward.errors import LoggingDisabled

if TYPE_CHECKING:  # pragma: no cover
    from kward.telemetry.log import TelemetryLog
    from kward.telemetry.recorder import TurnRecorder
    from kward.telemetry.stats import Stats
    from kward.telemetry.tokens import TokenCsv


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class TelemetryRuntime:
    def __init__(self, log_dir: Path, config: ConfigStore, env: Mapping[str, str], secrets: KnownSecrets, *,
                 clock: Callable[[], datetime] = _utc_now):
        self.log_dir = log_dir
        self._secrets = secrets
        self._live = LiveSettings(config, env)
        self._clock = clock
        self._lock = threading.Lock()
        self._log: TelemetryLog | None = None

    def enabled_categories(self) -> tuple[str, ...]:
        return self._live.current().logging.enabled_categories

    def _writer(self) -> TelemetryLog:
        with self._lock:
            if self._log is None:
                from kward.telemetry.log import TelemetryLog

                self._log = TelemetryLog(self.log_dir, scrub=lambda value: self._secrets.snapshot().scrub_value(value))
            return self._log

    def recorder(self, headers: Mapping[str, str] | None = None) -> TurnRecorder | None:
        """The recorder of one turn, or None when no category is enabled."""
        try:
            categories = self.enabled_categories()
        except Exception:  # an unreadable config.json: the turn reports it, not telemetry
            return None
        if not categories:
            return None
        from kward.telemetry.recorder import TurnRecorder

        return TurnRecorder(self._writer(), categories, headers)

    def _categories_for(self, needed: str | None = None) -> tuple[str, ...]:
        categories = self.enabled_categories()
        if not categories and needed is None:
            raise LoggingDisabled("Telemetry logging is disabled. Enable logging (config logging.enabled or "
                                  "KWARD_LOGGING) and at least one category before asking for stats.")
        if needed is not None and needed not in categories:
            raise LoggingDisabled("Token telemetry logging is disabled. Enable logging and token logging "
                                  "(logging.tokens or KWARD_LOGGING_TOKENS) before exporting token CSV.")
        return categories

    def stats(self, range_text: str | None = None) -> Stats:
        from kward.telemetry.ranges import parse_range
        from kward.telemetry.stats import collect

        categories = self._categories_for()
        return collect(self.log_dir, parse_range(range_text, self._clock()), categories)

    def token_csv(self, range_text: str | None = None, bucket: str | None = None) -> TokenCsv:
        from kward.telemetry.ranges import parse_bucket, parse_range
        from kward.telemetry.tokens import export

        self._categories_for("tokens")
        rng = parse_range(range_text, self._clock())
        return export(self.log_dir, rng, parse_bucket(bucket, rng.unit))

    def shutdown(self) -> None:
        """Close the log file (a later record opens it again)."""
        with self._lock:
            log, self._log = self._log, None
        if log is not None:
            log.close()
