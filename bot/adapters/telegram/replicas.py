"""Replicas in webhook mode on one PostgreSQL database: each chat answered by one replica at a time, in order.

Telegram POSTs each update to whichever replica the load balancer picks, so one chat's updates reach several
replicas. Whoever receives an update journals it (with its chat, its lane) and answers Telegram; then it tries
to take the chat's lock (``Store.locks``, an advisory lock). The holder answers the chat's unanswered updates
from the shared journal, oldest first, crosses each off before the next, and gives the lock back; a replica
that finds the lock taken leaves its update to the holder, which looks at the journal again after giving the
lock back, so nothing waits behind a lock that was just released. A replica that dies loses its locks with its
connection; every ``SWEEP_EVERY`` seconds each replica takes the chats whose updates have waited more than
``STALE_AFTER`` seconds and whose lock is free, so a killed replica's chats are answered within a few seconds.

Sessions are read from the database at each chat's first update under its lock and written with the answered
marks before the lock goes (``Sessions.recent_seconds`` is 0): the next replica sees what this one wrote. The
crash window is the single-process one: an update whose reply reached Telegram and whose mark (and session) had
not reached the database when its replica died is answered once more, from the session as it was, at most one
update per chat the dead replica was answering (``UNHOOKED_MAX_CONCURRENT_CHATS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from telegram import Bot, Update

from bot import periodic
from bot.adapters.telegram.inbound import RECENT_IDS, STORE_TIMEOUT, Journal, lane_of
from bot.adapters.telegram.lanes import answer_one
from bot.errors import ConfigError, StoreError
from bot.sessions import Sessions
from bot.store import Locks

log = logging.getLogger("unhooked.telegram.replicas")

SWEEP_EVERY = 1.0
"""Seconds between looks for chats left waiting by a replica that died."""
STALE_AFTER = 2.0
"""Seconds an unanswered update waits before any replica whose sweep finds its chat's lock free takes it."""


BOT_LOCK = "telegram-bot"
"""Held shared by every replica in webhook mode, and alone by a process that polls."""


async def claim_the_token(locks: Locks, *, webhook: bool) -> None:
    """Refuse to start beside a process this one would clash with on Telegram (polling allows one per token).

    On PostgreSQL the lock is real: it is held for the life of the process and goes with its connection. On
    SQLite and memory there is one process per database, and nothing to check.
    """
    if not locks.shared:
        return
    try:
        taken = await locks.acquire(BOT_LOCK, shared=webhook)
    except StoreError as error:
        raise ConfigError(f"could not check for other replicas on this database: {error}") from error
    if taken:
        return
    if webhook:
        raise ConfigError(
            "another Unhooked process polls Telegram from this database (UNHOOKED_DB): a bot is either polled by "
            "one process or sent to a webhook, not both; stop that process, then start the replicas with --webhook"
        )
    raise ConfigError(
        "another Unhooked process already runs on this database (UNHOOKED_DB): Telegram lets one process poll a "
        "bot's token, so more than one replica needs webhook mode; run each with --webhook behind a load "
        "balancer (set UNHOOKED_WEBHOOK_URL), or stop the other process"
    )


def lane_lock(lane: int) -> str:
    """The lock name of one chat."""
    return f"telegram-lane:{lane}"


class SharedLanes:
    """``Lanes`` across replicas: a chat's updates come from the shared journal, under the chat's lock."""

    def __init__(
        self,
        handle: Callable[[Update], Awaitable[None]],
        limit: int,
        journal: Journal,
        locks: Locks,
        bot: Bot,
        sessions: Sessions,
        on_answered: Callable[[float], None] | None = None,
        urgent: Callable[[Update], bool] | None = None,
    ) -> None:
        self._handle = handle
        self._urgent = urgent
        self._hurried: dict[int, set[int]] = {}
        """Per chat, the urgent updates (crisis messages) not answered yet: the chat waits for no slot."""
        sessions.recent_seconds = 0.0  # another replica may answer the person next, and write their session
        self._slots = asyncio.Semaphore(limit)
        self._journal = journal
        self._locks = locks
        self._bot = bot
        self._on_answered = on_answered
        self._received: dict[int, dict[int, tuple[Update, float]]] = {}
        """Per chat, the updates this replica received and has not answered or left to another, by id."""
        self._draining: dict[int, asyncio.Task[None]] = {}
        self._answered: OrderedDict[int, None] = OrderedDict()
        """Updates answered here, so one whose mark is late is not answered twice."""
        self._changed = asyncio.Condition()
        self.pending = 0
        """Updates received here and not answered yet."""

    def submit(self, update: Update) -> None:
        """Note an update (already journalled, or ``Journal.unguarded``) and see that its chat is answered."""
        lane = lane_of(update)
        self._received.setdefault(lane, {})[update.update_id] = (update, time.perf_counter())
        self.pending += 1
        self._screen(lane, update)
        self.take(lane)

    def _screen(self, lane: int, update: Update) -> None:
        """Note an urgent update, whichever replica received it: its chat goes ahead of the queue."""
        if self._urgent is not None and self._urgent(update):
            self._hurried.setdefault(lane, set()).add(update.update_id)

    def take(self, lane: int) -> None:
        """Answer ``lane``'s waiting updates here, unless this replica is at it already."""
        if lane not in self._draining:
            self._draining[lane] = asyncio.create_task(self._drain(lane), name="telegram-lane")

    async def _drain(self, lane: int) -> None:
        try:
            while True:
                try:
                    if not await self._locks.acquire(lane_lock(lane)):
                        # another replica answers this chat, and looks again when it lets go; it cannot know
                        # of an update the journal did not take, so that one is answered here
                        await self._answer_received(lane, only=self._journal.unguarded)
                        break
                except StoreError as error:
                    log.error("could not take a chat's lock (%s); answering what came here unguarded", error)
                    await self._answer_received(lane)
                    break
                try:
                    await self._answer_waiting(lane)
                finally:
                    await self._let_go(lane)
                if not await self._still_waiting(lane):
                    break
        finally:
            del self._draining[lane]
            self._forget(lane, set(self._received.get(lane, {})))
            self._hurried.pop(lane, None)  # what is left of the chat is another replica's to answer

    async def _answer_waiting(self, lane: int) -> None:
        """Holding the chat's lock: its journalled updates oldest first, then what only this replica knows of."""
        try:
            waiting = await self._journal.store.lane_updates(lane)
        except StoreError as error:
            log.error("could not read a chat's updates (%s); answering what came here unguarded", error)
            waiting = []
        for update_id, raw in waiting:
            if update_id in self._answered:
                continue
            found = self._received.get(lane, {}).get(update_id)
            if found is None:
                try:
                    found = (Update.de_json(json.loads(raw), self._bot), time.perf_counter())
                except (ValueError, TypeError, KeyError) as error:
                    log.error("journalled update %d is unreadable (%s); dropped", update_id, type(error).__name__)
                    continue
                self._screen(lane, found[0])  # received by another replica: screened here as it is taken
            await self._answer(lane, *found)
        await self._answer_received(lane, only=self._journal.unguarded)

    async def _answer_received(self, lane: int, only: set[int] | None = None) -> None:
        """Answer the updates of ``lane`` that came to this replica (``only`` some), in the order they came."""
        for update_id, found in sorted(self._received.get(lane, {}).items()):
            if (only is None or update_id in only) and update_id not in self._answered:
                await self._answer(lane, *found)

    async def _answer(self, lane: int, update: Update, arrived: float) -> None:
        urgent = self._hurried.get(lane)
        if urgent:  # a crisis message waits for no slot, nor do the chat's earlier updates before it
            await answer_one(self._handle, update, arrived, self._on_answered, hurried=True)
            urgent.discard(update.update_id)
            if not urgent:
                del self._hurried[lane]
        else:
            async with self._slots:
                await answer_one(self._handle, update, arrived, self._on_answered, hurried=False)
        self._answered[update.update_id] = None
        if len(self._answered) > RECENT_IDS:
            self._answered.popitem(last=False)
        await self._forget_one(lane, update.update_id)

    async def _forget_one(self, lane: int, update_id: int) -> None:
        self._forget(lane, {update_id})
        async with self._changed:
            self._changed.notify_all()

    def _forget(self, lane: int, update_ids: set[int]) -> None:
        """Stop counting updates as this replica's: answered here, or left to the replica holding the chat."""
        received = self._received.get(lane, {})
        for update_id in update_ids:
            if received.pop(update_id, None) is not None:
                self.pending -= 1
        if not received:
            self._received.pop(lane, None)

    async def _let_go(self, lane: int) -> None:
        """Cross off what was answered, with the sessions it left, then give the chat's lock back.

        The next holder must read the person's session as it is now, and not answer an update again.
        """
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                await self._journal.flush()
        except (StoreError, TimeoutError) as error:
            log.error("could not mark a chat's updates answered before letting it go (%s)", type(error).__name__)
        try:
            await self._locks.release(lane_lock(lane))
        except StoreError as error:
            log.error("could not give a chat's lock back (%s); it goes with the connection", error)

    async def _still_waiting(self, lane: int) -> bool:
        """Whether an update of ``lane`` came in while this replica held it, and another may have left it here."""
        try:
            waiting = await self._journal.store.lane_updates(lane)
        except StoreError:
            return False
        return any(update_id not in self._answered for update_id, _ in waiting)

    async def sweep(self, now: float) -> int:
        """Take the chats with updates left waiting (by a replica that died); return how many were looked at."""
        try:
            lanes = await self._journal.store.waiting_lanes(now - STALE_AFTER)
        except StoreError as error:
            log.error("could not look for chats left waiting: %s", error)
            return 0
        for lane in lanes:
            self.take(lane)
        return len(lanes)

    async def sweep_forever(self, every: float = SWEEP_EVERY) -> None:
        """Sweep every ``every`` seconds until cancelled."""
        await periodic.every(every, {"lane sweep": lambda: self.sweep(time.time())}, wait_first=True)

    async def wait_below(self, limit: int) -> None:
        """Return once fewer than ``limit`` updates are waiting."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.pending < limit)

    async def drain(self, grace: float) -> int:
        """Let the chats under way finish within ``grace`` seconds, then cancel the rest; return how many were left."""
        if self._draining:
            await asyncio.wait(set(self._draining.values()), timeout=grace)
        left = self.pending
        tasks = list(self._draining.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return left
