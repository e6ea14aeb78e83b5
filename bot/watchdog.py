"""The database watched as a whole: deleted, replaced or corrupt is noticed within seconds and said once.

Every ``WATCH_EVERY`` seconds the store checks itself (``Store.check``: for SQLite a stat of the file against
the one opened, and a read of its schema through a fresh connection). A fault, found then or at start (the
database missing over data it held, corrupt, or not opened at all), is reported once per episode: a ``store``
fault in health that names it and says what to do, ``unhooked_database_fault{kind}`` at 1, a CRITICAL log line,
and one notice to the operators' chat (retried until delivered). An episode lasts until the bot restarts: the
bot never writes its escalation log to a file it has lost, and only a restart (after a restore) opens another.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot import periodic
from bot.errors import CORRUPT, MISSING, REPLACED, UNOPENED, DatabaseFault, StoreError
from bot.health import STORE, Faults
from bot.metrics import Metrics
from bot.store import Store

log = logging.getLogger("unhooked.watchdog")

WATCH_EVERY = 2.0
"""Seconds between checks of the database file."""
SOURCE = "database"
"""The fault's source under the ``store`` check."""

Notice = Callable[[str], Awaitable[None]]
"""Tells operators one thing in one message (the operators' chat); raises if it was not delivered."""

RESTORE = "stop the bot, restore the last backup (python -m bot restore BACKUP{force}), then start it"
WHAT_TO_DO = {
    (MISSING, True): RESTORE.format(force="") + "; or, if a fresh start is intended, run python -m bot start-afresh",
    (CORRUPT, True): RESTORE.format(force=" --force") + "; or, to start afresh, python -m bot start-afresh --force",
    (UNOPENED, True): "fix what the log says, then restart the bot",
    (MISSING, False): RESTORE.format(force=""),
    (CORRUPT, False): RESTORE.format(force=" --force"),
    (REPLACED, False): "restart the bot to open the file now there, or first " + RESTORE.format(force=" --force"),
}
"""What the operator does about a fault, at start (``True``) or found while running (``False``); a restore keeps
the file it replaces beside it, and ``start-afresh --force`` keeps a damaged one too."""


def what_to_do(fault: DatabaseFault, at_start: bool) -> str:
    """The sentence that tells an operator what to do about ``fault``."""
    return WHAT_TO_DO.get((fault.kind, at_start), WHAT_TO_DO[(fault.kind, True)])


def notice_text(fault: DatabaseFault, at_start: bool, spool: str | None) -> str:
    """The operators' notice of a fault: what happened, what the bot does meanwhile, what to do."""
    kept = f"escalations go to the spool ({spool})" if spool else "escalations are kept in memory only"
    when = "Unhooked started without its database" if at_start else "Unhooked lost its database while running"
    return (
        f"{when}: {fault}. Crisis replies still go out and {kept}; the bot will not start afresh over it. "
        f"To do: {what_to_do(fault, at_start)}; the spool is replayed into the database then."
    )


class Watchdog:
    """Checks the store every ``every`` seconds and reports the first fault of the run once."""

    def __init__(
        self,
        store: Store,
        faults: Faults,
        metrics: Metrics,
        notice: Notice | None = None,
        *,
        spool: str | None = None,
        every: float = WATCH_EVERY,
    ) -> None:
        self.store = store
        self.faults = faults
        self.metrics = metrics
        self.notice = notice
        self.spool = spool
        """Where escalations go meanwhile, for the notice."""
        self.every = every
        self.fault: DatabaseFault | None = None
        self._text = ""
        self._told = False

    def report(self, fault: DatabaseFault, *, at_start: bool = False) -> None:
        """Say that the database is lost or unusable: health, the metric, the log; the notice follows."""
        if self.fault is not None:
            return
        self.fault = fault
        self._text = notice_text(fault, at_start, self.spool)
        self.faults.fail(STORE, SOURCE, f"{fault}: {what_to_do(fault, at_start)}")
        self.metrics.database_fault.set(1, fault.kind)
        log.critical("%s", self._text)

    async def watch_once(self) -> None:
        """One check of the store, then the notice if one is owed."""
        if self.fault is None:
            try:
                found = await self.store.check()
            except StoreError as error:  # the check itself failed: the store's own errors say more
                log.warning("could not check the database: %s", error)
                found = None
            if found is not None:
                self.report(found)
        if self.fault is not None and not self._told and self.notice is not None:
            try:
                await self.notice(self._text)
            except Exception as error:
                log.warning("the operators' notice of the database fault was not delivered (%s)", type(error).__name__)
                return
            self._told = True

    async def run_forever(self) -> None:
        """Check every ``every`` seconds until cancelled."""
        await periodic.every(self.every, {"database check": self.watch_once})
