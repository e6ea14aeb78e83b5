"""Wires settings, content, store and engine together, the same way for every command."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from bot.config import Settings
from bot.crisis import MODEL, CrisisScreen
from bot.engine import Engine
from bot.errors import UNOPENED, ConfigError, DatabaseFault, SchemaError, StoreError
from bot.escalation import Alerter, Escalator, Reminder, Reminders
from bot.health import CONTENT, STORE, Faults, Health, describe
from bot.lint import check_content
from bot.meaning import vectors_for
from bot.metrics import Metrics
from bot.reload import ContentAlert, ContentWatcher, first_error, log_problems
from bot.retention import Retention
from bot.rules import floor
from bot.spool import Spools
from bot.store import Store
from bot.store.backends import open_store
from bot.store.memory import MemoryStore
from bot.watchdog import Notice, Watchdog

log = logging.getLogger("unhooked.service")


async def _open(store: Store) -> tuple[Store, DatabaseFault | None]:
    """Open the store; if the database is lost or unusable, a stand-in in memory and what is wrong.

    The stand-in keeps sessions and the Telegram journal until the stop; escalations go to the spool instead
    (``Escalator.writes_to_store``), and the spool is never replayed into it. Nothing is created in the place
    of a database that held data (``SqliteStore`` refuses).
    """
    try:
        await store.open()
    except SchemaError:
        raise  # another version's database: answering from memory would split people's data across versions
    except DatabaseFault as fault:
        return MemoryStore(), fault
    except StoreError as error:
        return MemoryStore(), DatabaseFault(UNOPENED, f"the database could not be opened at start ({describe(error)})")
    return store, None


@dataclass(frozen=True)
class Service:
    """What adapters get: the engine, the store behind it (each takes the interfaces it needs), and their health."""

    engine: Engine
    store: Store

    def health(self, grace: dict[str, float] | None = None) -> Health:
        """The health checks: the store (probed), the content, and ``grace`` for adapters' checks."""
        engine = self.engine

        def content() -> dict[str, Any]:
            catalog = engine.catalog
            if catalog is None:
                return {"ok": False, "problems": ["no content is loaded: only crisis replies and notices go out"]}
            return {"ok": True, "intents": len(catalog.intents), "passages": len(catalog.passages)}

        async def ping() -> None:
            await self.store.ping()
            engine.faults.clear(STORE, "session reads")  # a read just worked

        return Health(engine.faults, ping=ping, content=content, grace={MODEL: 0.0, **(grace or {})})


@asynccontextmanager
async def running_service(
    settings: Settings,
    store: Store | None = None,
    alerter: Alerter | None = None,
    content_alert: ContentAlert | None = None,
    metrics: Metrics | None = None,
    meaning_first: bool = False,
    reminder: Reminder | None = None,
    notice: Notice | None = None,
) -> AsyncIterator[Service]:
    """An engine over the configured content and store, with that store, closed cleanly on exit.

    A floor file that does not compile stops the start (``FloorError``). Broken content or an unusable
    database do not stop the bot: it starts with what works,
    logs what does not, and crisis replies go out either way. Content is served only when
    ``check`` finds no error in it, at start as on every reload; edited content files are
    reloaded every ``settings.reload_seconds`` and ``content_alert`` hears of refused reloads. ``metrics``
    lets an adapter register its own metrics before the engine starts; the engine's are added to it.
    Once a UTC day the bot purges what is past ``settings.retention_days`` (``bot.retention``), claimed in
    the store so one of several replicas sharing a database does it.
    The examples are embedded for meaning-based matching in the background (rapidfuzz answers alone
    until they are), or before the service is handed out with ``meaning_first``. ``reminder`` re-alerts
    operators of an imminent escalation nobody acknowledged (``settings.realert_minutes``, at most
    ``settings.realert_times``). A database lost or unusable, at start or while running (``bot.watchdog``),
    is reported in health and the metrics and told to the operators once through ``notice``.
    """
    floor()  # the bot does not start without a floor to screen with: FloorError says so in a sentence
    metrics = metrics or Metrics()
    faults = Faults()
    catalog, problems = check_content(settings.content_dir)
    log_problems(problems)
    if catalog is None:
        log.error("content did not load; only crisis replies and notices will be sent until it is fixed")
        faults.fail(CONTENT, "start", f"content did not load at start: {first_error(problems)}")
    secret = settings.secret_key()
    opened = store is None
    """The service opens the database itself: the examples' vectors may be kept beside it (not for a try-out)."""
    spool = Spools(settings.spool_paths) if settings.spool_paths and store is None else None
    store, fault = await _open(store or open_store(settings.database))
    reminders = Reminders(reminder, settings.realert_minutes * 60, settings.realert_times) if reminder else None
    escalator = Escalator(store, spool, alerter, metrics=metrics, faults=faults, locks=store.locks, reminders=reminders)
    watchdog = Watchdog(store, faults, metrics, notice, spool=spool.where if spool else None)
    if fault is not None:
        watchdog.report(fault, at_start=True)
    await escalator.replay_spool()  # into a database only, and deleted only once it has committed them
    screen = CrisisScreen(settings.crisis_model, faults=faults, metrics=metrics)
    metrics.crisis_model_loaded.set(1 if screen.model is not None else 0)
    engine = Engine(store, secret, catalog, escalator=escalator, excerpts=settings.escalation_excerpts, screen=screen)
    vectors = vectors_for(settings.meaning_folder, settings.vector_cache if opened else None)
    learning = asyncio.create_task(engine.learn_meaning(vectors), name="meaning") if vectors else None
    if learning is not None and meaning_first:
        await learning
    retry = asyncio.create_task(escalator.retry_forever(), name="escalation-retry")
    watching = asyncio.create_task(watchdog.run_forever(), name="database-watchdog")
    retention = Retention(store, settings.retention_days, metrics=metrics)
    purging = asyncio.create_task(retention.run_forever(), name="retention")
    watcher = None
    if settings.reload_seconds > 0:
        watcher = ContentWatcher(
            engine, settings.content_dir, interval=settings.reload_seconds, on_refused=content_alert
        )
        watcher.start()
    try:
        yield Service(engine, store)
    finally:
        if watcher is not None:
            await watcher.aclose()
        for task in (retry, watching, purging, learning):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await engine.aclose()
        await store.close()


async def migrate(settings: Settings) -> str:
    """Apply pending migrations to the configured database (creating it if need be); say what was done."""
    async with open_store(settings.database) as store:
        if not store.migrated:
            return f"{store.where} is up to date; nothing to migrate"
        count = len(store.migrated)
        return f"applied {count} migration{'s' if count != 1 else ''} to {store.where}: {', '.join(store.migrated)}"


@asynccontextmanager
async def existing_store(settings: Settings) -> AsyncIterator[Store]:
    """The bot's database for operators' commands, open as it is: never created, never migrated."""
    database = settings.database
    if database.in_memory:
        raise ConfigError("an in-memory database keeps no escalation log; set UNHOOKED_DB or pass --db PATH")
    if not database.is_postgres and not database.path.is_file():
        raise ConfigError(
            f"there is no database at {settings.db_path}; set UNHOOKED_DB or pass --db with the bot's database"
        )
    async with open_store(database, migrate=False) as store:
        yield store
