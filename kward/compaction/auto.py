"""Automatic compaction during a turn: the guard the agent loop runs with
(`kward.agent.loop.TurnSetup.context`), made for the session the turn runs on.

- `before_request`: before each model request of the turn (the first one is "before the
  turn"), when the context estimate crosses the threshold (`kward.compaction.estimate`)
  the session is compacted (reason ``threshold``). Nothing to compact, or a failed
  compaction, leaves the context as it is and the request goes out (a failure is logged;
  the compactionEnd event says why).
- `after_overflow`: the provider rejected a request as too long for the context window
  (`ProviderError` kind ``context_overflow``): compact once per turn (reason
  ``overflow``, compactionEnd ``willRetry: true``); True when the request is to be sent
  again, False when the turn fails with the overflow error.

Both honour the `compaction` settings (`enabled`; the window: `context_window`, else the
model's). A cancellation during a compaction propagates (the turn is canceled). `busy`
(optional) is called with True when a compaction starts and with False when it ended,
however it ended (`runtime/state` `isCompacting` reads it).

Thread contract: one guard per turn, used on the turn's worker thread only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from kward.compaction.estimate import context_tokens, over_threshold
from kward.compaction.events import CompactionEmit
from kward.compaction.prompt import Profile
from kward.compaction.run import Summarize, run
from kward.config.settings import CompactionSettings
from kward.errors import AlreadyCompacted, Canceled, KwardError, NothingToCompact

if TYPE_CHECKING:  # pragma: no cover
    from kward.model import CompactionReason
    from kward.sessions.handle import SessionHandle

log = logging.getLogger(__name__)


class AutoCompaction:
    """The guard of one turn on `session`. `profile` is the workspace's language profile,
    or a callable that finds it: called once, when a compaction first starts (most turns
    never compact, so it is not looked for up front)."""

    def __init__(self, session: SessionHandle, settings: CompactionSettings, window: int | None,
                 summarize: Summarize, profile: Profile | Callable[[], Profile], emit: CompactionEmit,
                 busy: Callable[[bool], None] | None = None):
        self.session = session
        self.settings = settings
        self.window = settings.context_window or window
        self._summarize = summarize
        self._profile = profile
        self._emit = emit
        self._busy = busy
        self._overflow_used = False

    def needed(self, instructions: str) -> bool:
        """Whether the context estimate crosses the threshold."""
        if not self.settings.enabled or not self.window:
            return False
        tokens = context_tokens(self.session.entry_messages(), instructions)
        return over_threshold(tokens, self.window, self.settings.reserve_tokens)

    def before_request(self, instructions: str) -> None:
        if self.needed(instructions):
            self._compact(instructions, "threshold")

    def after_overflow(self, instructions: str) -> bool:
        if self._overflow_used or not self.settings.enabled:
            return False
        self._overflow_used = True
        return self._compact(instructions, "overflow")

    def _compact(self, instructions: str, reason: CompactionReason) -> bool:
        if self._busy is not None:
            self._busy(True)
        try:
            if not isinstance(self._profile, Profile):
                self._profile = self._profile()
            run(self.session, self._summarize, self.settings, self._profile, self._emit, reason=reason,
                instructions=instructions, will_retry=reason == "overflow", window=self.window)
            return True
        except (NothingToCompact, AlreadyCompacted):
            return False
        except Canceled:
            raise
        except KwardError as exc:
            log.warning("automatic compaction (%s) failed: %s", reason, exc.message)
            return False
        finally:
            if self._busy is not None:
                self._busy(False)
