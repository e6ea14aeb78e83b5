"""The bot's own files and folders: created readable by their owner only, and made so when found otherwise."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("unhooked.files")

FILE_MODE = 0o600
FOLDER_MODE = 0o700
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database; it creates them with the database file's own permissions."""


def make_folder(folder: Path) -> None:
    """Create ``folder`` and its missing parents for the owner only; a folder already there is left as it is."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, FOLDER_MODE)
        except FileExistsError:
            continue
        os.chmod(made, FOLDER_MODE)  # whatever the umask took away or left


def make_file(path: Path) -> None:
    """Create an empty file for the owner only if there is none; one already there is made owner-only."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        restrict(path)
    else:
        os.chmod(path, FILE_MODE)


def restrict(path: Path) -> None:
    """Take group and others' access away from an existing file; a file this user may not change is logged."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    except FileNotFoundError:
        return
    except PermissionError as error:
        log.warning("%s is readable by others and this user cannot change that (%s)", path, error.strerror)


def make_database(path: Path) -> None:
    """A SQLite database file, its folder and its companions (``-wal``, ``-shm``) for the owner only."""
    make_folder(path.parent)
    make_file(path)
    for companion in SQLITE_COMPANIONS:
        restrict(path.with_name(path.name + companion))
