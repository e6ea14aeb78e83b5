"""Retention inside the bot: once a UTC day, escalation details and idle sessions past retention are purged.

Several replicas may share one database: the day's run is claimed in the store (``Store.claim_run``, a row
every process sees), so exactly one of them purges on a given day.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bot import periodic
from bot.errors import StoreError
from bot.metrics import Metrics
from bot.operators import purge_report, retention_cutoff
from bot.store import Purged, Store, day_of

log = logging.getLogger("unhooked.retention")

CHECK_EVERY = 3600.0
"""Seconds between looks at whether today's purge has run: a day's purge runs within an hour of midnight UTC."""


class Retention:
    """Purges what is past ``days`` once a UTC day, keeping escalations nobody has acknowledged."""

    def __init__(
        self,
        store: Store,
        days: int,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.days = days
        self.metrics = metrics or Metrics()
        self._clock = clock

    async def run_once(self) -> Purged | None:
        """Purge if today's run is not taken yet; return what it did, or ``None`` when it was not this one's turn."""
        now = self._clock()
        before = retention_cutoff(now, self.days)
        try:
            if not await self.store.claim_run(f"retention:{day_of(now)}", now):
                return None
            result = await self.store.purge(before, keep_unacked=True)
        except StoreError as error:
            self.metrics.retention_runs.inc("failed")
            log.error("the daily purge failed (it runs again tomorrow, or with `python -m bot purge`): %s", error)
            return None
        self.metrics.retention_runs.inc("done")
        purged = result.escalations or result.sessions or result.kept
        log.log(
            logging.WARNING if purged else logging.INFO, "daily retention: %s", purge_report(result, before, self.days)
        )
        return result

    async def run_forever(self, every: float = CHECK_EVERY) -> None:
        """Look every ``every`` seconds until cancelled; the first look is at start."""
        await periodic.every(every, {"daily purge": self.run_once})
