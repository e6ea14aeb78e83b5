"""``backup`` and ``restore``: the SQLite database copied out while the bot runs, and back in while it is stopped."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from bot import private
from bot.errors import ConfigError, SchemaError, StoreError
from bot.store.backup import Backup
from bot.store.sqlite import SqliteStore

SAME_KEY_NOTE = (
    "Restored, its sessions link to people only with the same UNHOOKED_SECRET (or the secret.key beside the database)."
)


def size_text(size: int) -> str:
    """A file size for people: bytes, KB or MB."""
    if size < 1000:
        return f"{size} bytes"
    return f"{size / 1e3:.1f} KB" if size < 1_000_000 else f"{size / 1e6:.1f} MB"


def describe(done: Backup) -> str:
    """What a copy holds: size, rows per table, its latest migration."""
    rows = ", ".join(f"{table.replace('_', ' ')} {count}" for table, count in done.rows.items())
    latest = done.migrations[-1] if done.migrations else "none"
    return f"{size_text(done.size)}, {rows}; migrations up to {latest}; integrity check ok"


@dataclass(frozen=True)
class Restored:
    """What a restore did."""

    copy: Backup
    """The database now at ``UNHOOKED_DB``, as checked before it was moved into place."""
    kept: Path | None
    """Where the database it replaced was kept, if there was one."""
    migrated: tuple[str, ...]
    """Migrations applied after the restore (a backup from an older version moves forward)."""


def _copy(source: Path, target: Path, *, read_only: bool) -> None:
    """SQLite's backup API from ``source`` to a new private file ``target`` (``source`` opened read-only if asked)."""
    uri = f"file:{quote(str(source.resolve()))}" + ("?mode=ro" if read_only else "?mode=rw")
    private.make_file(target)
    with closing(sqlite3.connect(uri, uri=True)) as reading, closing(sqlite3.connect(target)) as writing:
        reading.backup(writing)


async def restore(source: Path, db_path: Path, *, force: bool = False, now: float | None = None) -> Restored:
    """Put the backup ``source`` at ``db_path``: checked, migrated to this version, the replaced database kept.

    The bot must be stopped: a database still open elsewhere (its ``-wal`` file stays after this command
    closes it) is refused. An existing database is replaced only with ``force``, and kept as
    ``<name>.before-restore-<UTC time>`` first. The backup file itself is only read.
    """
    target = Path(db_path)
    if not source.is_file():
        raise ConfigError(f"there is no backup at {source}; give the path of a file `python -m bot backup` wrote")
    if target.exists() and not force:
        raise ConfigError(
            f"{target} already exists; stop the bot, then add --force to replace it (it is kept beside it first)"
        )
    private.make_folder(target.parent)
    staged = target.with_name(f".{target.name}.restoring-{os.getpid()}")
    try:
        try:
            _copy(source, staged, read_only=True)
            with closing(sqlite3.connect(staged)) as staged_db:
                unhooked = staged_db.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone()
        except sqlite3.Error as error:
            raise StoreError(f"{source} cannot be read as a SQLite database ({error}); is it a backup?") from None
        if unhooked is None:
            raise StoreError(f"{source} is not an Unhooked database: it has no record of migrations")
        copy = SqliteStore(staged)
        try:
            await copy.open()  # brings a backup from an older version forward
        except SchemaError:
            raise StoreError(
                f"{source} was written by a newer version of Unhooked (it has migrations this one does not know); "
                "restore it with that version or a later one"
            ) from None
        async with copy:
            migrated = copy.migrated
            kept = await _keep(target, now if now is not None else time.time())
            done = await copy.backup(target, overwrite=True)
    finally:
        for leftover in (staged, staged.with_name(staged.name + "-wal"), staged.with_name(staged.name + "-shm")):
            leftover.unlink(missing_ok=True)
    return Restored(done, kept, migrated)


async def _keep(target: Path, now: float) -> Path | None:
    """Copy the database about to be replaced beside it; refuse if another process still has it open."""
    if not target.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    kept = target.with_name(f"{target.name}.before-restore-{stamp}")
    try:
        _copy(target, kept, read_only=False)
    except sqlite3.Error as error:
        raise StoreError(f"could not keep a copy of {target} before replacing it: {error}") from None
    if target.with_name(target.name + "-wal").exists():  # the last connection to close removes it
        raise StoreError(
            f"{target} is still open in another process (its -wal file stays); stop the bot first, then restore "
            f"(the current database was copied to {kept})"
        )
    return kept
