"""Retention inside the bot: once a UTC day, escalation details and idle sessions past retention are purged.

Several processes may share one database; ``RunLock`` lets only one of them purge on a given day. One
process over one SQLite file takes it trivially (``LocalLock``); a shared database gives it a real lock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from bot.errors import StoreError
from bot.metrics import Metrics
from bot.operators import purge_report, retention_cutoff
from bot.store import Purged, Store, day_of

log = logging.getLogger("unhooked.retention")

CHECK_EVERY = 3600.0
"""Seconds between looks at whether today's purge has run: a day's purge runs within an hour of midnight UTC."""


class RunLock(Protocol):
    """Grants a job's run for a period to one process: ``claim`` is ``True`` for the first to ask for ``key``."""

    async def claim(self, key: str, until: float) -> bool:
        """Take ``key`` (e.g. ``retention:2026-11-29``) until the time ``until``; ``False`` if someone has it."""
        ...


class LocalLock:
    """The lock of a bot that is the only process on its database: each key is granted once, in memory."""

    def __init__(self) -> None:
        self._claimed: dict[str, float] = {}

    async def claim(self, key: str, until: float) -> bool:
        if key in self._claimed:
            return False
        self._claimed[key] = until
        return True


class Retention:
    """Purges what is past ``days`` once a UTC day, keeping escalations nobody has acknowledged."""

    def __init__(
        self,
        store: Store,
        days: int,
        lock: RunLock | None = None,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.days = days
        self.lock = lock or LocalLock()
        self.metrics = metrics or Metrics()
        self._clock = clock

    async def run_once(self) -> Purged | None:
        """Purge if today's run is not taken yet; return what it did, or ``None`` when it was not this one's turn."""
        now = self._clock()
        if not await self.lock.claim(f"retention:{day_of(now)}", now + 86400.0):
            return None
        before = retention_cutoff(now, self.days)
        try:
            result = await self.store.purge(before, keep_unacked=True)
        except StoreError as error:
            self.metrics.retention_runs.inc("failed")
            log.error("the daily purge failed (it runs again tomorrow, or with `python -m bot purge`): %s", error)
            return None
        self.metrics.retention_runs.inc("done")
        log.warning("daily retention: %s", purge_report(result, before, self.days))
        return result

    async def run_forever(self, every: float = CHECK_EVERY) -> None:
        """Look every ``every`` seconds until cancelled; the first look is at start."""
        while True:
            await self.run_once()
            await asyncio.sleep(every)
