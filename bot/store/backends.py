"""Which backend a database setting names, and the store over it."""

from __future__ import annotations

from pathlib import Path

from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore


def open_store(path: Path | str | None, *, migrate: bool = True) -> Store:
    """The store for a database setting (not opened yet): memory for ``None`` or ``:memory:``, else a SQLite file.

    ``migrate=False`` is for commands that must not change the schema: the database must exist and be current.
    """
    if path is None or str(path) == ":memory:":
        return MemoryStore()
    return SqliteStore(path, migrate=migrate)
