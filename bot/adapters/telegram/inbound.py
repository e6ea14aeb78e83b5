"""Updates in: written to the journal before Telegram may forget them, then answered in order per chat.

Why a polling loop of our own (and not PTB's ``Updater``): ``getUpdates(offset=N)`` tells Telegram that
every update below N arrived, and Telegram drops them. PTB's ``Updater._start_polling`` asks for the next
batch as soon as it has put the last one on ``update_queue``, before a handler ran
(``telegram/ext/_updater.py``, ``polling_action_cb``), so a crash loses the whole batch. ``poll`` below
journals a batch in one transaction first and only then asks for the next one; the place where an update
becomes safe is one line of our code, not a side effect of a subclass. Webhook mode journals before it
answers Telegram's POST (``webhook.py``). Both hand updates to ``Intake.receive``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
import functools
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from telegram import Bot, Update
from telegram.error import Conflict, EndPointNotFound, InvalidToken, RetryAfter, TelegramError

from bot import periodic
from bot.adapters.telegram.health import ACCESS, TelegramMetrics
from bot.adapters.telegram.kept import kept
from bot.adapters.telegram.lanes import Lanes, lane_of
from bot.adapters.telegram.outbound import backoff, seconds
from bot.errors import StoreError
from bot.health import STORE, Faults, describe
from bot.metrics import Metrics
from bot.models import Session
from bot.sessions import write_behind
from bot.store import Answered, LocalLocks, Locks, TelegramJournal, run_once

log = logging.getLogger("unhooked.telegram.intake")

ALLOWED_UPDATES = ("message", "edited_message", "callback_query")
"""The update types the bot asks Telegram for."""
KEEP_IDS_FOR = 48 * 3600.0
"""Seconds an answered update's id (and a message id for /erase) is kept. Telegram keeps an unconfirmed
update for at most 24 hours, so 48 hours of ids is enough to never answer a redelivered update twice,
and Telegram lets a bot delete messages for 48 hours."""
PURGE_EVERY = 3600.0
STORE_TIMEOUT = 2.0
"""Seconds the Telegram side waits for the store in other work (/forget, the group notice, a batch of marks)."""
JOURNAL_WAIT = 0.5
"""Seconds a batch of updates waits to be journalled before it is answered anyway. The write goes on and lands
later (writes finish even when their callers stop waiting); only a crash before then could lose the batch."""
MARK_WAIT = 0.25
"""Seconds a chat waits for its last update's answered mark before its next update. Marks take milliseconds;
this only matters while the store is failing, when a crisis message must not wait behind it."""
RECENT_IDS = 10_000
"""Update ids remembered in memory, to deduplicate even while the store is down."""
MAX_PENDING = 10_000
"""Updates waiting to be answered before polling pauses to let the bot catch up (about 2.5 kB each in memory).
Crisis messages are taken ahead of the queue only once fetched, so this is the backlog the bot holds itself
rather than leaving it at Telegram, where a crisis message would wait unseen."""
CONFLICT_PAUSE = 30.0
"""Seconds polling pauses after a 409 (another instance on the token): the other one takes the updates
meanwhile, so only one answers; if both keep running they take turns, and both report it."""
CONFLICT_MEMORY = 600.0
"""Seconds without a 409 before health stops reporting another instance."""
ANOTHER_INSTANCE = "another instance"
MARK_RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Back-off between failed writes of answered marks; the last one repeats while the store stays down."""


class Journal:
    """Writes each update down before it can be lost, and drops its text once it is answered.

    A journal row keeps only what answering needs (``kept``: no names, usernames, languages, files or places),
    and once answered it is an update id and two times, which say nothing about anyone: kept 48 hours so a
    redelivered update is never answered twice. So ``/forget`` has nothing to delete here: that person's
    earlier updates are already answered (a chat's updates are answered in order), and the ``/forget``
    update's own text goes the moment it is answered, like every other.

    The person's session is written with the update's answered mark, in the same transaction, so it is never
    on disk before the reply it assumes was sent: after a crash the update is answered again from the session
    as it was, and the person gets the passage they never saw instead of the one after it.

    Answered marks are written in batches (group commit): ``answered`` queues the mark and waits, and one
    writer task writes every mark queued meanwhile in one transaction, then the next batch. Under load that
    is one commit for many updates instead of one each. Each chat waits for its mark before its next update,
    so a crash between a reply reaching Telegram and its mark reaching the disk can catch at most one update
    per chat being answered (``UNHOOKED_MAX_CONCURRENT_CHATS`` in all): those are answered again at the next
    start. Telegram's sendMessage has no idempotency key and a bot cannot read what it sent, so no order of
    "send" and "mark" closes that window; marking first would lose replies instead of repeating them.
    """

    def __init__(
        self,
        store: TelegramJournal,
        clock: Callable[[], float] = time.time,
        *,
        metrics: Metrics | None = None,
        faults: Faults | None = None,
        on_saved: Callable[[list[Session]], None] | None = None,
    ) -> None:
        self.store = store
        self._clock = clock
        self._on_saved = on_saved
        """Told the sessions each batch of marks wrote (``Sessions.saved``)."""
        self.metrics = metrics or Metrics()
        self.faults = faults or Faults()
        self._recent: OrderedDict[int, None] = OrderedDict()
        self.unguarded: set[int] = set()
        """Updates admitted without reaching the journal (the store failed): only this process knows of them."""
        self._unstored: dict[int, tuple[str, int]] = {}
        """Updates admitted that the journal did not take yet, with their JSON and chat, written with each batch."""
        self._held_marks: dict[int, tuple[Answered, asyncio.Future[None]]] = {}
        """Marks of updates answered while unstored: queued once their rows are in the journal."""
        self._marks: list[tuple[Answered, asyncio.Future[None]]] = []
        self._marking = asyncio.Lock()
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

    @property
    def pending_marks(self) -> int:
        """Answered updates whose mark is not written yet."""
        return len(self._marks)

    def _seen(self, update_id: int) -> bool:
        if update_id in self._recent:
            return True
        self._recent[update_id] = None
        if len(self._recent) > RECENT_IDS:
            self._recent.popitem(last=False)
        return False

    @property
    def first_unstored(self) -> int | None:
        """The oldest update admitted that the journal has not taken yet: Telegram must not be told it arrived."""
        return min(self._unstored) if self._unstored else None

    def stored(self, update_id: int) -> bool:
        """Whether an admitted update is in the journal (or was answered before)."""
        return update_id not in self._unstored

    async def admit(self, updates: Sequence[Update]) -> list[Update]:
        """Journal a batch in one transaction; return the updates to answer (none answered or under way).

        Each update is journalled as ``kept`` keeps it. Updates the journal did not take in time are answered
        anyway (a crisis reply must not wait for a locked database) and kept ``unstored``: polling does not
        confirm them, so Telegram sends them again, and each later batch writes them again with its own until
        the journal takes them.
        """
        new = [update for update in updates if not self._seen(update.update_id)]
        waiting = dict(self._unstored)
        for update in new:
            waiting[update.update_id] = (json.dumps(kept(update), ensure_ascii=False), lane_of(update))
        if not waiting:
            return []
        rows = [(update_id, text) for update_id, (text, _) in waiting.items()]
        lanes = {update_id: lane for update_id, (_, lane) in waiting.items()}
        try:
            async with asyncio.timeout(JOURNAL_WAIT):
                fresh = set(await self.store.record_updates(rows, self._clock(), lanes))
        except (StoreError, TimeoutError) as error:
            self._failed("journal_write", "update journal", error, JOURNAL_WAIT)
            log.error(
                "could not journal %d updates (%s); answering them, and not confirming them to Telegram",
                len(waiting),
                type(error).__name__,
            )
            self._unstored = waiting
            self.unguarded.update(lanes)
            return new
        self.faults.clear(STORE, "update journal")
        if self._unstored:
            log.warning("journalled %d updates that had waited for the database", len(self._unstored))
            self._unstored = {}
            for mark in self._held_marks.values():  # answered while unstored: crossed off now they are stored
                self._queue_mark(*mark)
            self._held_marks.clear()
        return [update for update in new if update.update_id in fresh]

    def _failed(self, operation: str, source: str, error: BaseException, waited: float = STORE_TIMEOUT) -> None:
        self.metrics.store_errors.inc(operation)
        self.faults.fail(STORE, source, describe(error, waited))

    async def answered(
        self, update: Update, chat_key: str | None, message_ids: Sequence[int], session: Session | None = None
    ) -> None:
        """Cross an update off (its text goes) with the session its answer left and the ids for /erase; once on disk.

        One transaction for all three. The mark goes with the next batch; this waits for it at most ``MARK_WAIT``
        (a store that is down does not stop the chat: the writer keeps trying, and the update would be answered
        again after a crash, from the session as it was before).
        """
        self.unguarded.discard(update.update_id)
        written = asyncio.get_running_loop().create_future()
        mark = Answered(update.update_id, chat_key, tuple(message_ids), session)
        if update.update_id in self._unstored:
            self._held_marks[update.update_id] = (mark, written)  # written once its journal row is
            return
        self._queue_mark(mark, written)
        await asyncio.wait({written}, timeout=MARK_WAIT)

    def _queue_mark(self, mark: Answered, written: asyncio.Future[None]) -> None:
        self._marks.append((mark, written))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_forever(), name="journal-marks")
        self._wake.set()

    async def flush(self) -> None:
        """Write every queued mark now, after a batch under way; raises ``StoreError`` or ``TimeoutError``."""
        async with self._marking:
            if not self._marks:
                return
            batch, self._marks = self._marks, []
            try:
                async with asyncio.timeout(STORE_TIMEOUT):
                    await self.store.answer_updates([mark for mark, _ in batch], self._clock())
            except BaseException:
                self._marks[:0] = batch  # written again with the next batch; marking twice is harmless
                raise
            if self._on_saved is not None:
                self._on_saved([mark.session for mark, _ in batch if mark.session is not None])
            for _, written in batch:
                if not written.done():
                    written.set_result(None)

    async def forget(self, user_key: str) -> None:
        """Take a person's session out of the marks not written yet (they asked to be forgotten).

        A batch under way is waited for first, so no session of theirs reaches the store after this returns.
        """

        def without(mark: Answered) -> Answered:
            session = mark.session
            return replace(mark, session=None) if session is not None and session.user_key == user_key else mark

        async with self._marking:
            self._marks = [(without(mark), written) for mark, written in self._marks]
            self._held_marks = {key: (without(mark), done) for key, (mark, done) in self._held_marks.items()}

    async def _write_forever(self) -> None:
        await write_behind(
            self._wake, self.flush, self._marks_failed, self._marks_written, retry_delays=MARK_RETRY_DELAYS
        )

    def _marks_failed(self, error: Exception, pause: float) -> None:
        self._failed("journal_mark", "update journal", error)
        log.error(
            "could not mark %d updates answered (%s); retrying in %ss", len(self._marks), type(error).__name__, pause
        )

    def _marks_written(self) -> None:
        self.faults.clear(STORE, "update journal")

    async def aclose(self) -> None:
        """Write the queued marks (after a batch under way), then stop the writer."""
        try:
            await self.flush()
        except (StoreError, TimeoutError) as error:
            log.error("could not mark %d answered updates at shutdown (%s)", len(self._marks), type(error).__name__)
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    async def unanswered(self, bot: Bot) -> list[Update]:
        """Updates journalled by an earlier run and never answered, oldest first."""
        try:
            rows = await self.store.unanswered_updates()
        except StoreError as error:
            log.error("could not read the update journal: %s", error)
            return []
        found = []
        for update_id, raw in rows:
            self._seen(update_id)
            try:
                found.append(Update.de_json(json.loads(raw), bot))
            except (ValueError, TypeError, KeyError) as error:
                log.error("journalled update %d is unreadable (%s); dropped", update_id, type(error).__name__)
                with contextlib.suppress(StoreError):
                    await self.store.answer_updates([Answered(update_id)], self._clock())
        return found

    async def purge(self) -> None:
        """Forget answered update ids and message ids older than ``KEEP_IDS_FOR``."""
        before = self._clock() - KEEP_IDS_FOR
        try:
            updates = await self.store.purge_updates(before)
            messages = await self.store.purge_message_ids(before)
        except StoreError as error:
            log.error("could not purge old ids: %s", error)
            return
        if updates or messages:
            log.info("purged %d old update ids and %d old message ids", updates, messages)

    async def purge_forever(self, every: float = PURGE_EVERY, locks: Locks | None = None) -> None:
        """Purge now and every ``every`` seconds until cancelled; with ``locks``, one replica at a time."""
        locks = locks or LocalLocks()
        await periodic.every(every, {"journal purge": functools.partial(run_once, locks, "telegram-purge", self.purge)})


class Intake:
    """Where updates arrive, from polling or the webhook: journalled, deduplicated, queued per chat."""

    def __init__(
        self,
        journal: Journal,
        lanes: Lanes,
        metrics: TelegramMetrics | None = None,
        ahead: Callable[[Sequence[Update]], Awaitable[None]] | None = None,
    ) -> None:
        self.journal = journal
        self.lanes = lanes
        self.metrics = metrics
        self._ahead = ahead
        """Told each batch before it is queued (the crisis screen reads a batch's messages in one pass)."""

    async def _queue(self, updates: Sequence[Update]) -> None:
        if self._ahead is not None and updates:
            try:
                await self._ahead(updates)
            except Exception:  # only a saving: each update is screened again as it is queued
                log.exception("could not screen a batch of %d updates at once; screening them one by one", len(updates))
        for update in updates:
            self.lanes.submit(update)

    async def receive(self, updates: Sequence[Update]) -> None:
        """Journal the batch durably, then queue those still to answer."""
        admitted = await self.journal.admit(updates)
        await self._queue(admitted)
        if self.metrics is not None:
            self.metrics.updates.inc(amount=len(admitted))

    async def replay(self, bot: Bot) -> int:
        """Queue what an earlier run journalled and never answered (a crash); return how many."""
        found = await self.journal.unanswered(bot)
        await self._queue(found)
        if found:
            log.warning("answering %d updates left unanswered by the last run", len(found))
        return len(found)


async def until_stopped(stop: asyncio.Event, work: Awaitable[object] | None = None, delay: float | None = None) -> bool:
    """Await ``work`` (or sleep ``delay``) unless ``stop`` is set first; ``True`` if stopped first.

    If ``work`` finished, its exception (if any) is raised here.
    """
    waiting = asyncio.ensure_future(work if work is not None else asyncio.sleep(delay or 0))
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for task in (waiting, stopping):
        if task not in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if waiting in done:
        waiting.result()
        return False
    return True


async def poll(
    bot: Bot,
    intake: Intake,
    stop: asyncio.Event,
    *,
    timeout: float,
    max_delay: float,
    request_timeout: float = 10.0,
    metrics: TelegramMetrics | None = None,
) -> None:
    """Long-poll Telegram until ``stop`` is set; a batch is journalled before the next request confirms it."""
    offset: int | None = None
    failures = 0
    last_conflict: float | None = None
    while not stop.is_set():
        if await until_stopped(stop, intake.lanes.wait_below(MAX_PENDING)):
            break
        fetch = asyncio.ensure_future(_fetch(bot, offset, timeout, request_timeout + timeout))
        try:
            if await until_stopped(stop, fetch):
                break  # not confirmed, so Telegram sends these again next time
            updates, offset_after = fetch.result()
        except RetryAfter as error:
            _polling_failed(metrics, error)
            delay = seconds(error.retry_after)
            log.warning("Telegram asked polling to wait %.1fs", delay)
        except InvalidToken:
            raise
        except Conflict as error:  # another process polls with this token, or set a webhook
            _polling_failed(metrics, error)
            last_conflict = time.monotonic()
            delay = CONFLICT_PAUSE
            _another_instance(metrics, delay)
        except TelegramError as error:  # 5xx, network errors: retried, polling never gives up
            _polling_failed(metrics, error)
            failures += 1
            delay = backoff(failures, max_delay)
            log.warning("getUpdates failed (%s); retry %d in %.1fs", type(error).__name__, failures, delay)
        else:
            failures = 0
            if metrics is not None:
                metrics.worked("polling")
                if last_conflict is not None and time.monotonic() - last_conflict > CONFLICT_MEMORY:
                    metrics.faults.clear(ACCESS, ANOTHER_INSTANCE)
                    last_conflict = None
            if updates or intake.journal.first_unstored is not None:
                await intake.receive(updates)
            offset = offset_after or offset
            unstored = intake.journal.first_unstored
            if unstored is None:
                continue
            offset = unstored  # Telegram keeps (and sends again) what the journal has not taken
            failures += 1
            delay = backoff(failures, max_delay)
        if await until_stopped(stop, delay=delay):
            break
    if offset is not None:
        await _confirm(bot, offset)


async def _fetch(bot: Bot, offset: int | None, timeout: float, read_timeout: float) -> tuple[list[Update], int | None]:
    """One getUpdates: the updates, and the offset that confirms them.

    Through ``do_api_request`` so that an update that cannot be read is logged by its id and skipped
    (``get_updates`` would fail the whole batch, every time).
    """
    try:
        found = await bot.do_api_request(
            "getUpdates",
            {"offset": offset, "timeout": dtm.timedelta(seconds=timeout), "allowed_updates": list(ALLOWED_UPDATES)},
            read_timeout=read_timeout,
        )
    except EndPointNotFound as error:  # how do_api_request reports a refused token once the bot is initialised
        raise InvalidToken(str(error)) from error
    updates = []
    for data in found if isinstance(found, list) else []:
        try:
            updates.append(Update.de_json(data, bot))
        except Exception as error:  # a malformed update must not stop polling
            update_id = data.get("update_id") if isinstance(data, dict) else None
            log.error("update %s from Telegram cannot be read (%s); skipped", update_id, type(error).__name__)
    last = found[-1].get("update_id") if found and isinstance(found[-1], dict) else None
    return updates, last + 1 if isinstance(last, int) else None


def _another_instance(metrics: TelegramMetrics | None, pause: float) -> None:
    """Say loudly that another process takes this token's updates; polling pauses, so one of the two answers."""
    detail = (
        "Telegram answered getUpdates with 409 Conflict: another process polls with this token, or set a "
        f"webhook for it; this one pauses polling {pause:g} s at a time until only one runs: stop the other"
    )
    log.critical(detail)
    if metrics is not None:
        metrics.faults.fail(ACCESS, ANOTHER_INSTANCE, detail)


def _polling_failed(metrics: TelegramMetrics | None, error: TelegramError) -> None:
    if metrics is not None:
        metrics.failed("getUpdates", error, source="polling")


async def _confirm(bot: Bot, offset: int) -> None:
    """Tell Telegram the journalled updates arrived, so the next start is not sent them again.

    ``limit=1`` and ``timeout=0``: what this returns is not confirmed by it and is left for the next run.
    """
    try:
        await bot.get_updates(offset=offset, limit=1, timeout=dtm.timedelta(0), allowed_updates=ALLOWED_UPDATES)
    except TelegramError as error:
        log.info("could not confirm the last updates (%s); the journal skips them when they come again", error)
