"""Lanes: each chat's updates answered one at a time, in order, many chats at once; crisis messages first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from telegram import Update

from bot.adapters.telegram.outbound import HURRIED

log = logging.getLogger("unhooked.telegram.intake")


def lane_of(update: Update) -> int:
    """The chat an update belongs to: its replies go out in the order its updates came in."""
    if update.effective_chat is not None:
        return update.effective_chat.id
    return update.effective_user.id if update.effective_user is not None else 0


def words_of(update: Update) -> str:
    """A message's (or an edit's) words, or its caption; empty for anything else (buttons, stickers)."""
    message = update.message or update.edited_message
    if message is None:
        return ""
    return message.text or message.caption or ""


@dataclass
class _Lane:
    """One chat's updates still to answer, oldest first, and how many of them are urgent."""

    waiting: deque[tuple[Update, float, bool]] = field(default_factory=deque)
    urgent: int = 0
    hurry: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when an urgent update joins: the lane stops waiting for a free slot."""


class Lanes:
    """One lane per chat: a chat's updates one at a time, in order; different chats at once, up to ``limit``.

    ``urgent`` (the engine's crisis screen on an update's words) is asked as each update arrives. A lane
    holding an urgent update goes ahead of the queue: it no longer waits for one of the ``limit`` slots, and
    what it sends goes out crisis-first (``outbound.HURRIED``). Its own earlier updates are still answered
    first, in order, so the conversation reads as it was written; each takes a moment, not a place in line.
    """

    def __init__(
        self,
        handle: Callable[[Update], Awaitable[None]],
        limit: int,
        on_answered: Callable[[float], None] | None = None,
        urgent: Callable[[Update], bool] | None = None,
    ) -> None:
        self._handle = handle
        self._urgent = urgent
        self._slots = asyncio.Semaphore(limit)
        self._lanes: dict[int, _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Condition()
        self._on_answered = on_answered
        """Told the seconds from each update's arrival to its answer (the latency histogram)."""
        self.pending = 0
        """Updates submitted and not yet answered."""

    def submit(self, update: Update) -> None:
        """Queue an update behind the earlier ones of its chat; an urgent one takes its lane ahead of the rest."""
        self.pending += 1
        urgent = self._urgent is not None and self._urgent(update)
        key = lane_of(update)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
            task = asyncio.create_task(self._run(key, lane), name="telegram-lane")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        lane.waiting.append((update, time.perf_counter(), urgent))
        if urgent:
            lane.urgent += 1
            lane.hurry.set()

    async def _run(self, key: int, lane: _Lane) -> None:
        try:
            while lane.waiting:
                update, arrived, urgent = lane.waiting[0]
                slot = await self._slot(lane)
                try:
                    await self._answer(update, arrived, hurried=lane.urgent > 0)
                finally:
                    if slot:
                        self._slots.release()
                lane.waiting.popleft()
                if urgent:
                    lane.urgent -= 1
                    if not lane.urgent:
                        lane.hurry.clear()
                self.pending -= 1
                async with self._changed:
                    self._changed.notify_all()
        finally:
            del self._lanes[key]

    async def _slot(self, lane: _Lane) -> bool:
        """Wait for a free slot, unless the lane is or becomes urgent; ``True`` if a slot was taken."""
        if lane.urgent:
            return False
        if not self._slots.locked():
            await self._slots.acquire()
            return True
        taking = asyncio.ensure_future(self._slots.acquire())
        hurrying = asyncio.ensure_future(lane.hurry.wait())
        try:
            await asyncio.wait({taking, hurrying}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hurrying.cancel()
            taking.cancel()  # no-op if the slot was taken meanwhile
        try:
            return await taking
        except asyncio.CancelledError:
            if not lane.urgent:
                raise  # this task itself was cancelled
            return False

    async def _answer(self, update: Update, arrived: float, *, hurried: bool) -> None:
        await answer_one(self._handle, update, arrived, self._on_answered, hurried=hurried)

    async def wait_below(self, limit: int) -> None:
        """Return once fewer than ``limit`` updates are waiting (back-pressure for polling)."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.pending < limit)

    async def drain(self, grace: float) -> int:
        """Let every lane finish within ``grace`` seconds, then cancel the rest; return how many were left."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace)
        left = self.pending
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return left


async def answer_one(
    handle: Callable[[Update], Awaitable[None]],
    update: Update,
    arrived: float,
    on_answered: Callable[[float], None] | None,
    *,
    hurried: bool,
) -> None:
    """Answer one update (crisis-first sending when ``hurried``); a failure is logged, the latency reported."""
    token = HURRIED.set(hurried)
    try:
        await handle(update)
    except Exception:
        log.exception("an update could not be handled")
    else:
        if on_answered is not None:
            on_answered(time.perf_counter() - arrived)
    finally:
        HURRIED.reset(token)
