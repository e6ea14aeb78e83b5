"""Sessions and daily counts, kept in memory while they change and written in batches off the reply path."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable

from bot.errors import StoreError
from bot.health import STORE, Faults, describe
from bot.metrics import Metrics
from bot.models import Session
from bot.store import SessionStore, day_of

log = logging.getLogger("unhooked.sessions")

FLUSH_DELAY = 0.05
"""Seconds to gather changed sessions before one batched write."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Back-off between failed writes; the last one repeats while the store stays down."""
RECENT_SESSIONS = 4096
"""Sessions kept in memory after they are written, so a conversation's next message needs no database read."""
RECENT_SECONDS = 600.0
"""How long a written session is served from memory; after that it is read from the database again."""


class Sessions:
    """Reads sessions from the store and writes changed ones back in one transaction per batch.

    A turn's session is written only once its replies were delivered: the engine ``hold``s it (served from
    memory at once, so the person's next message sees it), and the adapter, once the replies are out, either
    ``put``s it (written with the next batch) or writes it itself with its own durable step and says so
    (``saved``: the Telegram adapter, with the update's answered mark). So a crash never leaves on disk a
    session that assumes a reply the person never got. A reply never waits for a write. A session waiting
    to be written is served from memory, even while the store is slow or down. A session just written stays
    in memory a while (``RECENT_SESSIONS``, ``RECENT_SECONDS``), so a conversation does not read the database
    at every message; this process is the only one that writes sessions. Each ``get`` hands out a copy: what
    a turn changes is its own until it is held.
    """

    def __init__(
        self,
        store: SessionStore,
        *,
        read_timeout: float = 2.0,
        flush_delay: float = FLUSH_DELAY,
        metrics: Metrics | None = None,
        faults: Faults | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.read_timeout = read_timeout
        self.flush_delay = flush_delay
        self.metrics = metrics or Metrics()
        self.faults = faults or Faults()
        self._clock = clock
        self._held: dict[str, Session] = {}
        """Sessions as the last turn left them, whose replies are not delivered or whose write is not done yet."""
        self._dirty: dict[str, Session] = {}
        self._writing: dict[str, Session] = {}
        """Sessions of the batch being written: no longer dirty, not yet in the store, still the latest."""
        self._recent: OrderedDict[str, tuple[Session, float]] = OrderedDict()
        """Sessions written lately, as they are in the store, with when they were written."""
        self.recent_seconds = RECENT_SECONDS
        """How long a written session is served from memory; 0 where replicas share the store (each may write)."""
        self._flushing = asyncio.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._wake = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self.metrics.sessions_pending.read = lambda: self.pending

    @property
    def pending(self) -> int:
        """How many changed sessions are not written yet (held for their replies, or waiting for the write)."""
        return len(self._held) + len(self._dirty)

    async def get(self, user_key: str, now: float, *, timeout: float | None = None) -> Session:
        """A copy of the person's session, or a new one if there is none or the store does not answer in time."""
        waiting = (
            self._held.get(user_key)
            or self._dirty.get(user_key)
            or self._writing.get(user_key)
            or self._still_recent(user_key)
        )
        if waiting is not None:
            return dataclasses.replace(waiting, shown=set(waiting.shown))
        waited = self.read_timeout if timeout is None else timeout
        try:
            async with asyncio.timeout(waited):
                found = await self.store.load_session(user_key)
        except (StoreError, TimeoutError) as error:
            log.warning("session read failed, starting afresh: %s", describe(error, waited))
            self.metrics.store_errors.inc("session_read")
            self.faults.fail(STORE, "session reads", describe(error, waited))
            found = None
        else:
            self.faults.clear(STORE, "session reads")
        return found or Session(user_key=user_key, first_seen=now, last_seen=now)

    def _still_recent(self, user_key: str) -> Session | None:
        entry = self._recent.get(user_key)
        if entry is None:
            return None
        session, written = entry
        if self._clock() - written > self.recent_seconds:
            del self._recent[user_key]
            return None
        self._recent.move_to_end(user_key)
        return session

    def _remember(self, sessions: Iterable[Session]) -> None:
        written = self._clock()
        for session in sessions:
            self._recent[session.user_key] = (session, written)
            self._recent.move_to_end(session.user_key)
        while len(self._recent) > RECENT_SESSIONS:
            self._recent.popitem(last=False)

    def hold(self, session: Session) -> None:
        """A turn's session: served from memory from now on, written once the adapter delivered its replies."""
        self._held[session.user_key] = session

    def put(self, session: Session) -> None:
        """The turn's replies were delivered: write its session with the next batch."""
        if self._held.get(session.user_key) is session:
            del self._held[session.user_key]
        self._dirty[session.user_key] = session
        self._wake_flusher()

    def saved(self, sessions: Iterable[Session]) -> None:
        """Held sessions the adapter wrote itself, in its own durable step; a newer or forgotten one stays as is."""
        written = [session for session in sessions if self._held.get(session.user_key) is session]
        for session in written:
            del self._held[session.user_key]
        self._remember(written)

    def _wake_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_forever(), name="session-flusher")
        self._wake.set()

    def count(self, name: str, at: float, amount: int = 1) -> None:
        """Add to an anonymous daily counter (the UTC day of ``at``); written with the next batch."""
        self._counts[(day_of(at), name)] += amount
        self._wake_flusher()

    def drop(self, user_key: str) -> None:
        """Forget a person's session in memory, written or not (the person asked to be forgotten)."""
        self._held.pop(user_key, None)
        self._dirty.pop(user_key, None)
        self._writing.pop(user_key, None)
        self._recent.pop(user_key, None)

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
            else:  # those not dropped (/forget) while they were being written
                self._remember(session for key, session in batch.items() if self._writing.get(key) is session)
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
        await write_behind(self._wake, self.flush, self._write_failed, self._written, delay=self.flush_delay)

    def _write_failed(self, error: Exception, pause: float) -> None:
        self.metrics.store_errors.inc("session_write")
        self.faults.fail(STORE, "session writes", describe(error))
        log.error("session write failed (%d waiting), retrying in %ss: %s", self.pending, pause, error)

    def _written(self) -> None:
        self.faults.clear(STORE, "session writes")

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


async def write_behind(
    wake: asyncio.Event,
    write: Callable[[], Awaitable[None]],
    failed: Callable[[Exception, float], None],
    worked: Callable[[], None],
    *,
    delay: float = 0.0,
    retry_delays: tuple[float, ...] = RETRY_DELAYS,
) -> None:
    """Call ``write`` each time ``wake`` is set (after ``delay``, to gather more), until cancelled.

    A write the store refuses (``StoreError``, or a ``TimeoutError``) is tried again after a pause
    from ``retry_delays``, the last repeating; ``failed`` hears of each failure and its pause,
    ``worked`` of each success.
    """
    failures = 0
    while True:
        await wake.wait()
        wake.clear()
        if delay:
            await asyncio.sleep(delay)
        try:
            await write()
        except (StoreError, TimeoutError) as error:
            pause = retry_delays[min(failures, len(retry_delays) - 1)]
            failures += 1
            failed(error, pause)
            await asyncio.sleep(pause)
            wake.set()
        else:
            failures = 0
            worked()
