"""The SQLite database as a file: never made afresh over lost data, and watched while the bot runs.

A file that holds the bot's data leaves a mark beside it (``<name>.created``, written at the first open). If the
database file is missing while that mark, or its ``-wal``/``-shm`` files, are there, the database was deleted or
its volume is not mounted: opening it refuses to create an empty one in its place (``DatabaseFault``). While the
bot runs, ``DatabaseFile.changed`` compares the file at the path with the one opened (device and inode: a stat),
and ``DatabaseFile.probe`` reads its schema through a fresh connection, whose empty page cache reads the disk.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

from bot.errors import CORRUPT, MISSING, REPLACED, DatabaseFault

log = logging.getLogger("unhooked.store")

MARKER_SUFFIX = ".created"
MARKER_TEXT = (
    "This file says that an Unhooked database was created beside it, on {when} UTC. While it is here, the bot will\n"
    "not create an empty database in place of a missing one: restore a backup (python -m bot restore BACKUP),\n"
    "or, if a fresh start is intended, run python -m bot start-afresh.\n"
)
PROBE_TIMEOUT = 1.0
"""Seconds the probe's fresh connection waits for a lock (it only reads, so it rarely waits at all)."""


def marker_of(path: Path) -> Path:
    """The file that says a database was created at ``path``."""
    return path.with_name(path.name + MARKER_SUFFIX)


def companions(path: Path) -> tuple[Path, Path]:
    """The database's ``-wal`` and ``-shm`` files (there while it is open, and after a crash)."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


SHM_DMS_BYTE = 128
"""The byte of the ``-shm`` file every open connection holds a shared lock on (SQLite's unix VFS, ``UNIX_SHM_DMS``)."""


def in_use(path: Path) -> bool:
    """Whether another process has the database open: a connection in WAL mode locks a byte of its ``-shm`` file."""
    try:
        descriptor = os.open(companions(path)[1], os.O_RDWR)
    except OSError:  # none, so no connection; or not ours to lock, so not ours to tell
        return False
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SHM_DMS_BYTE)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # also lets go of the lock just taken
    return False


def is_corruption(error: BaseException) -> bool:
    """Whether SQLite said the file is damaged or not a database (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def corrupt(path: Path, error: BaseException) -> DatabaseFault:
    """The fault of a database SQLite found damaged."""
    return DatabaseFault(CORRUPT, f"the database file {path} is corrupt ({error})")


class DatabaseFile:
    """One SQLite database file: checked before it is created, remembered once opened, and watched."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity: tuple[int, int] | None = None

    def evidence(self) -> list[str]:
        """What beside a missing database file shows that it held data (the mark, its WAL files); empty if none."""
        if self.path.exists():
            return []
        return [found.name for found in (marker_of(self.path), *companions(self.path)) if found.exists()]

    def refuse_fresh(self) -> None:
        """Raise ``DatabaseFault`` if the database file is missing but the folder shows it held data."""
        found = self.evidence()
        if found:
            raise DatabaseFault(
                MISSING, f"the database {self.path} is missing, but {', '.join(found)} show it held data"
            )

    def opened(self) -> None:
        """Remember the file just opened, and leave the mark that a database is here."""
        status = os.stat(self.path)
        self._identity = (status.st_dev, status.st_ino)
        try:
            descriptor = os.open(marker_of(self.path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return
        except OSError as error:  # a read-only folder: the database still works, its loss is only harder to see
            log.warning("could not leave %s beside the database: %s", marker_of(self.path).name, error.strerror)
            return
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(MARKER_TEXT.format(when=time.strftime("%Y-%m-%d %H:%M", time.gmtime())))

    def changed(self) -> DatabaseFault | None:
        """Whether the file at the path is gone or another one than was opened (a stat: microseconds)."""
        if self._identity is None:
            return None
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return DatabaseFault(MISSING, f"the database file {self.path} was deleted while the bot ran")
        except OSError:
            return None  # unreadable for a moment (a remount): the probe and the writes will say more
        if (status.st_dev, status.st_ino) != self._identity:
            return DatabaseFault(
                REPLACED, f"the database file {self.path} was replaced by another file while the bot ran"
            )
        return None

    def probe(self) -> DatabaseFault | None:
        """Read the schema through a fresh connection (blocking: run it in a thread); a fault if it is corrupt."""
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            with closing(sqlite3.connect(uri, uri=True, timeout=PROBE_TIMEOUT)) as db:
                found = db.execute("SELECT count(*) FROM sqlite_master WHERE name = '_migrations'").fetchone()
        except sqlite3.DatabaseError as error:
            return corrupt(self.path, error) if is_corruption(error) else None
        if not found or not found[0]:
            return DatabaseFault(CORRUPT, f"the database file {self.path} has lost its tables (emptied or truncated?)")
        return None
