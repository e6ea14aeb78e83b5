"""Session storage: one small async interface, in memory or in SQLite through aiosqlite."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

import aiosqlite

from bot.errors import StoreError
from bot.models import Level, Session


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
    async def load_session(self, user_key: str) -> Session | None:
        """The session of ``user_key``, or ``None`` for someone new."""

    @abstractmethod
    async def save_sessions(self, sessions: list[Session]) -> None:
        """Insert or replace these sessions, all or none."""

    @abstractmethod
    async def forget(self, user_key: str) -> int:
        """Delete everything stored about ``user_key``; return how many records went."""


def _copy(session: Session) -> Session:
    return dataclasses.replace(session, shown=set(session.shown))


class MemoryStore(Store):
    """Keeps sessions in a dict; for tests and for a chat that should leave no trace."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    async def open(self) -> None:
        """Nothing to open."""

    async def close(self) -> None:
        """Nothing to close; the sessions stay until the object goes."""

    async def load_session(self, user_key: str) -> Session | None:
        session = self._sessions.get(user_key)
        return _copy(session) if session else None

    async def save_sessions(self, sessions: list[Session]) -> None:
        for session in sessions:
            self._sessions[session.user_key] = _copy(session)

    async def forget(self, user_key: str) -> int:
        return 1 if self._sessions.pop(user_key, None) else 0


@dataclass(frozen=True)
class Migration:
    """A named schema change; applied once, in order, and recorded in ``_migrations``."""

    name: str
    statements: tuple[str, ...]


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


class SqliteStore(Store):
    """Sessions in one SQLite file in WAL mode, written through aiosqlite."""

    def __init__(self, path: Path | str, migrations: tuple[Migration, ...] = MIGRATIONS) -> None:
        self.path = Path(path)
        self._migrations = migrations
        self._db: aiosqlite.Connection | None = None

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
        except (sqlite3.Error, ValueError) as error:
            raise StoreError(f"could not {doing} in {self.path}: {error}") from error

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        await self.db.execute("COMMIT")

    async def open(self) -> None:
        if self._db is not None:
            return
        async with self._guard("open the database"):
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = await aiosqlite.connect(self.path, isolation_level=None)
            try:
                for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=5000", "foreign_keys=ON"):
                    await self._db.execute(f"PRAGMA {pragma}")
                await self._migrate()
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

    async def applied_migrations(self) -> list[str]:
        """The names of the migrations applied to this file, in order."""
        async with (
            self._guard("read migrations"),
            self.db.execute("SELECT name FROM _migrations ORDER BY name") as cursor,
        ):
            return [row[0] async for row in cursor]

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def load_session(self, user_key: str) -> Session | None:
        async with (
            self._guard("load a session"),
            self.db.execute(
                "SELECT first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at"
                " FROM sessions WHERE user_key = ?",
                (user_key,),
            ) as cursor,
        ):
            row = await cursor.fetchone()
        if row is None:
            return None
        first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at = row
        return Session(
            user_key=user_key,
            first_seen=first_seen,
            last_seen=last_seen,
            turns=turns,
            last_intent=last_intent,
            shown=set(json.loads(shown)),
            crisis_level=Level(crisis_level) if crisis_level else None,
            crisis_at=crisis_at,
        )

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
            )
            for session in sessions
        ]
        async with self._guard("save sessions"), self._transaction():
            await self.db.executemany(
                "INSERT OR REPLACE INTO sessions"
                " (user_key, first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    async def forget(self, user_key: str) -> int:
        async with self._guard("delete a person's data"):
            cursor = await self.db.execute("DELETE FROM sessions WHERE user_key = ?", (user_key,))
            return cursor.rowcount


def open_store(path: Path | str | None) -> Store:
    """A SQLite store for a file path, or a memory store for ``None`` or ``:memory:``."""
    if path is None or str(path) == ":memory:":
        return MemoryStore()
    return SqliteStore(path)
