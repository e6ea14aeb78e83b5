"""Sessions and daily counts, kept in memory while they change and written in batches off the reply path."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter

from bot.errors import StoreError
from bot.models import Session
from bot.store import Store, day_of

log = logging.getLogger("unhooked.sessions")

FLUSH_DELAY = 0.05
"""Seconds to gather changed sessions before one batched write."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Back-off between failed writes; the last one repeats while the store stays down."""


class Sessions:
    """Reads sessions from the store and writes changed ones back in one transaction per batch.

    A reply never waits for a write: ``put`` only marks the session as changed. A session that
    is waiting to be written is served from memory, so the next message of the same person sees
    it even while the store is slow or down.
    """

    def __init__(self, store: Store, *, read_timeout: float = 2.0, flush_delay: float = FLUSH_DELAY) -> None:
        self.store = store
        self.read_timeout = read_timeout
        self.flush_delay = flush_delay
        self._dirty: dict[str, Session] = {}
        self._writing: dict[str, Session] = {}
        self._flushing = asyncio.Lock()
        """Sessions of the batch being written: no longer dirty, not yet in the store, still the latest."""
        self._counts: Counter[tuple[str, str]] = Counter()
        self._wake = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._failures = 0

    @property
    def pending(self) -> int:
        """How many changed sessions are waiting to be written."""
        return len(self._dirty)

    async def get(self, user_key: str, now: float, *, timeout: float | None = None) -> Session:
        """The person's session, or a new one if there is none or the store does not answer in time."""
        waiting = self._dirty.get(user_key) or self._writing.get(user_key)
        if waiting is not None:
            return waiting
        try:
            async with asyncio.timeout(self.read_timeout if timeout is None else timeout):
                found = await self.store.load_session(user_key)
        except (StoreError, TimeoutError) as error:
            log.warning("session read failed, starting afresh: %s", type(error).__name__)
            found = None
        return found or Session(user_key=user_key, first_seen=now, last_seen=now)

    def put(self, session: Session) -> None:
        """Mark the session as changed; it is written with the next batch."""
        self._dirty[session.user_key] = session
        self._wake_flusher()

    def _wake_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_forever(), name="session-flusher")
        self._wake.set()

    def count(self, name: str, at: float, amount: int = 1) -> None:
        """Add to an anonymous daily counter (the UTC day of ``at``); written with the next batch."""
        self._counts[(day_of(at), name)] += amount
        self._wake_flusher()

    def drop(self, user_key: str) -> None:
        """Forget a changed session before it is written (the person asked to be forgotten)."""
        self._dirty.pop(user_key, None)
        self._writing.pop(user_key, None)

    async def flush(self) -> None:
        """Write every changed session and count now; raises ``StoreError`` if the store refuses.

        A flush already under way (the background writer's) is waited for first, so that when this returns
        everything changed before the call is in the store.
        """
        async with self._flushing:
            await self._flush()

    async def _flush(self) -> None:
        if self._dirty:
            batch, self._dirty = self._dirty, {}
            self._writing.update(batch)
            try:
                await self.store.save_sessions(list(batch.values()))
            except BaseException:
                for key, session in batch.items():
                    self._dirty.setdefault(key, session)
                raise
            finally:
                for key, session in batch.items():
                    if self._writing.get(key) is session:
                        del self._writing[key]
        if self._counts:
            counts, self._counts = self._counts, Counter()
            try:
                await self.store.add_counts(counts)
            except BaseException:
                self._counts.update(counts)
                raise

    async def _flush_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(self.flush_delay)
            try:
                await self.flush()
                self._failures = 0
            except StoreError as error:
                delay = RETRY_DELAYS[min(self._failures, len(RETRY_DELAYS) - 1)]
                self._failures += 1
                log.error("session write failed (%d waiting), retrying in %ss: %s", self.pending, delay, error)
                await asyncio.sleep(delay)
                self._wake.set()

    async def aclose(self) -> None:
        """Stop the background writer after a last attempt to write what is waiting."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        try:
            await self.flush()
        except StoreError as error:
            log.error("could not write %d sessions at shutdown: %s", self.pending, error)
