"""Escalations: recorded durably (the database, else the spool) and handed to the operators' alerter.

Where a record goes: the database, if it takes it within ``RECORD_TIMEOUT``; else the first place of the spool
that takes it; else memory, retried every ``RETRY_EVERY`` seconds, with the operators' alert (id, level,
category, time, person key) and the JSON log line as its records meanwhile. A store that is not a database (the
memory stand-in while the database cannot be opened) is skipped when there is a spool, and never replayed into.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot import periodic
from bot.errors import StoreError
from bot.health import STORE, Faults, describe
from bot.logs import FIELDS
from bot.metrics import LEVELS, Metrics
from bot.models import Escalation, Level
from bot.spool import Spools
from bot.store import EscalationLog, LocalLocks, Locks, run_once
from bot.store.codec import to_record

log = logging.getLogger("unhooked.escalations")

RECORD_TIMEOUT = 0.5
"""Seconds to wait for the database before an escalation goes to the spool instead."""
RETRY_EVERY = 30.0
"""Seconds between attempts to deliver alerts that are still owed."""
MAX_PER_ALERT = 8
"""Escalations told in one operators' alert at most (8 with excerpts stay under Telegram's 4096 characters).
One alert is on its way at a time and the escalations that come meanwhile go together in the next, so a busy
hour never floods (or throttles) the operators' chat."""
REMEMBER_ALERTED = 10_000
"""Ids of escalations alerted by this process, kept so a late read of owed alerts never alerts one twice."""
OWED_AFTER = 60.0
"""Seconds after which replicas treat an escalation's missing alert as owed (its own replica had that long)."""


class Alerter(Protocol):
    """Tells operators about escalations, several in one message; raises if the alert could not be delivered."""

    def __call__(self, escalations: Sequence[Escalation]) -> Awaitable[None]: ...


class Reminder(Protocol):
    """Reminds operators of an unacknowledged imminent escalation (reminder ``number`` of ``of``); raises if unsent."""

    def __call__(self, escalation: Escalation, number: int, of: int) -> Awaitable[None]: ...


@dataclass(frozen=True)
class Reminders:
    """Re-alerts of imminent escalations nobody acknowledged: one each ``every`` seconds, at most ``times``."""

    send: Reminder
    every: float
    """Seconds from the escalation (then from the last reminder) to the next reminder; 0 sends none."""
    times: int


def log_fields(escalation: Escalation) -> dict[str, object]:
    """The structured log record of an escalation: no message text, no raw ids."""
    record = to_record(escalation)
    record.pop("excerpt", None)
    return {"event": "escalation", **record}


def log_line(escalation: Escalation) -> str:
    """The log record of an escalation as one line of JSON (its message in the text log format)."""
    return json.dumps(log_fields(escalation), sort_keys=True)


class Escalator:
    """Records each escalation before the crisis turn ends, and alerts operators in the background."""

    def __init__(
        self,
        store: EscalationLog,
        spool: Spools | None = None,
        alerter: Alerter | None = None,
        *,
        clock: Callable[[], float] = time.time,
        metrics: Metrics | None = None,
        faults: Faults | None = None,
        locks: Locks | None = None,
        reminders: Reminders | None = None,
    ) -> None:
        self.store = store
        self.reminders = reminders
        self.locks = locks or LocalLocks()
        """Keeps replicas on one database from replaying the spool, or sending owed alerts, at once."""
        self.spool = spool
        self.alerter = alerter
        self.metrics = metrics or Metrics()
        self.faults = faults or Faults()
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._owed: dict[str, Escalation] = {}
        """Escalations whose operator alert is not delivered yet, oldest first (``unhooked_alerts_pending``)."""
        self._alerted: dict[str, None] = {}
        """The last ``REMEMBER_ALERTED`` escalations alerted, whether or not their mark is written yet."""
        self._alerting: asyncio.Task[None] | None = None
        self._unstored: dict[str, Escalation] = {}
        """Escalations neither the database nor any spool place took: kept here and retried (``replay_spool``)."""
        self.metrics.alerts_pending.read = lambda: len(self._owed)
        self._unacked: dict[str, list[float]] = {level: [] for level in LEVELS}
        """When each unacknowledged escalation happened, by level, as last read (``refresh_unacked``)."""
        self.metrics.unacked.read = lambda: {(level,): len(ats) for level, ats in self._unacked.items()}
        self.metrics.unacked_oldest.read = lambda: {
            (level,): max(0.0, self._clock() - min(ats)) if ats else 0.0 for level, ats in self._unacked.items()
        }

    @property
    def writes_to_store(self) -> bool:
        """Whether escalations go to the store: a database, or memory when there is no spool to keep them."""
        return self.store.durable or self.spool is None

    async def record(self, escalation: Escalation) -> None:
        """Store the escalation in the database, or the spool if the database does not take it in time."""
        log.warning("%s", log_line(escalation), extra={FIELDS: log_fields(escalation)})
        reason = "the database is not open (the bot runs on a stand-in in memory)"
        if self.writes_to_store:
            try:
                await self._write(escalation)
            except Exception as error:  # a bug in the store too: the record goes to the spool all the same
                reason = describe(error, RECORD_TIMEOUT)
                self.metrics.store_errors.inc("escalation_record")
                self.faults.fail(STORE, "escalation records", reason)
            else:
                self.metrics.escalations_stored.inc("database")
                self.faults.clear(STORE, "escalation records")
                self._owe([escalation])
                return
        self.metrics.escalations_stored.inc("spool" if self._spool(escalation, reason) else "nowhere")
        self._owe([escalation])

    async def _write(self, escalation: Escalation) -> None:
        async with asyncio.timeout(RECORD_TIMEOUT):
            await self.store.record_escalations([escalation])

    def _spool(self, escalation: Escalation, reason: str) -> bool:
        """Spool an escalation the database did not take; else keep it in memory. ``True`` if spooled."""
        if self.spool is not None:
            try:
                where = self.spool.append(escalation)
            except OSError as error:
                reason = f"{reason}; spool: {error.strerror or error}"
            else:
                log.error("the database did not take escalation %s (%s); spooled to %s", escalation.id, reason, where)
                return True
        else:
            reason = f"{reason}; no spool is configured"
        self._unstored[escalation.id] = escalation
        log.critical(
            "escalation %s could be stored nowhere (%s): kept in memory and retried every %g s; until then its "
            "operators' alert and the log line above are its only records",
            escalation.id,
            reason,
            RETRY_EVERY,
        )
        self.faults.fail(
            STORE,
            "unstored escalations",
            f"{len(self._unstored)} escalations stored nowhere ({reason}): kept in memory and retried; their "
            "operators' alerts are their only other record",
        )
        return False

    async def _store_unstored(self) -> None:
        """Try again to store the escalations kept in memory: the database, else the spool."""
        for escalation in list(self._unstored.values()):
            if self.writes_to_store:
                with contextlib.suppress(Exception):
                    await self._write(escalation)
                    del self._unstored[escalation.id]
                    log.warning("escalation %s, kept in memory, is in the database now", escalation.id)
                    continue
            if self.spool is not None:
                with contextlib.suppress(OSError):
                    where = self.spool.append(escalation)
                    del self._unstored[escalation.id]
                    log.warning("escalation %s, kept in memory, is spooled to %s now", escalation.id, where)
        if not self._unstored:
            self.faults.clear(STORE, "unstored escalations")

    def _owe(self, escalations: Sequence[Escalation]) -> asyncio.Task[None] | None:
        """Queue alerts for these escalations (once each) and make sure the one alert task runs."""
        if self.alerter is None:
            return None
        for escalation in escalations:
            if escalation.id not in self._alerted:
                self._owed.setdefault(escalation.id, escalation)
        if self._owed and (self._alerting is None or self._alerting.done()):
            self._alerting = asyncio.ensure_future(self._alert_owed())
            self._tasks.add(self._alerting)
            self._alerting.add_done_callback(self._tasks.discard)
        return self._alerting

    async def _alert_owed(self) -> None:
        """Alert operators, up to ``MAX_PER_ALERT`` escalations a message, until none is owed or one fails."""
        while self._owed and self.alerter is not None:
            batch = list(self._owed.values())[:MAX_PER_ALERT]
            try:
                await self.alerter(batch)
            except Exception as error:
                self.metrics.alerts.inc("failed")
                log.warning("alert for %d escalations not delivered (%s); will retry", len(batch), type(error).__name__)
                return
            self.metrics.alerts.inc("sent")
            now = self._clock()
            for escalation in batch:
                self._owed.pop(escalation.id, None)
                self._alerted[escalation.id] = None
                if len(self._alerted) > REMEMBER_ALERTED:
                    del self._alerted[next(iter(self._alerted))]
            for escalation in batch:
                await self._remember_alerted(escalation, now)

    async def _remember_alerted(self, escalation: Escalation, at: float) -> None:
        """Mark an escalation alerted where its record is: memory, the database, else the spool beside it."""
        kept = self._unstored.get(escalation.id)
        if kept is not None:
            self._unstored[escalation.id] = dataclasses.replace(kept, alerted_at=at)
            return
        try:
            if await self.store.mark_alerted(escalation.id, at):
                return
        except StoreError as error:
            log.error("alert for escalation %s delivered but not marked: %s", escalation.id, error)
        if self.spool is None:
            return
        try:  # the record is spooled, or the database refused the mark: a replay marks it alerted
            self.spool.append(dataclasses.replace(escalation, alerted_at=at))
        except OSError as error:
            log.error(
                "alert for escalation %s delivered, and its mark could not be spooled either (%s): "
                "it may be alerted again after a restart",
                escalation.id,
                error.strerror or error,
            )

    async def deliver_owed(self) -> int:
        """Try every alert still owed (the database's and this process's); return how many were owed.

        With replicas (``Locks.shared``) an escalation is owed only once ``OWED_AFTER`` seconds old: until then
        the replica that recorded it may be sending its alert, which another must not send again.
        """
        if self.alerter is None:
            return 0
        try:
            stored = await self.store.unalerted()
        except StoreError as error:
            log.error("cannot read owed alerts: %s", error)
            stored = []
        if self.spool is not None:
            try:
                stored += [escalation for escalation in self.spool.read() if escalation.alerted_at is None]
            except OSError as error:
                log.error("cannot read owed alerts in the spool: %s", error)
        if self.locks.shared:
            stored = [escalation for escalation in stored if escalation.at <= self._clock() - OWED_AFTER]
        alerting = self._owe(stored)
        owed = len(self._owed)
        if alerting is not None:
            await asyncio.shield(alerting)
        return owed

    async def replay_spool(self) -> int:
        """Move spooled escalations (and those kept in memory) into the database once it takes writes again.

        Only into a database (``store.durable``): a memory stand-in would lose them at the next stop. Spooled
        lines go only once the database has committed them. Returns how many moved from the spool.
        """
        await self._store_unstored()
        if self.spool is None or not self.store.durable or not self.spool.waiting():
            return 0
        try:
            moved = await self.spool.replay(self.store)
        except (StoreError, OSError) as error:
            log.warning("the spooled escalations stay in %s for now: %s", self.spool.where, error)
            self.faults.fail(STORE, "spool replay", f"escalations wait in the spool ({self.spool.where}): {error}")
            return 0
        self.faults.clear(STORE, "spool replay")
        self.faults.clear(STORE, "escalation records")
        return moved

    async def refresh_unacked(self) -> list[Escalation]:
        """Read the unacknowledged escalations for ``unhooked_unacked_escalations``; return them, oldest first."""
        try:
            found = await self.store.escalations(unacked=True)
        except StoreError as error:
            log.error("cannot read unacknowledged escalations: %s", error)
            return []
        self._unacked = {level: [e.at for e in found if e.level.value == level] for level in LEVELS}
        return found

    async def remind(self) -> int:
        """Remind operators of imminent escalations unacknowledged for ``reminders.every``; return how many went.

        An escalation whose first alert is still owed waits for it; each reminder sent is recorded in the store
        (``record_reminder``), so the next pass, on this replica or another, counts it.
        """
        if self.reminders is None or self.reminders.every <= 0:
            return 0
        every, times = self.reminders.every, self.reminders.times
        try:
            waiting = await self.store.escalations(level=Level.IMMINENT, unacked=True)
            sent = await self.store.unacked_reminders()
        except StoreError as error:
            log.error("cannot read unacknowledged escalations for reminders: %s", error)
            return 0
        reminded = 0
        for escalation in waiting:
            before = sent.get(escalation.id, [])
            if escalation.alerted_at is None or len(before) >= times:
                continue
            if self._clock() - (before[-1] if before else escalation.at) < every:
                continue
            number = len(before) + 1
            try:
                await self.reminders.send(escalation, number, times)
            except Exception as error:
                self.metrics.reminders.inc("failed")
                log.warning(
                    "reminder for escalation %s not delivered (%s); will retry", escalation.id, type(error).__name__
                )
                continue
            self.metrics.reminders.inc("sent")
            reminded += 1
            try:
                await self.store.record_reminder(escalation.id, number, self._clock())
            except StoreError as error:
                log.error("reminder for escalation %s delivered but not recorded: %s", escalation.id, error)
        return reminded

    async def retry_forever(self, every: float = RETRY_EVERY) -> None:
        """Every ``every`` seconds until cancelled: replay the spool, deliver owed alerts, remind (one replica each)."""
        jobs = {"spool-replay": self.replay_spool, "owed-alerts": self.deliver_owed, "reminders": self.remind}
        steps = {name: functools.partial(run_once, self.locks, name, job) for name, job in jobs.items()}
        await periodic.every(every, {**steps, "unacknowledged count": self.refresh_unacked})

    async def aclose(self, grace: float = 5.0) -> None:
        """Give alerts under way a moment to finish, then stop them; a last try for escalations kept in memory."""
        if self._unstored:
            await self._store_unstored()
        for escalation in self._unstored.values():
            log.critical("escalation %s is lost at this stop: nothing took it (see its log line)", escalation.id)
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task
