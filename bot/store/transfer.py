"""Moving a SQLite database into PostgreSQL: every table the bot keeps, copied in one transaction."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bot.errors import ConfigError, StoreError
from bot.store.postgres import PostgresStore
from bot.store.postgres_locks import FAULTS
from bot.store.sqlite import SqliteStore

TABLES: dict[str, tuple[str, ...]] = {
    "sessions": (
        "user_key",
        "first_seen",
        "last_seen",
        "turns",
        "last_intent",
        "shown",
        "crisis_level",
        "crisis_at",
        "crisis_track",
    ),
    "escalations": (
        "id",
        "at",
        "user_key",
        "level",
        "category",
        "rule",
        "channel",
        "resources",
        "excerpt",
        "acked_by",
        "acked_at",
        "alerted_at",
    ),
    "escalation_reminders": ("escalation_id", "number", "at"),
    "daily_counts": ("day", "name", "value"),
    "updates": ("update_id", "received_at", "raw", "answered_at", "lane"),
    "message_ids": ("chat_key", "message_id", "at"),
    "told_groups": ("chat_key", "told_at"),
    "job_runs": ("name", "claimed_at"),
}
"""Each table copied and its columns; escalations in the order they were stored (PostgreSQL numbers them anew)."""

# Statements built once from the constant table list above, never from input.
_SELECTS = {
    table: f"SELECT {', '.join(columns)} FROM {table} ORDER BY {'seq' if table == 'escalations' else columns[0]}"  # noqa: S608
    for table, columns in TABLES.items()
}
_HELD = "SELECT " + " + ".join(f"(SELECT COUNT(*) FROM {table})" for table in TABLES)  # noqa: S608
_EMPTY = f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY"


@dataclass(frozen=True)
class Copied:
    """What a move copied: rows by table, and whether the target's own rows were replaced (``--force``)."""

    rows: dict[str, int]
    replaced: int = 0


def _read(source: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of ``source``'s tables, read from one snapshot of the file (opened read-only)."""
    connection = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        connection.execute("BEGIN")
        return {table: connection.execute(statement).fetchall() for table, statement in _SELECTS.items()}
    finally:
        connection.close()


async def move_to_postgres(source: Path, url: str, *, force: bool = False, where: str = "PostgreSQL") -> Copied:
    """Copy the SQLite database at ``source`` into the PostgreSQL database at ``url`` (migrated first).

    A target that already holds rows is refused unless ``force``, which empties it first; all or nothing.
    """
    if not source.is_file():
        raise ConfigError(f"there is no SQLite database at {source}; pass the file the bot used (its UNHOOKED_DB)")
    async with SqliteStore(source, migrate=False):  # refuses a file that is not current: migrate it first
        pass
    rows = _read(source)
    async with PostgresStore(url, where=where):  # creates or completes the schema
        pass
    try:
        connection = await asyncpg.connect(url)
    except FAULTS as error:
        raise StoreError(f"could not connect to {where}: {error or type(error).__name__}") from error
    try:
        async with connection.transaction():
            held = await connection.fetchval(_HELD)
            if held and not force:
                raise ConfigError(
                    f"{where} already holds {held} rows; move into an empty database, or pass --force to empty "
                    "it first (what it holds is lost)"
                )
            if held:
                await connection.execute(_EMPTY)
            for table, columns in TABLES.items():
                try:
                    await connection.copy_records_to_table(table, records=rows[table], columns=list(columns))
                except (TypeError, ValueError) as error:  # asyncpg cannot encode a value SQLite let in
                    raise StoreError(
                        f"could not copy into {where} (nothing was changed): a row of {table} holds a value of the "
                        f"wrong type ({error})"
                    ) from error
    except FAULTS as error:
        raise StoreError(f"could not copy into {where} (nothing was changed): {error}") from error
    finally:
        await connection.close()
    return Copied({table: len(found) for table, found in rows.items()}, held)
