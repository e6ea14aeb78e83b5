"""The store over the database a setting names (memory, a SQLite file, or a PostgreSQL server)."""

from __future__ import annotations

from bot.database import Database
from bot.errors import ConfigError
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore


def open_store(database: Database, *, migrate: bool = True) -> Store:
    """The store for ``database``, not opened yet.

    ``migrate=False`` is for commands that must not change the schema: the database must exist and be current.
    """
    if database.url is not None:
        try:
            from bot.store.postgres import PostgresStore
        except ImportError:
            raise ConfigError(
                "UNHOOKED_DB names a PostgreSQL server, but asyncpg is not installed: "
                "install unhooked[postgres] (pip install 'unhooked[postgres]'), or set UNHOOKED_DB to a SQLite file"
            ) from None
        return PostgresStore(database.url, database.pool, migrate=migrate, where=database.where)
    if database.in_memory:
        return MemoryStore()
    return SqliteStore(database.path, migrate=migrate)
