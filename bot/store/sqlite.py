"""The embedded backend: every interface in one SQLite file in WAL mode, through aiosqlite.

The escalation log's commits (records, alert marks, acknowledgements, reminders) are on disk when they return
(``forced``: ``synchronous=FULL`` around them, so the WAL, and with it every commit before, is fsynced), and so
are the migrations. Other commits (sessions, counts, the journal's batches) are ``synchronous=NORMAL``: they
survive the process being killed, and a power cut or a filesystem error may take the last of them back (WAL
mode never corrupts); forcing each of them cost the 5,000-message test a database too slow to answer in time
on a busy disk. The file is watched
(``sqlite_file``): once it is deleted, replaced or found corrupt, escalation-log writes are refused, so the
escalator spools them instead of writing into a file that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import aiosqlite

from bot import private
from bot.errors import CORRUPT, DatabaseFault, StoreError
from bot.models import Escalation, Level, Session
from bot.store import codec
from bot.store import sqlite_sql as sql
from bot.store.backup import Backup, backup_target, seal
from bot.store.base import Answered, Purged, Store, answered_sessions, day_of, folded_count_name, message_rows
from bot.store.locks import LocalLocks
from bot.store.schema import Migration, load_migrations, pending, require_current
from bot.store.sqlite_file import DatabaseFile, corrupt, is_corruption

log = logging.getLogger("unhooked.store")

MIGRATIONS = load_migrations("sqlite")

SCRUB_DELAY = 1.0
"""Seconds after a write that removed a person's words before the WAL is checkpointed and emptied: until then
the WAL still holds the pages as they were (``secure_delete`` zeroes the database's pages, not the WAL's)."""
_Result = TypeVar("_Result")


def _shielded(method: Callable[..., Awaitable[_Result]]) -> Callable[..., Awaitable[_Result]]:
    """Run a write to the end even if its caller stops waiting (a timeout, a cancelled task).

    aiosqlite runs each statement on its own thread: cancelling the caller does not stop a ``BEGIN``
    already waiting there for another process's lock, and a transaction begun after its caller left
    would stay open, refusing every later write ("cannot start a transaction within a transaction").
    So the caller may give up, but the write itself finishes, commits or rolls back, and frees the lock.
    """

    @functools.wraps(method)
    async def run(self: SqliteStore, *args: Any, **kwargs: Any) -> _Result:
        task = asyncio.ensure_future(method(self, *args, **kwargs))
        self._in_flight.add(task)
        task.add_done_callback(_settled(self._in_flight))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_abandoned)
            raise

    return run


def _settled(tasks: set[asyncio.Future[Any]]) -> Callable[[asyncio.Future[Any]], None]:
    def done(task: asyncio.Future[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved here; the caller, if still waiting, gets it too

    return done


def _abandoned(task: asyncio.Future[Any]) -> None:
    """A write whose caller stopped waiting ended: if it failed, this log line is all that is left of it."""
    error = None if task.cancelled() else task.exception()
    if error is not None:
        log.warning("a database write whose caller had stopped waiting failed: %s", error)


class SqliteStore(Store):
    """Every interface in one SQLite file in WAL mode, written through aiosqlite."""

    def __init__(
        self, path: Path | str, migrations: tuple[Migration, ...] = MIGRATIONS, *, migrate: bool = True
    ) -> None:
        self.path = Path(path)
        self.where = str(self.path)
        self.locks = LocalLocks()
        self._migrations = migrations
        self._migrate_on_open = migrate
        """``False`` opens an existing database as it is and refuses one not at this version's migrations."""
        self._db: aiosqlite.Connection | None = None
        self._writing = asyncio.Lock()
        """One transaction at a time: concurrent callers share one connection, and SQLite refuses nested BEGINs."""
        self._in_flight: set[asyncio.Future[Any]] = set()
        """Writes under way, finished even when their callers stop waiting (``_shielded``)."""
        self.file = None if str(path) == ":memory:" else DatabaseFile(self.path)
        self.durable = self.file is not None
        self.fault: DatabaseFault | None = None
        """Set for good once the file is found deleted, replaced or corrupt: a restart (after a restore) clears it."""
        self._scrubbing: asyncio.Task[None] | None = None
        """The coming checkpoint that empties the WAL of removed words (``SCRUB_DELAY``)."""

    @property
    def db(self) -> aiosqlite.Connection:
        """The open connection; raises ``StoreError`` before ``open()``."""
        if self._db is None:
            raise StoreError("the store is not open")
        return self._db

    @asynccontextmanager
    async def _guard(self, doing: str) -> AsyncIterator[None]:
        try:
            yield
        except (sqlite3.Error, ValueError, OSError) as error:
            if is_corruption(error):
                self.fault = self.fault or corrupt(self.path, error)
                raise corrupt(self.path, error) from error
            raise StoreError(f"could not {doing} in {self.path}: {error}") from error

    def _refuse_if_lost(self, doing: str) -> None:
        """Escalation-log writes stop once the file is lost: a write to a deleted file would be lost with it."""
        if self.fault is not None:
            raise StoreError(f"did not {doing}: {self.fault}")

    @asynccontextmanager
    async def _transaction(self, *, forced: bool = False) -> AsyncIterator[None]:
        """One write transaction; ``forced`` commits it to disk (an fsync of the WAL) before it returns."""
        async with self._writing:
            if self.db.in_transaction:  # never expected (writes are shielded); a stuck transaction would block all
                await self.db.execute("ROLLBACK")
            if forced:
                await self.db.execute("PRAGMA synchronous=FULL")  # outside a transaction, as SQLite needs
            try:
                await self.db.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    await self.db.execute("COMMIT")
                except BaseException:
                    if self.db.in_transaction:  # a failed COMMIT (busy) leaves the transaction open
                        await self.db.execute("ROLLBACK")
                    raise
            finally:
                if forced:
                    await self.db.execute("PRAGMA synchronous=NORMAL")
            if self.file is not None and self.fault is None:
                self.fault = self.file.changed()  # did that commit reach the file at our path? (a stat)

    async def open(self) -> None:
        if self._db is not None:
            return
        async with self._guard("open the database"):
            if not self._migrate_on_open:
                if not self.path.is_file():
                    raise StoreError(f"there is no database at {self.path}; set UNHOOKED_DB to the bot's database file")
                # mode=rw: never create a file that is not there
                self._db = await aiosqlite.connect(
                    f"file:{quote(str(self.path.resolve()))}?mode=rw", uri=True, isolation_level=None
                )
            else:
                if self.file is not None:
                    self.file.refuse_fresh()
                    private.make_database(self.path)  # its -wal and -shm are created with the same mode
                self._db = await aiosqlite.connect(self.path, isolation_level=None)
            try:
                for pragma in sql.PRAGMAS:
                    await self._db.execute(pragma)
                if self._migrate_on_open:
                    await self._quick_check()
                    await self._migrate()
                elif not await self._is_unhooked():
                    raise StoreError(f"{self.path} is not an Unhooked database: it has no record of migrations")
                else:
                    require_current(self._migrations, set(await self.applied_migrations()), self.where)
                if self.file is not None:
                    self.file.opened()
            except BaseException:
                await self.close()
                raise

    async def _quick_check(self) -> None:
        """The bot's start reads every page once: a corrupt file is refused, not served until a write fails."""
        async with self.db.execute("PRAGMA quick_check(1)") as cursor:
            found = await cursor.fetchone()
        if found is not None and found[0] != "ok":
            raise DatabaseFault(CORRUPT, f"the database file {self.path} is corrupt (quick check: {found[0]})")

    async def _migrate(self) -> None:
        await self.db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        for migration in pending(self._migrations, set(await self.applied_migrations()), self.where):
            self.migrated += (migration.name,)
            async with self._transaction(forced=True):
                for statement in migration.statements():
                    await self.db.execute(statement)
                await self.db.execute(
                    "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, datetime.now(UTC).isoformat(timespec="seconds")),
                )

    async def _is_unhooked(self) -> bool:
        async with self.db.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
        ) as cursor:
            row = await cursor.fetchone()
        return bool(row and row[0])

    async def applied_migrations(self) -> list[str]:
        """The names of the migrations applied to this file, in order."""
        async with (
            self._guard("read migrations"),
            self.db.execute("SELECT name FROM _migrations ORDER BY name") as cursor,
        ):
            return [row[0] async for row in cursor]

    def _scrub_soon(self) -> None:
        """Empty the WAL of what a write just removed, ``SCRUB_DELAY`` seconds from now (one scrub for many writes)."""
        if str(self.path) != ":memory:" and (self._scrubbing is None or self._scrubbing.done()):
            self._scrubbing = asyncio.get_running_loop().create_task(self._scrub(SCRUB_DELAY), name="sqlite-scrub")

    async def _scrub(self, delay: float = 0.0) -> None:
        """Checkpoint the WAL into the database and truncate it, so removed words leave both files."""
        await asyncio.sleep(delay)
        try:
            async with self._writing:
                # Our own writes wait for the lock meanwhile; another process gets ``SCRUB_WAIT_MS``, not 5 s (and
                # so would a read of ours, but in WAL mode reads do not wait for locks).
                await self.db.execute(sql.WAIT_BRIEFLY)
                try:
                    async with self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cursor:
                        blocked = (await cursor.fetchone() or (1,))[0]
                finally:
                    await self.db.execute(sql.WAIT_AS_USUAL)
        except (sqlite3.Error, ValueError, OSError, StoreError) as error:
            log.warning("could not empty the WAL of %s: %s", self.path, error)
            return
        if blocked:
            log.info("another process kept the WAL of %s from being emptied; the next removal tries again", self.path)

    async def close(self) -> None:
        if self._in_flight:
            await asyncio.wait(set(self._in_flight))
        scrub, self._scrubbing = self._scrubbing, None
        if scrub is not None and not scrub.done():
            scrub.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scrub
            await self._scrub()
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def ping(self) -> None:
        async with self._guard("read the database"), self.db.execute("SELECT 1") as cursor:
            await cursor.fetchone()

    async def check(self) -> DatabaseFault | None:
        if self.file is not None and self._db is not None and self.fault is None:
            self.fault = self.file.changed() or await asyncio.to_thread(self.file.probe)
        return self.fault

    async def _rows(self, doing: str, query: str, parameters: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self._guard(doing), self.db.execute(query, parameters) as cursor:
            return list(await cursor.fetchall())

    async def load_session(self, user_key: str) -> Session | None:
        rows = await self._rows("load a session", sql.LOAD_SESSION, (user_key,))
        return codec.session_from_row(user_key, rows[0]) if rows else None

    @_shielded
    async def save_sessions(self, sessions: list[Session]) -> None:
        async with self._guard("save sessions"), self._transaction():
            await self.db.executemany(sql.SAVE_SESSION, [codec.session_to_row(session) for session in sessions])

    @_shielded
    async def forget(self, user_key: str) -> int:
        async with self._guard("delete a person's data"), self._transaction():
            sessions = await self.db.execute("DELETE FROM sessions WHERE user_key = ?", (user_key,))
            escalations = await self.db.execute("DELETE FROM escalations WHERE user_key = ?", (user_key,))
            message_ids = await self.db.execute("DELETE FROM message_ids WHERE chat_key = ?", (user_key,))
        self._scrub_soon()
        return sessions.rowcount + escalations.rowcount + message_ids.rowcount

    @_shielded
    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        async with self._guard("add to daily counts"), self._transaction():
            await self.db.executemany(sql.ADD_COUNTS, [(day, name, value) for (day, name), value in counts.items()])

    async def counts(self, day: str) -> dict[str, int]:
        rows = await self._rows("read daily counts", "SELECT name, value FROM daily_counts WHERE day = ?", (day,))
        return dict(rows)

    @_shielded
    async def record_escalations(self, escalations: list[Escalation]) -> None:
        self._refuse_if_lost("record escalations")
        async with self._guard("record escalations"), self._transaction(forced=True):
            await self.db.executemany(sql.INSERT_ESCALATION, [codec.to_row(e) for e in escalations])
        self._refuse_if_lost("record escalations")  # the commit went to a file deleted meanwhile

    async def _select_escalations(
        self, where: str, parameters: tuple[object, ...], limit: int | None
    ) -> list[Escalation]:
        # ``where`` is always one of the constant clauses in this class; values go in as parameters.
        query = f"SELECT {sql.ESCALATION_COLUMNS} FROM escalations WHERE {where} ORDER BY at, id LIMIT ?"  # noqa: S608
        async with self._guard("read escalations"), self.db.execute(query, (*parameters, limit or -1)) as cursor:
            return [codec.from_row(row) async for row in cursor]

    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        value = level and level.value
        return await self._select_escalations(sql.ESCALATION_FILTER, (since, since, value, value, int(unacked)), limit)

    @_shielded
    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        self._refuse_if_lost("record an acknowledgement")
        async with self._guard("acknowledge an escalation"), self._transaction(forced=True):
            await self.db.execute(
                "UPDATE escalations SET acked_by = ?, acked_at = ? WHERE id = ? AND acked_by IS NULL",
                (by, at, escalation_id),
            )
        found = await self._select_escalations("id = ?", (escalation_id,), 1)
        return found[0] if found else None

    @_shielded
    async def mark_alerted(self, escalation_id: str, at: float) -> bool:
        self._refuse_if_lost("mark an alert as sent")
        async with self._guard("mark an alert as sent"), self._transaction(forced=True):
            cursor = await self.db.execute("UPDATE escalations SET alerted_at = ? WHERE id = ?", (at, escalation_id))
        self._refuse_if_lost("mark an alert as sent")
        return cursor.rowcount == 1

    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        return await self._select_escalations("alerted_at IS NULL", (), limit)

    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        rows = await self._rows("read new escalations", sql.FEED, (after, limit))
        return [(row[0], codec.from_row(row[1:])) for row in rows]

    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        rows = await self._rows(
            "read daily counts",
            "SELECT day, name, value FROM daily_counts WHERE ? IS NULL OR day >= ? ORDER BY day, name",
            (first_day, first_day),
        )
        return {(day, name): value for day, name, value in rows}

    @_shielded
    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        async with self._guard("purge old records"), self._transaction():
            past = await self._select_escalations("at < ?", (before,), None)
            old = [e for e in past if not keep_unacked or e.acked_by is not None]
            counts = Counter((day_of(e.at), folded_count_name(e)) for e in old)
            await self.db.executemany(sql.ADD_COUNTS, [(day, name, value) for (day, name), value in counts.items()])
            await self.db.execute(
                "DELETE FROM escalations WHERE at < ? AND (? = 0 OR acked_by IS NOT NULL)", (before, int(keep_unacked))
            )
            sessions = await self.db.execute("DELETE FROM sessions WHERE last_seen < ?", (before,))
        self._scrub_soon()
        kept = len(past) - len(old)
        return Purged(len(old), sessions.rowcount, tuple(sorted({day_of(e.at) for e in old})), kept)

    @_shielded
    async def record_updates(
        self, updates: Sequence[tuple[int, str]], at: float, lanes: Mapping[int, int] | None = None
    ) -> list[int]:
        raw, lanes = dict(updates), lanes or {}
        if not raw:
            return []
        async with self._guard("journal updates"), self._transaction():
            async with self.db.execute(
                "SELECT update_id FROM updates WHERE update_id BETWEEN ? AND ?", (min(raw), max(raw))
            ) as cursor:
                known = {row[0] async for row in cursor}
            fresh = [update_id for update_id in raw if update_id not in known]
            await self.db.executemany(
                "INSERT INTO updates (update_id, received_at, raw, lane) VALUES (?, ?, ?, ?)",
                [(update_id, at, raw[update_id], lanes.get(update_id)) for update_id in fresh],
            )
        return fresh

    @_shielded
    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        remembered = message_rows(answered, at)
        sessions = [codec.session_to_row(session) for session in answered_sessions(answered)]
        async with self._guard("mark updates answered"), self._transaction():
            await self.db.executemany(sql.ANSWER, [(at, done.update_id) for done in answered])
            if sessions:
                await self.db.executemany(sql.SAVE_SESSION, sessions)
            if remembered:
                await self.db.executemany(sql.REMEMBER_MESSAGE, remembered)
        self._scrub_soon()

    async def unanswered_updates(self) -> list[tuple[int, str]]:
        return [(update_id, raw) for update_id, raw in await self._rows("read unanswered updates", sql.UNANSWERED)]

    async def lane_updates(self, lane: int) -> list[tuple[int, str]]:
        rows = await self._rows("read a chat's unanswered updates", sql.LANE, (lane,))
        return [(update_id, raw) for update_id, raw in rows]

    async def waiting_lanes(self, before: float) -> list[int]:
        return [row[0] for row in await self._rows("read chats left waiting", sql.WAITING, (before,))]

    @_shielded
    async def purge_updates(self, before: float) -> int:
        async with self._guard("purge answered updates"), self._transaction():
            cursor = await self.db.execute("DELETE FROM updates WHERE answered_at < ?", (before,))
            return cursor.rowcount

    async def message_ids(self, chat_key: str) -> list[int]:
        rows = await self._rows(
            "read message ids",
            "SELECT message_id FROM message_ids WHERE chat_key = ? ORDER BY at, message_id",
            (chat_key,),
        )
        return [row[0] for row in rows]

    @_shielded
    async def drop_message_ids(self, chat_key: str) -> int:
        async with self._guard("forget message ids"), self._transaction():
            cursor = await self.db.execute("DELETE FROM message_ids WHERE chat_key = ?", (chat_key,))
            return cursor.rowcount

    @_shielded
    async def purge_message_ids(self, before: float) -> int:
        async with self._guard("purge old message ids"), self._transaction():
            cursor = await self.db.execute("DELETE FROM message_ids WHERE at < ?", (before,))
            return cursor.rowcount

    @_shielded
    async def record_reminder(self, escalation_id: str, number: int, at: float) -> bool:
        self._refuse_if_lost("record a reminder")
        async with self._guard("record a reminder"), self._transaction(forced=True):
            cursor = await self.db.execute(
                "INSERT OR IGNORE INTO escalation_reminders (escalation_id, number, at)"
                " SELECT id, ?, ? FROM escalations WHERE id = ?",
                (number, at, escalation_id),
            )
            return cursor.rowcount == 1

    async def unacked_reminders(self) -> dict[str, list[float]]:
        return codec.reminders(await self._rows("read reminders", sql.UNACKED_REMINDERS))

    @_shielded
    async def claim_run(self, name: str, at: float) -> bool:
        async with self._guard("claim a job's run"), self._transaction():
            cursor = await self.db.execute(
                "INSERT OR IGNORE INTO job_runs (name, claimed_at) VALUES (?, ?)", (name, at)
            )
            return cursor.rowcount == 1

    async def tell_group_once(self, group_key: str, at: float) -> bool:
        async with self._guard("remember a group"), self._transaction():
            cursor = await self.db.execute(
                "INSERT OR IGNORE INTO told_groups (chat_key, told_at) VALUES (?, ?)", (group_key, at)
            )
            return cursor.rowcount == 1

    async def backup(self, target: Path, *, overwrite: bool = False) -> Backup:
        """Write a consistent copy of the database to the SQLite file ``target``, while the bot keeps running.

        The copy is written beside ``target`` and moved into place only when complete and checked,
        so a crash never leaves half a backup under that name. An existing ``target`` is refused
        unless ``overwrite``. The copy is one self-contained file (no ``-wal``), readable by its owner only.
        """
        live = None if str(self.path) == ":memory:" else self.path
        target, partial = backup_target(target, overwrite, live)
        try:
            async with self._guard("back up the database"):
                private.make_file(partial)  # owner-only from its first byte: it holds everything the database does
                async with aiosqlite.connect(partial) as copy, self._writing:
                    # One step (pages=0): a single read transaction, so the copy is one consistent
                    # snapshot; in WAL mode other connections go on writing meanwhile. A copy in several
                    # steps would restart whenever another connection writes, and might never finish.
                    # This connection's own writes wait (the lock), so no half-done transaction is copied;
                    # `python -m bot backup` uses a connection of its own and pauses nothing.
                    await self.db.backup(copy, pages=0)
            return await seal(partial, target, overwrite)
        finally:
            partial.unlink(missing_ok=True)
