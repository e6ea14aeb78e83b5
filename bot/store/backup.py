"""Online backups of a SQLite database: one checked, self-contained, private file, moved into place when done."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from bot.errors import StoreError


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
    "escalation_reminders": "SELECT COUNT(*) FROM escalation_reminders",
    "daily_counts": "SELECT COUNT(*) FROM daily_counts",
    "updates": "SELECT COUNT(*) FROM updates",
    "message_ids": "SELECT COUNT(*) FROM message_ids",
    "told_groups": "SELECT COUNT(*) FROM told_groups",
    "job_runs": "SELECT COUNT(*) FROM job_runs",
}
"""A row count for every table of the bot's data (``_migrations`` aside: a backup lists the migrations themselves).
A migration that adds a table adds it here; a test compares this with the tables the migrations create."""


def backup_target(target: Path, overwrite: bool, live: Path | None = None) -> tuple[Path, Path]:
    """Check where a backup may go; return the target and the temporary file beside it."""
    target = Path(target)
    if live is not None and target.resolve() == live.resolve():
        raise StoreError(f"{target} is the live database itself; give the backup another name")
    if not target.parent.is_dir():
        raise StoreError(f"the folder {target.parent} does not exist; create it first or choose another path")
    if target.exists() and not overwrite:
        raise StoreError(f"{target} already exists; choose a new name, or replace it with --force")
    return target, target.with_name(f".{target.name}.partial-{os.getpid()}")


async def seal(partial: Path, target: Path, overwrite: bool) -> Backup:
    """Check the finished copy (made owner-only from the start), make it self-contained, and move it into place."""
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
