"""The server backend: every interface in one PostgreSQL database, through an asyncpg connection pool."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import asyncpg

from bot.database import Pool
from bot.errors import StoreError
from bot.models import Escalation, Level, Session
from bot.store import codec
from bot.store.base import Answered, Purged, Store, answered_sessions, day_of, folded_count_name, message_rows
from bot.store.postgres_locks import FAULTS, PostgresLocks
from bot.store.schema import Migration, load_migrations, pending, require_current

MIGRATIONS = load_migrations("postgres")
MIGRATION_LOCK = 0x756E686F6F6B6564  # "unhooked": replicas starting together migrate one at a time
"""The advisory lock held while migrations are checked and applied."""

_SELECT_ESCALATIONS = (
    "SELECT id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at"
    " FROM escalations WHERE ($1::float8 IS NULL OR at >= $1) AND ($2::text IS NULL OR level = $2)"
    " AND (NOT $3::bool OR acked_by IS NULL) ORDER BY at, id LIMIT $4"
)
_SELECT_ONE = (
    "SELECT id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at"
    " FROM escalations WHERE id = $1"
)
_UNALERTED = (
    "SELECT id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at"
    " FROM escalations WHERE alerted_at IS NULL ORDER BY at, id LIMIT $1"
)
_OLD_ESCALATIONS = (
    "SELECT id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at"
    " FROM escalations WHERE at < $1"
)
_FEED = (
    "SELECT seq, id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by,"
    " acked_at FROM escalations WHERE seq > $1 ORDER BY seq LIMIT $2"
)
_INSERT_ESCALATION = (
    "INSERT INTO escalations"
    " (id, at, level, category, rule, channel, user_key, resources, excerpt, alerted_at, acked_by, acked_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING"
)
_LOAD_SESSION = (
    "SELECT first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track"
    " FROM sessions WHERE user_key = $1"
)
_SAVE_SESSION = (
    "INSERT INTO sessions"
    " (user_key, first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (user_key) DO UPDATE SET"
    " first_seen = excluded.first_seen, last_seen = excluded.last_seen, turns = excluded.turns,"
    " last_intent = excluded.last_intent, shown = excluded.shown, crisis_level = excluded.crisis_level,"
    " crisis_at = excluded.crisis_at, crisis_track = excluded.crisis_track"
)
_ADD_COUNTS = (
    "INSERT INTO daily_counts (day, name, value) VALUES ($1, $2, $3)"
    " ON CONFLICT (day, name) DO UPDATE SET value = daily_counts.value + excluded.value"
)
_RECORD_UPDATES = (
    "INSERT INTO updates (update_id, received_at, raw, lane) SELECT id, $3, raw, lane"
    " FROM unnest($1::bigint[], $2::text[], $4::bigint[]) AS fresh (id, raw, lane)"
    " ON CONFLICT (update_id) DO NOTHING RETURNING update_id"
)
_ANSWER = "UPDATE updates SET raw = NULL, lane = NULL, answered_at = $1 WHERE update_id = $2 AND answered_at IS NULL"
_LANE = "SELECT update_id, raw FROM updates WHERE lane = $1 AND raw IS NOT NULL ORDER BY update_id"
_WAITING = (
    "SELECT DISTINCT lane FROM updates WHERE raw IS NOT NULL AND lane IS NOT NULL AND received_at < $1 ORDER BY lane"
)
_UNACKED_REMINDERS = (
    "SELECT r.escalation_id, r.at FROM escalation_reminders r JOIN escalations e ON e.id = r.escalation_id"
    " WHERE e.acked_by IS NULL ORDER BY r.escalation_id, r.number"
)
_REMEMBER_MESSAGE = "INSERT INTO message_ids (chat_key, message_id, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"


def _count(status: str) -> int:
    """The row count of a command status such as ``DELETE 3`` or ``INSERT 0 1``."""
    return int(status.rsplit(" ", 1)[-1])


class PostgresStore(Store):
    """Every interface in one PostgreSQL database; many replicas may share it."""

    def __init__(
        self,
        url: str,
        pool: Pool | None = None,
        migrations: tuple[Migration, ...] = MIGRATIONS,
        *,
        migrate: bool = True,
        where: str = "PostgreSQL",
    ) -> None:
        self._url = url
        self._settings = pool or Pool()
        self._migrations = migrations
        self._migrate_on_open = migrate
        self.where = where
        self._pool: asyncpg.Pool | None = None
        self.locks = PostgresLocks(url, self._settings.timeout, where)

    @asynccontextmanager
    async def _guard(self, doing: str) -> AsyncIterator[None]:
        try:
            yield
        except FAULTS as error:
            raise StoreError(f"could not {doing} in {self.where}: {error or type(error).__name__}") from error

    @asynccontextmanager
    async def _connection(self, doing: str, *, transaction: bool = False) -> AsyncIterator[asyncpg.Connection]:
        if self._pool is None:
            raise StoreError("the store is not open")
        async with self._guard(doing), self._pool.acquire(timeout=self._settings.timeout) as connection:
            if transaction:
                async with connection.transaction():
                    yield connection
            else:
                yield connection

    async def open(self) -> None:
        if self._pool is not None:
            return
        async with self._guard("connect to the database"):
            self._pool = await asyncpg.create_pool(
                self._url,
                min_size=self._settings.min_size,
                max_size=self._settings.max_size,
                timeout=self._settings.timeout,
                command_timeout=self._settings.timeout,
            )
        try:
            async with self._connection("check migrations", transaction=True) as connection:
                await connection.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
                applied = await self._applied(connection)
                if not self._migrate_on_open:
                    if applied is None:
                        raise StoreError(f"{self.where} is not an Unhooked database: it has no record of migrations")
                    require_current(self._migrations, applied, self.where)
                    return
                await self._migrate(connection, applied or set())
        except BaseException:
            await self.close()
            raise

    @staticmethod
    async def _applied(connection: asyncpg.Connection) -> set[str] | None:
        """The migrations recorded, or ``None`` when there is no record at all (a database never migrated)."""
        if await connection.fetchval("SELECT to_regclass('_migrations')") is None:
            return None
        return {row["name"] for row in await connection.fetch("SELECT name FROM _migrations")}

    async def _migrate(self, connection: asyncpg.Connection, applied: set[str]) -> None:
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        for migration in pending(self._migrations, applied, self.where):
            await connection.execute(migration.sql)
            await connection.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES ($1, $2)",
                migration.name,
                datetime.now(UTC).isoformat(timespec="seconds"),
            )
            self.migrated += (migration.name,)

    async def applied_migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        async with self._connection("read migrations") as connection:
            return [row["name"] for row in await connection.fetch("SELECT name FROM _migrations ORDER BY name")]

    async def close(self) -> None:
        await self.locks.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    async def ping(self) -> None:
        async with self._connection("read the database") as connection:
            await connection.fetchval("SELECT 1")

    async def load_session(self, user_key: str) -> Session | None:
        async with self._connection("load a session") as connection:
            row = await connection.fetchrow(_LOAD_SESSION, user_key)
        return codec.session_from_row(user_key, tuple(row)) if row else None

    async def save_sessions(self, sessions: list[Session]) -> None:
        async with self._connection("save sessions", transaction=True) as connection:
            await connection.executemany(_SAVE_SESSION, [codec.session_to_row(session) for session in sessions])

    async def forget(self, user_key: str) -> int:
        async with self._connection("delete a person's data", transaction=True) as connection:
            gone = 0
            for statement in (
                "DELETE FROM sessions WHERE user_key = $1",
                "DELETE FROM escalations WHERE user_key = $1",
                "DELETE FROM message_ids WHERE chat_key = $1",
            ):
                gone += _count(await connection.execute(statement, user_key))
            return gone

    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        async with self._connection("add to daily counts", transaction=True) as connection:
            await connection.executemany(_ADD_COUNTS, [(day, name, value) for (day, name), value in counts.items()])

    async def counts(self, day: str) -> dict[str, int]:
        async with self._connection("read daily counts") as connection:
            rows = await connection.fetch("SELECT name, value FROM daily_counts WHERE day = $1", day)
        return {row["name"]: row["value"] for row in rows}

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        async with self._connection("record escalations", transaction=True) as connection:
            await connection.executemany(_INSERT_ESCALATION, [codec.to_row(e) for e in escalations])

    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        async with self._connection("read escalations") as connection:
            rows = await connection.fetch(_SELECT_ESCALATIONS, since, level and level.value, unacked, limit)
        return [codec.from_row(tuple(row)) for row in rows]

    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        async with self._connection("acknowledge an escalation", transaction=True) as connection:
            await connection.execute(
                "UPDATE escalations SET acked_by = $1, acked_at = $2 WHERE id = $3 AND acked_by IS NULL",
                by,
                at,
                escalation_id,
            )
            row = await connection.fetchrow(_SELECT_ONE, escalation_id)
        return codec.from_row(tuple(row)) if row else None

    async def mark_alerted(self, escalation_id: str, at: float) -> bool:
        async with self._connection("mark an alert as sent") as connection:
            status = await connection.execute("UPDATE escalations SET alerted_at = $1 WHERE id = $2", at, escalation_id)
        return status == "UPDATE 1"

    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        async with self._connection("read escalations") as connection:
            rows = await connection.fetch(_UNALERTED, limit)
        return [codec.from_row(tuple(row)) for row in rows]

    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        async with self._connection("read new escalations") as connection:
            rows = await connection.fetch(_FEED, after, limit)
        return [(row[0], codec.from_row(tuple(row)[1:])) for row in rows]

    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        async with self._connection("read daily counts") as connection:
            rows = await connection.fetch(
                "SELECT day, name, value FROM daily_counts WHERE $1::text IS NULL OR day >= $1 ORDER BY day, name",
                first_day,
            )
        return {(row["day"], row["name"]): row["value"] for row in rows}

    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        async with self._connection("purge old records", transaction=True) as connection:
            past = [codec.from_row(tuple(row)) for row in await connection.fetch(_OLD_ESCALATIONS, before)]
            old = [e for e in past if not keep_unacked or e.acked_by is not None]
            counts = Counter((day_of(e.at), folded_count_name(e)) for e in old)
            await connection.executemany(_ADD_COUNTS, [(day, name, value) for (day, name), value in counts.items()])
            await connection.execute(
                "DELETE FROM escalations WHERE at < $1 AND (NOT $2 OR acked_by IS NOT NULL)", before, keep_unacked
            )
            sessions = _count(await connection.execute("DELETE FROM sessions WHERE last_seen < $1", before))
        kept = len(past) - len(old)
        return Purged(len(old), sessions, tuple(sorted({day_of(e.at) for e in old})), kept)

    async def record_updates(
        self, updates: Sequence[tuple[int, str]], at: float, lanes: Mapping[int, int] | None = None
    ) -> list[int]:
        raw, lanes = dict(updates), lanes or {}
        if not raw:
            return []
        async with self._connection("journal updates", transaction=True) as connection:
            chats = [lanes.get(update_id) for update_id in raw]
            rows = await connection.fetch(_RECORD_UPDATES, list(raw), list(raw.values()), at, chats)
        taken = {row["update_id"] for row in rows}
        return [update_id for update_id in raw if update_id in taken]

    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        remembered = message_rows(answered, at)
        sessions = [codec.session_to_row(session) for session in answered_sessions(answered)]
        async with self._connection("mark updates answered", transaction=True) as connection:
            await connection.executemany(_ANSWER, [(at, done.update_id) for done in answered])
            if sessions:
                await connection.executemany(_SAVE_SESSION, sessions)
            if remembered:
                await connection.executemany(_REMEMBER_MESSAGE, remembered)

    async def unanswered_updates(self) -> list[tuple[int, str]]:
        async with self._connection("read unanswered updates") as connection:
            rows = await connection.fetch("SELECT update_id, raw FROM updates WHERE raw IS NOT NULL ORDER BY update_id")
        return [(row["update_id"], row["raw"]) for row in rows]

    async def lane_updates(self, lane: int) -> list[tuple[int, str]]:
        async with self._connection("read a chat's unanswered updates") as connection:
            rows = await connection.fetch(_LANE, lane)
        return [(row["update_id"], row["raw"]) for row in rows]

    async def waiting_lanes(self, before: float) -> list[int]:
        async with self._connection("read chats left waiting") as connection:
            return [row["lane"] for row in await connection.fetch(_WAITING, before)]

    async def purge_updates(self, before: float) -> int:
        async with self._connection("purge answered updates") as connection:
            return _count(await connection.execute("DELETE FROM updates WHERE answered_at < $1", before))

    async def message_ids(self, chat_key: str) -> list[int]:
        async with self._connection("read message ids") as connection:
            rows = await connection.fetch(
                "SELECT message_id FROM message_ids WHERE chat_key = $1 ORDER BY at, message_id", chat_key
            )
        return [row["message_id"] for row in rows]

    async def drop_message_ids(self, chat_key: str) -> int:
        async with self._connection("forget message ids") as connection:
            return _count(await connection.execute("DELETE FROM message_ids WHERE chat_key = $1", chat_key))

    async def purge_message_ids(self, before: float) -> int:
        async with self._connection("purge old message ids") as connection:
            return _count(await connection.execute("DELETE FROM message_ids WHERE at < $1", before))

    async def record_reminder(self, escalation_id: str, number: int, at: float) -> bool:
        async with self._connection("record a reminder") as connection:
            status = await connection.execute(
                "INSERT INTO escalation_reminders (escalation_id, number, at)"
                " SELECT id, $2, $3 FROM escalations WHERE id = $1 ON CONFLICT DO NOTHING",
                escalation_id,
                number,
                at,
            )
        return _count(status) == 1

    async def unacked_reminders(self) -> dict[str, list[float]]:
        async with self._connection("read reminders") as connection:
            return codec.reminders([tuple(row) for row in await connection.fetch(_UNACKED_REMINDERS)])

    async def claim_run(self, name: str, at: float) -> bool:
        async with self._connection("claim a job's run") as connection:
            status = await connection.execute(
                "INSERT INTO job_runs (name, claimed_at) VALUES ($1, $2) ON CONFLICT DO NOTHING", name, at
            )
        return _count(status) == 1

    async def tell_group_once(self, group_key: str, at: float) -> bool:
        async with self._connection("remember a group") as connection:
            status = await connection.execute(
                "INSERT INTO told_groups (chat_key, told_at) VALUES ($1, $2) ON CONFLICT DO NOTHING", group_key, at
            )
        return _count(status) == 1
