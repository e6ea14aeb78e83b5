"""The one way out to Telegram: pacing, crisis replies first, waiting out 429s and retrying what can be retried.

Every Bot API call but ``getUpdates`` passes through ``Sender`` (python-telegram-bot's rate-limiter hook,
``ExtBot._do_post``). PTB itself retries nothing: a 429 or a 5xx raises and the reply is lost. Here:

- ``RetryAfter`` (429): all sending pauses for the time Telegram named, then the request goes again,
  in its old place in the queue. Telegram does not say whether a 429 was for one chat or the whole bot,
  so the pause is for the whole bot, as PTB's own ``AIORateLimiter`` does; except for operators' alerts:
  the operators' group has its own, much lower limit (about 20 messages a minute), so a 429 to an alert
  pauses only alerts, and replies to people go on.
- ``TimedOut`` and other ``NetworkError`` (5xx, connection refused): retried with capped exponential
  back-off, until it goes through or the bot stops. A timed-out request may have reached Telegram, so a
  retry can deliver a message twice; for a crisis reply that is better than not at all.
- ``Forbidden`` (403, the person blocked the bot), ``BadRequest`` (400) and the rest: raised at once.
- ``InvalidToken`` (401, a revoked token): raised at once, and ``refused`` is set so the bot stops.
- Waiting requests go out crisis replies first, then operators' alerts, then everything else. Everything a
  chat with a crisis message waiting sends (``HURRIED``, set by the intake) counts as a crisis reply.
- At most ``connections`` requests are under way at once (the HTTP pool's size), so the priority order
  above also decides who gets the next free connection: a crisis reply never queues inside the HTTP
  client behind ordinary ones. A small pool is also cheaper: httpx checks every idle connection of its
  pool on each request (``httpcore``'s ``_assign_requests_to_connections``), which with 40 connections
  cost this bot a third of its throughput in ``python -m bench telegram``.

PTB's docs ask a rate limiter not to handle errors other than ``RetryAfter``; this one does, on purpose,
so that one place owns every retry and its order (the lead's design: one sender for all of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.ext import BaseRateLimiter

from bot.adapters.telegram.health import TelegramMetrics

log = logging.getLogger("unhooked.telegram.send")

FIRST_RETRY_DELAY = 0.5
"""Seconds before the first retry of a failed request; doubled each time up to ``max_delay``."""
RETRY_AFTER_SLACK = 0.1
"""Seconds added to Telegram's ``retry_after``, so the retry lands after the limit has lifted."""


class Priority(IntEnum):
    """Which waiting request goes first; lower goes earlier."""

    CRISIS = 0
    ALERT = 1
    NORMAL = 2


@dataclass(frozen=True)
class Send:
    """How one request goes out (PTB's ``rate_limit_args``)."""

    priority: Priority = Priority.NORMAL
    attempts: int | None = None
    """How many times it may be tried; ``None`` tries until it gets through or the bot stops."""


HURRIED: ContextVar[bool] = ContextVar("hurried", default=False)
"""Set while answering an update of a chat that has a crisis message waiting: its sends go crisis-first."""
CRISIS = Send(Priority.CRISIS)
ALERT = Send(Priority.ALERT, attempts=3)
"""Alerts give up sooner: the escalation log keeps them owed and the escalator tries again later."""


def seconds(period: float | dtm.timedelta) -> float:
    """A PTB time period (a number, or a ``timedelta`` with ``PTB_TIMEDELTA=true``) in seconds."""
    return period.total_seconds() if isinstance(period, dtm.timedelta) else float(period)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def backoff(failures: int, max_delay: float) -> float:
    """The pause after ``failures`` failures in a row: 0.5 s, 1 s, 2 s ... up to ``max_delay``."""
    return min(max_delay, FIRST_RETRY_DELAY * 2 ** max(0, failures - 1))


SEND_CONNECTIONS = 8
"""Requests under way at once, and the size of the HTTP pool that carries them. Against Telegram (tens of
milliseconds a round trip) 8 carry well over the 30 messages a second Telegram allows a bot."""


class Sender(BaseRateLimiter[Send]):
    """Paces requests to ``per_second`` (bursts up to that many), in priority order, and retries them."""

    def __init__(
        self,
        per_second: float,
        *,
        max_delay: float = 30.0,
        connections: int = SEND_CONNECTIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_second = per_second
        self.max_delay = max_delay
        self.connections = connections
        self._busy = 0
        """Requests under way (granted a turn, not finished)."""
        self._freed = asyncio.Event()
        self._clock = clock
        self._burst = max(1.0, per_second)
        self._tokens = self._burst
        self._refilled = clock()
        self._resume_at = 0.0
        self._alerts_resume_at = 0.0
        """When alerts may go again after a 429 to one of them (the operators' chat's own limit)."""
        self._alerts_paused: asyncio.Future[None] | None = None
        """Resolved when that pause ends: every alert waiting on it wakes, in the order it began to wait."""
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._pump: asyncio.Task[None] | None = None
        self.retries = 0
        """How many requests were sent again after a failure."""
        self.metrics: TelegramMetrics | None = None
        """Where failures are counted and reported to health, once the bot is running (``watch``)."""
        self.refused = asyncio.Event()
        """Set when Telegram refuses the token (401 or 404 on a request): the bot stops confirming updates."""

    def watch(self, metrics: TelegramMetrics) -> None:
        """Count every failure in ``metrics`` from now on, and report a failing link to health."""
        self.metrics = metrics

    async def initialize(self) -> None:
        """Nothing to set up; the pump starts with the first request."""

    async def shutdown(self) -> None:
        """Stop pacing; requests still waiting are cancelled."""
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
            self._pump = None
        for _, _, future in self._waiting:
            future.cancel()
        self._waiting.clear()

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: Send | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        send = rate_limit_args or Send()
        if send.priority is Priority.NORMAL and HURRIED.get():
            send = Send(Priority.CRISIS, send.attempts)
        place = next(self._order)
        failures = 0
        while True:
            if send.priority is Priority.ALERT:
                await self._alerts_may_go()
            await self._turn(send.priority, place)
            try:
                result = await callback(*args, **kwargs)
            except TelegramError as error:
                failed = error
            else:
                failed = None
            finally:
                self._done()
            if failed is None:
                if self.metrics is not None:
                    self.metrics.worked()
                return result
            if self.metrics is not None:
                self.metrics.failed(endpoint, failed)
            if isinstance(failed, InvalidToken):
                self.refused.set()
            if isinstance(failed, BadRequest) or not isinstance(failed, RetryAfter | NetworkError):
                raise failed  # a refused token, Forbidden (blocked), 400 and the rest: retrying would not help
            failures += 1
            await self._before_retry(endpoint, failed, failures, send)
            self.retries += 1
            if self.metrics is not None:
                self.metrics.retries.inc(endpoint)

    async def _alerts_may_go(self) -> None:
        """Wait out a 429 to an alert; the alerts that waited go again in the order they began to wait."""
        while (wait := self._alerts_resume_at - self._clock()) > 0:
            if self._alerts_paused is None or self._alerts_paused.done():
                self._alerts_paused = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().call_later(wait, _resolve, self._alerts_paused)
            await asyncio.shield(self._alerts_paused)  # one waiter giving up does not wake the others

    def _done(self) -> None:
        """A request finished: its connection is free for the next one."""
        self._busy -= 1
        self._freed.set()

    async def _before_retry(self, endpoint: str, error: RetryAfter | NetworkError, failures: int, send: Send) -> None:
        """Pause for a 429 (all sending, or only alerts) or a network error (this request); raise if no tries left."""
        if isinstance(error, RetryAfter):
            wait = seconds(error.retry_after) + RETRY_AFTER_SLACK
            if send.priority is Priority.ALERT:
                self._alerts_resume_at = max(self._alerts_resume_at, self._clock() + wait)
                log.warning("Telegram asked alerts to wait %.1fs (the operators' chat); replies go on", wait)
            else:
                self._resume_at = max(self._resume_at, self._clock() + wait)
                log.warning("Telegram asked to wait %.1fs (%s); all sending pauses", wait, endpoint)
        if send.attempts is not None and failures >= send.attempts:
            raise error
        if not isinstance(error, RetryAfter):  # TimedOut, 5xx, connection errors
            delay = backoff(failures, self.max_delay)
            log.warning("%s failed (%s); retry %d in %.1fs", endpoint, type(error).__name__, failures, delay)
            await asyncio.sleep(delay)

    async def _turn(self, priority: Priority, place: int) -> None:
        """Wait until this request may go: no pause, a token and a connection free, nobody more urgent waiting."""
        if not self._waiting and self._busy < self.connections:  # nobody queued: go now if allowed
            now = self._clock()
            if self._resume_at <= now:
                self._refill(now)
                if self._tokens >= 1:
                    self._tokens -= 1
                    self._busy += 1
                    return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, place, future))
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._release(), name="telegram-sender")
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted just as the caller gave up: give it back
                self._done()
            raise

    def _refill(self, now: float) -> None:
        self._tokens = min(self._burst, self._tokens + (now - self._refilled) * self.per_second)
        self._refilled = now

    async def _release(self) -> None:
        while self._waiting:
            if self._busy >= self.connections:
                self._freed.clear()
                await self._freed.wait()
                continue
            now = self._clock()
            wait = self._resume_at - now
            if wait <= 0:
                self._refill(now)
                if self._tokens >= 1:
                    _, _, future = heapq.heappop(self._waiting)
                    if not future.done():  # a cancelled request gives its turn away
                        self._tokens -= 1
                        self._busy += 1
                        future.set_result(None)
                    continue
                wait = (1 - self._tokens) / self.per_second
            await asyncio.sleep(wait)
