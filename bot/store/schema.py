"""Migrations: named, ordered SQL files per backend and part, recorded in ``_migrations``, checked before use."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from importlib import resources

from bot.errors import SchemaError

PARTS = ("core", "telegram")
"""Who owns a migration's tables: the core (sessions, escalations, counts) or the Telegram adapter (its journal)."""

_NAME = re.compile(r"^\d{4}_[a-z0-9_]+$")


@dataclass(frozen=True)
class Migration:
    """A named schema change; applied once, in order, and recorded in ``_migrations``."""

    name: str
    sql: str
    part: str = "core"

    def statements(self) -> list[str]:
        """The migration's statements, one by one (SQLite runs one statement per call)."""
        found, pending = [], ""
        for line in self.sql.splitlines(keepends=True):
            pending += line
            if sqlite3.complete_statement(pending):
                found.append(pending.strip())
                pending = ""
        if any(line.strip() and not line.strip().startswith("--") for line in pending.splitlines()):
            raise ValueError(f"migration {self.name} ends in an unfinished statement (a missing ';'?)")
        return found


def load_migrations(backend: str) -> tuple[Migration, ...]:
    """The migrations shipped for ``backend`` (``sqlite`` or ``postgres``), every part, in order of their names."""
    folder = resources.files("bot.store").joinpath("migrations", backend)
    found = [
        Migration(entry.name.removesuffix(".sql"), entry.read_text(encoding="utf-8"), part)
        for part in PARTS
        for entry in folder.joinpath(part).iterdir()
        if entry.name.endswith(".sql")
    ]
    found.sort(key=lambda migration: migration.name)
    check_migrations(tuple(found))
    return tuple(found)


def check_migrations(migrations: tuple[Migration, ...]) -> None:
    """Refuse badly named, duplicated or out-of-order migrations."""
    names = [migration.name for migration in migrations]
    for name in names:
        if not _NAME.match(name):
            raise ValueError(f"migration name {name!r} must look like '0001_what_it_does'")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"migration {duplicates[0]!r} is registered more than once")
    if names != sorted(names):
        raise ValueError("migrations must be listed in the order of their numbers")


def pending(migrations: tuple[Migration, ...], applied: set[str], where: str) -> list[Migration]:
    """The migrations not applied yet; refuses a database that has one this version does not know."""
    unknown = sorted(applied - {migration.name for migration in migrations})
    if unknown:
        raise SchemaError(
            f"{where} has migration {unknown[-1]}, which this version of Unhooked does not know: a newer version "
            "wrote it. Run that newer version, or restore a backup taken before it"
        )
    return [migration for migration in migrations if migration.name not in applied]


def require_current(migrations: tuple[Migration, ...], applied: set[str], where: str) -> None:
    """Refuse a database that is not exactly at this version's migrations (read-only commands never migrate)."""
    missing = pending(migrations, applied, where)
    if missing:
        raise SchemaError(
            f"{where} lacks migrations {', '.join(m.name for m in missing)}; this command never changes the schema: "
            "run `python -m bot migrate` (or start the bot once), then try again"
        )
