"""Session storage: one small async interface, in memory or in SQLite through aiosqlite."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
import re
import sqlite3
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import aiosqlite

from bot.errors import StoreError
from bot.models import Escalation, Level, Session, Track

log = logging.getLogger("unhooked.store")


def day_of(at: float) -> str:
    """The UTC day of a timestamp, as ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(at, UTC).date().isoformat()


@dataclass(frozen=True)
class Purged:
    """What a purge removed: escalation details folded into anonymous daily counts, and idle sessions."""

    escalations: int
    sessions: int
    days: tuple[str, ...]
    """The UTC days whose escalations were folded into counts."""
    kept: int = 0
    """Escalations past retention kept because nobody has acknowledged them (``keep_unacked``)."""


@dataclass(frozen=True)
class Answered:
    """An update that is answered, and what to remember of it: a private chat's message ids, for /erase."""

    update_id: int
    chat_key: str | None = None
    """The private chat's keyed hash; ``None`` elsewhere (nothing to erase there)."""
    message_ids: tuple[int, ...] = ()


def folded_count_name(escalation: Escalation) -> str:
    """The anonymous daily counter an escalation is folded into when its details are purged."""
    return f"escalations.{escalation.level.value}.{escalation.category}"


class Store(ABC):
    """What the engine needs to remember people between messages."""

    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    @abstractmethod
    async def open(self) -> None:
        """Make the store ready; for SQLite, open the file and run pending migrations."""

    @abstractmethod
    async def close(self) -> None:
        """Release the store; safe to call twice."""

    @abstractmethod
    async def ping(self) -> None:
        """A cheap read that proves the store answers (the health check); raises ``StoreError`` if it does not."""

    @abstractmethod
    async def load_session(self, user_key: str) -> Session | None:
        """The session of ``user_key``, or ``None`` for someone new."""

    @abstractmethod
    async def save_sessions(self, sessions: list[Session]) -> None:
        """Insert or replace these sessions, all or none."""

    @abstractmethod
    async def forget(self, user_key: str) -> int:
        """Delete everything stored about ``user_key``; return how many records went."""

    @abstractmethod
    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Add to anonymous daily counters, keyed by (UTC day ``YYYY-MM-DD``, counter name)."""

    @abstractmethod
    async def counts(self, day: str) -> dict[str, int]:
        """The anonymous counters of one UTC day, by name."""

    @abstractmethod
    async def record_escalations(self, escalations: list[Escalation]) -> None:
        """Store escalations, all or none; one whose id is already stored is left as it is."""

    @abstractmethod
    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        """Escalations, oldest first, filtered by time, level and acknowledgement."""

    @abstractmethod
    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        """Record who acknowledged an escalation (the first acknowledgement stays); ``None`` if unknown."""

    @abstractmethod
    async def mark_alerted(self, escalation_id: str, at: float) -> None:
        """Record that the operators' alert for an escalation was delivered."""

    @abstractmethod
    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        """Escalations whose alert is still owed, oldest first."""

    @abstractmethod
    async def record_updates(self, updates: Sequence[tuple[int, str]], at: float) -> list[int]:
        """Journal incoming updates as (update id, raw JSON), all or none; return the ids not journalled before."""

    @abstractmethod
    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        """Mark updates answered (their text goes, their ids stay) and remember chats' message ids for /erase.

        All or none, in one transaction: the bot crosses off a batch of answered updates at a time.
        """

    @abstractmethod
    async def unanswered_updates(self) -> list[tuple[int, str]]:
        """Journalled updates not answered yet, as (update id, raw JSON), oldest first."""

    @abstractmethod
    async def purge_updates(self, before: float) -> int:
        """Delete the ids of updates answered before ``before``; return how many went."""

    @abstractmethod
    async def message_ids(self, chat_key: str) -> list[int]:
        """The remembered message ids of a chat, oldest first."""

    @abstractmethod
    async def drop_message_ids(self, chat_key: str) -> int:
        """Forget every remembered message id of a chat; return how many went."""

    @abstractmethod
    async def purge_message_ids(self, before: float) -> int:
        """Forget message ids remembered before ``before`` (too old to delete anyway); return how many went."""

    @abstractmethod
    async def tell_group_once(self, group_key: str, at: float) -> bool:
        """Record that a group was told the bot only talks in private; ``True`` only the first time."""

    @abstractmethod
    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        """Escalations stored after position ``after``, in the order they were stored, with their positions.

        Positions only grow, so a follower that remembers the last one sees every new record once,
        including old ones replayed from the spool.
        """

    @abstractmethod
    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        """Every anonymous daily counter from ``first_day`` on (all days for ``None``), by (day, name)."""

    @abstractmethod
    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        """Fold escalations older than ``before`` into anonymous daily counts, delete them and idle sessions.

        ``keep_unacked`` keeps the escalations nobody has acknowledged yet (and counts them in ``kept``).
        One transaction: a purge that fails leaves everything as it was, and running it again is harmless.
        """

    @abstractmethod
    async def backup(self, target: Path, *, overwrite: bool = False) -> Backup:
        """Write a consistent copy of everything stored to the SQLite file ``target``, while the bot keeps running.

        The copy is written beside ``target`` and moved into place only when complete and checked,
        so a crash never leaves half a backup under that name. An existing ``target`` is refused
        unless ``overwrite``. The copy is one self-contained file (no ``-wal``), readable by its owner only.
        """


@dataclass(frozen=True)
class Backup:
    """What a backup wrote."""

    path: Path
    size: int
    """Bytes on disk."""
    rows: dict[str, int]
    """Rows per table, for every table of the bot's data (``TABLE_COUNTS``)."""
    migrations: tuple[str, ...]
    """The migrations the copy has, in order."""


TABLE_COUNTS = {
    "sessions": "SELECT COUNT(*) FROM sessions",
    "escalations": "SELECT COUNT(*) FROM escalations",
    "daily_counts": "SELECT COUNT(*) FROM daily_counts",
    "updates": "SELECT COUNT(*) FROM updates",
    "message_ids": "SELECT COUNT(*) FROM message_ids",
    "told_groups": "SELECT COUNT(*) FROM told_groups",
}
"""A row count for every table of the bot's data (``_migrations`` aside: a backup lists the migrations themselves).
A migration that adds a table adds it here; a test compares this with the tables the migrations create."""


def _backup_target(target: Path, overwrite: bool, live: Path | None = None) -> tuple[Path, Path]:
    """Check where a backup may go; return the target and the temporary file beside it."""
    target = Path(target)
    if live is not None and target.resolve() == live.resolve():
        raise StoreError(f"{target} is the live database itself; give the backup another name")
    if not target.parent.is_dir():
        raise StoreError(f"the folder {target.parent} does not exist; create it first or choose another path")
    if target.exists() and not overwrite:
        raise StoreError(f"{target} already exists; choose a new name, or replace it with --force")
    return target, target.with_name(f".{target.name}.partial-{os.getpid()}")


async def _seal(partial: Path, target: Path, overwrite: bool) -> Backup:
    """Check the finished copy, make it self-contained and private, and move it into place."""
    try:
        async with aiosqlite.connect(partial, isolation_level=None) as copy:
            await copy.execute("PRAGMA journal_mode=DELETE")
            async with copy.execute("PRAGMA quick_check") as cursor:
                verdict = (await cursor.fetchone() or ("no answer",))[0]
            if verdict != "ok":
                raise StoreError(f"the backup failed its integrity check ({verdict}); {target} was not written")
            rows = {}
            for table, query in TABLE_COUNTS.items():
                async with copy.execute(query) as cursor:
                    rows[table] = (await cursor.fetchone() or (0,))[0]
            async with copy.execute("SELECT name FROM _migrations ORDER BY name") as cursor:
                migrations = tuple([row[0] async for row in cursor])
        os.chmod(partial, 0o600)
        descriptor = os.open(partial, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        if overwrite:
            os.replace(partial, target)
        else:
            os.link(partial, target)  # fails if the target appeared meanwhile: never replaces a file
    except FileExistsError:
        raise StoreError(f"{target} already exists; choose a new name, or replace it with --force") from None
    except (sqlite3.Error, OSError) as error:
        raise StoreError(f"could not write the backup {target}: {error}") from error
    return Backup(target, target.stat().st_size, rows, migrations)


def _copy(session: Session) -> Session:
    return dataclasses.replace(session, shown=set(session.shown))


class MemoryStore(Store):
    """Keeps sessions in a dict; for tests and for a chat that should leave no trace."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._escalations: dict[str, Escalation] = {}
        self._positions: dict[str, int] = {}
        self._last_position = 0
        self._counts: Counter[tuple[str, str]] = Counter()
        self._updates: dict[int, _Update] = {}
        self._message_ids: dict[tuple[str, int], float] = {}
        self._told_groups: dict[str, float] = {}

    async def open(self) -> None:
        """Nothing to open."""

    async def close(self) -> None:
        """Nothing to close; the sessions stay until the object goes."""

    async def ping(self) -> None:
        """Memory always answers."""

    async def load_session(self, user_key: str) -> Session | None:
        session = self._sessions.get(user_key)
        return _copy(session) if session else None

    async def save_sessions(self, sessions: list[Session]) -> None:
        for session in sessions:
            self._sessions[session.user_key] = _copy(session)

    async def forget(self, user_key: str) -> int:
        gone = [key for key, escalation in self._escalations.items() if escalation.user_key == user_key]
        for key in gone:
            del self._escalations[key]
            self._positions.pop(key, None)
        return len(gone) + (1 if self._sessions.pop(user_key, None) else 0) + await self.drop_message_ids(user_key)

    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        self._counts.update(counts)

    async def counts(self, day: str) -> dict[str, int]:
        return {name: value for (when, name), value in self._counts.items() if when == day}

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        for escalation in escalations:
            if escalation.id not in self._escalations:
                self._escalations[escalation.id] = escalation
                self._last_position += 1
                self._positions[escalation.id] = self._last_position

    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        found = [
            e
            for e in sorted(self._escalations.values(), key=lambda e: (e.at, e.id))
            if (since is None or e.at >= since) and (level is None or e.level is level) and not (unacked and e.acked_by)
        ]
        return found[:limit] if limit is not None else found

    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        found = self._escalations.get(escalation_id)
        if found is not None and found.acked_by is None:
            found = self._escalations[escalation_id] = dataclasses.replace(found, acked_by=by, acked_at=at)
        return found

    async def mark_alerted(self, escalation_id: str, at: float) -> None:
        found = self._escalations.get(escalation_id)
        if found is not None:
            self._escalations[escalation_id] = dataclasses.replace(found, alerted_at=at)

    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        return [e for e in await self.escalations() if e.alerted_at is None][:limit]

    async def backup(self, target: Path, *, overwrite: bool = False) -> Backup:
        target, partial = _backup_target(target, overwrite)
        by_position = sorted(self._escalations.values(), key=lambda e: self._positions.get(e.id, 0))
        try:
            async with SqliteStore(partial) as copy:
                await copy.save_sessions(list(self._sessions.values()))
                await copy.record_escalations(by_position)
                await copy.add_counts(self._counts)
                await copy._restore_rows(
                    updates=[(key, row.received_at, row.raw, row.answered_at) for key, row in self._updates.items()],
                    message_ids=[(chat, message_id, at) for (chat, message_id), at in self._message_ids.items()],
                    told_groups=list(self._told_groups.items()),
                )
            return await _seal(partial, target, overwrite)
        finally:
            partial.unlink(missing_ok=True)

    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        found = sorted(
            (position, self._escalations[key]) for key, position in self._positions.items() if position > after
        )
        return found[:limit]

    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        return {key: value for key, value in sorted(self._counts.items()) if first_day is None or key[0] >= first_day}

    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        past = [e for e in self._escalations.values() if e.at < before]
        old = [e for e in past if not keep_unacked or e.acked_by is not None]
        self._counts.update(Counter((day_of(e.at), folded_count_name(e)) for e in old))
        for escalation in old:
            del self._escalations[escalation.id]
            self._positions.pop(escalation.id, None)
        idle = [key for key, session in self._sessions.items() if session.last_seen < before]
        for key in idle:
            del self._sessions[key]
        return Purged(len(old), len(idle), tuple(sorted({day_of(e.at) for e in old})), len(past) - len(old))

    async def record_updates(self, updates: Sequence[tuple[int, str]], at: float) -> list[int]:
        raw = dict(updates)
        fresh = [update_id for update_id in raw if update_id not in self._updates]
        for update_id in fresh:
            self._updates[update_id] = _Update(at, raw[update_id])
        return fresh

    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        for done in answered:
            found = self._updates.get(done.update_id)
            if found is not None and found.answered_at is None:
                self._updates[done.update_id] = _Update(found.received_at, None, at)
            if done.chat_key is not None:
                for message_id in done.message_ids:
                    self._message_ids.setdefault((done.chat_key, message_id), at)

    async def unanswered_updates(self) -> list[tuple[int, str]]:
        return [(key, row.raw) for key, row in sorted(self._updates.items()) if row.raw is not None]

    async def purge_updates(self, before: float) -> int:
        gone = [key for key, row in self._updates.items() if row.answered_at is not None and row.answered_at < before]
        for key in gone:
            del self._updates[key]
        return len(gone)

    async def message_ids(self, chat_key: str) -> list[int]:
        found = [(at, message_id) for (chat, message_id), at in self._message_ids.items() if chat == chat_key]
        return [message_id for _, message_id in sorted(found)]

    async def drop_message_ids(self, chat_key: str) -> int:
        gone = [key for key in self._message_ids if key[0] == chat_key]
        for key in gone:
            del self._message_ids[key]
        return len(gone)

    async def purge_message_ids(self, before: float) -> int:
        gone = [key for key, at in self._message_ids.items() if at < before]
        for key in gone:
            del self._message_ids[key]
        return len(gone)

    async def tell_group_once(self, group_key: str, at: float) -> bool:
        if group_key in self._told_groups:
            return False
        self._told_groups[group_key] = at
        return True


@dataclass(frozen=True)
class _Update:
    """One journalled update in the memory store."""

    received_at: float
    raw: str | None
    answered_at: float | None = None


@dataclass(frozen=True)
class Migration:
    """A named schema change; applied once, in order, and recorded in ``_migrations``."""

    name: str
    statements: tuple[str, ...]


_ESCALATION_COLUMNS = (
    "id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at, alerted_at"
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_sessions",
        (
            """CREATE TABLE sessions (
                user_key TEXT PRIMARY KEY,
                first_seen REAL NOT NULL,
                last_seen REAL NOT NULL,
                turns INTEGER NOT NULL DEFAULT 0,
                last_intent TEXT,
                shown TEXT NOT NULL DEFAULT '[]',
                crisis_level TEXT,
                crisis_at REAL
            ) WITHOUT ROWID""",
            "CREATE INDEX sessions_last_seen ON sessions (last_seen)",
        ),
    ),
    Migration(
        "0002_escalations",
        (
            """CREATE TABLE escalations (
                id TEXT PRIMARY KEY,
                at REAL NOT NULL,
                user_key TEXT NOT NULL,
                level TEXT NOT NULL,
                category TEXT NOT NULL,
                rule TEXT NOT NULL,
                channel TEXT NOT NULL,
                resources TEXT NOT NULL,
                excerpt TEXT,
                acked_by TEXT,
                acked_at REAL,
                alerted_at REAL
            )""",
            "CREATE INDEX escalations_at ON escalations (at)",
            "CREATE INDEX escalations_user ON escalations (user_key)",
        ),
    ),
    Migration(
        "0003_daily_counts",
        (
            """CREATE TABLE daily_counts (
                day TEXT NOT NULL,
                name TEXT NOT NULL,
                value INTEGER NOT NULL,
                PRIMARY KEY (day, name)
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        "0004_escalation_seq",
        (
            # A position that only grows (AUTOINCREMENT never reuses one), so `escalations tail` sees every record.
            """CREATE TABLE escalations_new (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                at REAL NOT NULL,
                user_key TEXT NOT NULL,
                level TEXT NOT NULL,
                category TEXT NOT NULL,
                rule TEXT NOT NULL,
                channel TEXT NOT NULL,
                resources TEXT NOT NULL,
                excerpt TEXT,
                acked_by TEXT,
                acked_at REAL,
                alerted_at REAL
            )""",
            "INSERT INTO escalations_new"
            " (id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at, alerted_at)"
            " SELECT id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at,"
            " alerted_at FROM escalations ORDER BY rowid",
            "DROP TABLE escalations",
            "ALTER TABLE escalations_new RENAME TO escalations",
            "CREATE INDEX escalations_at ON escalations (at)",
            "CREATE INDEX escalations_user ON escalations (user_key)",
        ),
    ),
    Migration("0005_session_crisis_track", ("ALTER TABLE sessions ADD COLUMN crisis_track TEXT",)),
    Migration(
        "0010_updates",
        (
            # The Telegram update journal: an update is written here before Telegram is told it arrived,
            # its text (raw) is set to NULL once it is answered, and its id stays a while to deduplicate.
            """CREATE TABLE updates (
                update_id INTEGER PRIMARY KEY,
                received_at REAL NOT NULL,
                raw TEXT,
                answered_at REAL
            )""",
            "CREATE INDEX updates_answered_at ON updates (answered_at)",
        ),
    ),
    Migration(
        "0011_message_ids",
        (
            # Message ids (never text) of a chat's last 48 hours, so /erase can delete them on Telegram.
            """CREATE TABLE message_ids (
                chat_key TEXT NOT NULL,
                message_id INTEGER NOT NULL,
                at REAL NOT NULL,
                PRIMARY KEY (chat_key, message_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX message_ids_at ON message_ids (at)",
        ),
    ),
    Migration(
        "0012_told_groups",
        ("CREATE TABLE told_groups (chat_key TEXT PRIMARY KEY, told_at REAL NOT NULL) WITHOUT ROWID",),
    ),
)

_INSERT_ESCALATION = (
    "INSERT OR IGNORE INTO escalations"
    " (id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at, alerted_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _escalation_row(escalation: Escalation) -> tuple[object, ...]:
    e = escalation
    resources = json.dumps(list(e.resources))
    return (
        e.id,
        e.at,
        e.user_key,
        e.level.value,
        e.category,
        e.rule,
        e.channel,
        resources,
        e.excerpt,
        e.acked_by,
        e.acked_at,
        e.alerted_at,
    )


def _escalation(row: sqlite3.Row | tuple[object, ...]) -> Escalation:
    id_, at, user_key, level, category, rule, channel, resources, excerpt, acked_by, acked_at, alerted_at = row
    return Escalation(
        id=id_,
        at=at,
        user_key=user_key,
        level=Level(level),
        category=category,
        rule=rule,
        channel=channel,
        resources=tuple(json.loads(resources)),
        excerpt=excerpt,
        acked_by=acked_by,
        acked_at=acked_at,
        alerted_at=alerted_at,
    )


_MIGRATION_NAME = re.compile(r"^\d{4}_[a-z0-9_]+$")


def check_migrations(migrations: tuple[Migration, ...]) -> None:
    """Refuse badly named, duplicated or out-of-order migrations."""
    names = [migration.name for migration in migrations]
    for name in names:
        if not _MIGRATION_NAME.match(name):
            raise ValueError(f"migration name {name!r} must look like '0001_what_it_does'")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"migration {duplicates[0]!r} is registered more than once")
    if names != sorted(names):
        raise ValueError("migrations must be listed in the order of their numbers")


check_migrations(MIGRATIONS)


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


_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=5000",
    "PRAGMA foreign_keys=ON",
)


class SqliteStore(Store):
    """Sessions in one SQLite file in WAL mode, written through aiosqlite."""

    def __init__(
        self, path: Path | str, migrations: tuple[Migration, ...] = MIGRATIONS, *, migrate: bool = True
    ) -> None:
        self.path = Path(path)
        self._migrations = migrations
        self._migrate_on_open = migrate
        """``False`` opens an existing database as it is, e.g. to back up the file of a running bot."""
        self._db: aiosqlite.Connection | None = None
        self._writing = asyncio.Lock()
        """One transaction at a time: concurrent callers share one connection, and SQLite refuses nested BEGINs."""
        self._in_flight: set[asyncio.Future[Any]] = set()
        """Writes under way, finished even when their callers stop waiting (``_shielded``)."""

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
            raise StoreError(f"could not {doing} in {self.path}: {error}") from error

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        async with self._writing:
            if self.db.in_transaction:  # never expected (writes are shielded); a stuck transaction would block all
                await self.db.execute("ROLLBACK")
            await self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
                await self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # a failed COMMIT (busy) leaves the transaction open
                    await self.db.execute("ROLLBACK")
                raise

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
                if str(self.path) != ":memory:":
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = await aiosqlite.connect(self.path, isolation_level=None)
            try:
                for pragma in _PRAGMAS:
                    await self._db.execute(pragma)
                if self._migrate_on_open:
                    await self._migrate()
                elif not await self._is_unhooked():
                    raise StoreError(f"{self.path} is not an Unhooked database: it has no record of migrations")
            except BaseException:
                await self.close()
                raise

    async def _migrate(self) -> None:
        await self.db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        async with self.db.execute("SELECT name FROM _migrations") as cursor:
            applied = {row[0] async for row in cursor}
        for migration in self._migrations:
            if migration.name in applied:
                continue
            async with self._transaction():
                for statement in migration.statements:
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

    async def close(self) -> None:
        if self._in_flight:
            await asyncio.wait(set(self._in_flight))
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def ping(self) -> None:
        async with self._guard("read the database"), self.db.execute("SELECT 1") as cursor:
            await cursor.fetchone()

    async def load_session(self, user_key: str) -> Session | None:
        async with (
            self._guard("load a session"),
            self.db.execute(
                "SELECT first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track"
                " FROM sessions WHERE user_key = ?",
                (user_key,),
            ) as cursor,
        ):
            row = await cursor.fetchone()
        if row is None:
            return None
        first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track = row
        return Session(
            user_key=user_key,
            first_seen=first_seen,
            last_seen=last_seen,
            turns=turns,
            last_intent=last_intent,
            shown=set(json.loads(shown)),
            crisis_level=Level(crisis_level) if crisis_level else None,
            crisis_at=crisis_at,
            crisis_track=Track(crisis_track) if crisis_track else None,
        )

    @_shielded
    async def save_sessions(self, sessions: list[Session]) -> None:
        rows = [
            (
                session.user_key,
                session.first_seen,
                session.last_seen,
                session.turns,
                session.last_intent,
                json.dumps(sorted(session.shown)),
                session.crisis_level.value if session.crisis_level else None,
                session.crisis_at,
                session.crisis_track.value if session.crisis_track else None,
            )
            for session in sessions
        ]
        async with self._guard("save sessions"), self._transaction():
            await self.db.executemany(
                "INSERT OR REPLACE INTO sessions"
                " (user_key, first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    @_shielded
    async def forget(self, user_key: str) -> int:
        async with self._guard("delete a person's data"), self._transaction():
            sessions = await self.db.execute("DELETE FROM sessions WHERE user_key = ?", (user_key,))
            escalations = await self.db.execute("DELETE FROM escalations WHERE user_key = ?", (user_key,))
            message_ids = await self.db.execute("DELETE FROM message_ids WHERE chat_key = ?", (user_key,))
            return sessions.rowcount + escalations.rowcount + message_ids.rowcount

    @_shielded
    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        async with self._guard("add to daily counts"), self._transaction():
            await self.db.executemany(
                "INSERT INTO daily_counts (day, name, value) VALUES (?, ?, ?)"
                " ON CONFLICT (day, name) DO UPDATE SET value = value + excluded.value",
                [(day, name, value) for (day, name), value in counts.items()],
            )

    async def counts(self, day: str) -> dict[str, int]:
        async with (
            self._guard("read daily counts"),
            self.db.execute("SELECT name, value FROM daily_counts WHERE day = ?", (day,)) as cursor,
        ):
            return {name: value async for name, value in cursor}

    @_shielded
    async def record_escalations(self, escalations: list[Escalation]) -> None:
        async with self._guard("record escalations"), self._transaction():
            await self.db.executemany(_INSERT_ESCALATION, [_escalation_row(e) for e in escalations])

    async def _select_escalations(
        self, where: str, parameters: tuple[object, ...], limit: int | None
    ) -> list[Escalation]:
        # ``where`` is always one of the constant clauses in this class; values go in as parameters.
        query = f"SELECT {_ESCALATION_COLUMNS} FROM escalations WHERE {where} ORDER BY at, id LIMIT ?"  # noqa: S608
        async with self._guard("read escalations"), self.db.execute(query, (*parameters, limit or -1)) as cursor:
            return [_escalation(row) async for row in cursor]

    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        return await self._select_escalations(
            "(? IS NULL OR at >= ?) AND (? IS NULL OR level = ?) AND (? = 0 OR acked_by IS NULL)",
            (since, since, level and level.value, level and level.value, int(unacked)),
            limit,
        )

    @_shielded
    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        async with self._guard("acknowledge an escalation"), self._transaction():
            await self.db.execute(
                "UPDATE escalations SET acked_by = ?, acked_at = ? WHERE id = ? AND acked_by IS NULL",
                (by, at, escalation_id),
            )
        found = await self._select_escalations("id = ?", (escalation_id,), 1)
        return found[0] if found else None

    @_shielded
    async def mark_alerted(self, escalation_id: str, at: float) -> None:
        async with self._guard("mark an alert as sent"), self._transaction():
            await self.db.execute("UPDATE escalations SET alerted_at = ? WHERE id = ?", (at, escalation_id))

    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        return await self._select_escalations("alerted_at IS NULL", (), limit)

    @_shielded
    async def record_updates(self, updates: Sequence[tuple[int, str]], at: float) -> list[int]:
        raw = dict(updates)
        if not raw:
            return []
        async with self._guard("journal updates"), self._transaction():
            async with self.db.execute(
                "SELECT update_id FROM updates WHERE update_id BETWEEN ? AND ?", (min(raw), max(raw))
            ) as cursor:
                known = {row[0] async for row in cursor}
            fresh = [update_id for update_id in raw if update_id not in known]
            await self.db.executemany(
                "INSERT INTO updates (update_id, received_at, raw) VALUES (?, ?, ?)",
                [(update_id, at, raw[update_id]) for update_id in fresh],
            )
        return fresh

    @_shielded
    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        remembered = [
            (done.chat_key, message_id, at)
            for done in answered
            if done.chat_key is not None
            for message_id in done.message_ids
        ]
        async with self._guard("mark updates answered"), self._transaction():
            await self.db.executemany(
                "UPDATE updates SET raw = NULL, answered_at = ? WHERE update_id = ? AND answered_at IS NULL",
                [(at, done.update_id) for done in answered],
            )
            if remembered:
                await self.db.executemany(
                    "INSERT OR IGNORE INTO message_ids (chat_key, message_id, at) VALUES (?, ?, ?)", remembered
                )

    async def _restore_rows(
        self,
        *,
        updates: Sequence[tuple[int, float, str | None, float | None]],
        message_ids: Sequence[tuple[str, int, float]],
        told_groups: Sequence[tuple[str, float]],
    ) -> None:
        """Write journal, message-id and group rows exactly as given (a memory store's backup)."""
        async with self._guard("restore rows"), self._transaction():
            await self.db.executemany(
                "INSERT INTO updates (update_id, received_at, raw, answered_at) VALUES (?, ?, ?, ?)", updates
            )
            await self.db.executemany(
                "INSERT INTO message_ids (chat_key, message_id, at) VALUES (?, ?, ?)", message_ids
            )
            await self.db.executemany("INSERT INTO told_groups (chat_key, told_at) VALUES (?, ?)", told_groups)

    async def unanswered_updates(self) -> list[tuple[int, str]]:
        async with (
            self._guard("read unanswered updates"),
            self.db.execute("SELECT update_id, raw FROM updates WHERE raw IS NOT NULL ORDER BY update_id") as cursor,
        ):
            return [(update_id, raw) async for update_id, raw in cursor]

    @_shielded
    async def purge_updates(self, before: float) -> int:
        async with self._guard("purge answered updates"), self._transaction():
            cursor = await self.db.execute("DELETE FROM updates WHERE answered_at < ?", (before,))
            return cursor.rowcount

    async def message_ids(self, chat_key: str) -> list[int]:
        async with (
            self._guard("read message ids"),
            self.db.execute(
                "SELECT message_id FROM message_ids WHERE chat_key = ? ORDER BY at, message_id", (chat_key,)
            ) as cursor,
        ):
            return [row[0] async for row in cursor]

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
    async def tell_group_once(self, group_key: str, at: float) -> bool:
        async with self._guard("remember a group"), self._transaction():
            cursor = await self.db.execute(
                "INSERT OR IGNORE INTO told_groups (chat_key, told_at) VALUES (?, ?)", (group_key, at)
            )
            return cursor.rowcount == 1

    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        async with (
            self._guard("read new escalations"),
            self.db.execute(
                "SELECT seq, id, at, user_key, level, category, rule, channel, resources, excerpt, acked_by,"
                " acked_at, alerted_at FROM escalations WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, limit),
            ) as cursor,
        ):
            return [(row[0], _escalation(row[1:])) async for row in cursor]

    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        async with (
            self._guard("read daily counts"),
            self.db.execute(
                "SELECT day, name, value FROM daily_counts WHERE ? IS NULL OR day >= ? ORDER BY day, name",
                (first_day, first_day),
            ) as cursor,
        ):
            return {(day, name): value async for day, name, value in cursor}

    @_shielded
    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        async with self._guard("purge old records"), self._transaction():
            past = await self._select_escalations("at < ?", (before,), None)
            old = [e for e in past if not keep_unacked or e.acked_by is not None]
            counts = Counter((day_of(e.at), folded_count_name(e)) for e in old)
            await self.db.executemany(
                "INSERT INTO daily_counts (day, name, value) VALUES (?, ?, ?)"
                " ON CONFLICT (day, name) DO UPDATE SET value = value + excluded.value",
                [(day, name, value) for (day, name), value in counts.items()],
            )
            await self.db.execute(
                "DELETE FROM escalations WHERE at < ? AND (? = 0 OR acked_by IS NOT NULL)", (before, int(keep_unacked))
            )
            sessions = await self.db.execute("DELETE FROM sessions WHERE last_seen < ?", (before,))
        kept = len(past) - len(old)
        return Purged(len(old), sessions.rowcount, tuple(sorted({day_of(e.at) for e in old})), kept)

    async def backup(self, target: Path, *, overwrite: bool = False) -> Backup:
        live = None if str(self.path) == ":memory:" else self.path
        target, partial = _backup_target(target, overwrite, live)
        try:
            async with self._guard("back up the database"), aiosqlite.connect(partial) as copy, self._writing:
                # One step (pages=0): a single read transaction, so the copy is one consistent
                # snapshot; in WAL mode other connections go on writing meanwhile. A copy in several
                # steps would restart whenever another connection writes, and might never finish.
                # This connection's own writes wait (the lock), so no half-done transaction is copied;
                # `python -m bot backup` uses a connection of its own and pauses nothing.
                await self.db.backup(copy, pages=0)
            return await _seal(partial, target, overwrite)
        finally:
            partial.unlink(missing_ok=True)


def open_store(path: Path | str | None) -> Store:
    """A SQLite store for a file path, or a memory store for ``None`` or ``:memory:``."""
    if path is None or str(path) == ":memory:":
        return MemoryStore()
    return SqliteStore(path)
