"""Append-only JSONL files for escalations the database could not take; replayed once it takes them.

There are several places (``Spools``): the database's folder first, then folders on other filesystems
(``UNHOOKED_SPOOL_DIR``, by default a private folder in the runtime directory or ``/dev/shm``), so that the disk
failing under the database does not take the spool with it. An escalation goes to the first place that takes it.
A line may also say that an escalation's operators' alert went out (the same record with ``alerted_at``): a
replay keeps that mark, so an escalation alerted while spooled is not alerted again after the replay.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import logging
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from bot.errors import ConfigError
from bot.models import Escalation
from bot.store import EscalationLog
from bot.store.codec import from_json, to_json

log = logging.getLogger("unhooked.spool")

SPOOL_NAME = "escalations.spool.jsonl"
RUNTIME_PLACES = ("RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR")
"""Environment variables naming a runtime folder (systemd's ``RuntimeDirectory=``, a login session's)."""


def merged(records: Iterable[Escalation]) -> list[Escalation]:
    """One record per escalation, in the order first seen, with the latest alert mark any of its lines carries."""
    found: dict[str, Escalation] = {}
    for record in records:
        known = found.get(record.id)
        if known is None:
            found[record.id] = record
        elif record.alerted_at is not None and (known.alerted_at or 0.0) < record.alerted_at:
            found[record.id] = dataclasses.replace(known, alerted_at=record.alerted_at)
    return list(found.values())


def private_folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot hold a private spool (a link, another owner's, writable by others); ``None`` if it can."""
    try:
        status = os.lstat(folder)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(status.st_mode) or not stat.S_ISDIR(status.st_mode):
        return f"{folder} is not a folder (a link or a file is in its place)"
    if status.st_uid != os.geteuid():
        return f"{folder} belongs to another user (uid {status.st_uid})"
    if status.st_mode & 0o022:
        return f"{folder} can be written by other users (mode {stat.S_IMODE(status.st_mode):o}); make it 0700"
    return None


def _existing(path: Path) -> Path:
    """``path``, or its nearest folder that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def default_spool_dirs(db_path: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
    """The spool's default second place: a private folder on another filesystem than the database's, if any.

    The first runtime folder (``$RUNTIME_DIRECTORY``, ``$XDG_RUNTIME_DIR``, ``/run/user/<uid>``, ``/dev/shm``) on
    another device than the database's folder, which the bot may write; the folder in it is named by a hash of the
    database's path, so two bots never share one.
    """
    database = db_path.resolve()
    device = os.stat(_existing(database.parent)).st_dev
    runtime = [env.get(name, "").split(":")[0] for name in RUNTIME_PLACES]
    candidates = [*runtime, f"/run/user/{os.geteuid()}", "/dev/shm"]  # noqa: S108 (a private folder inside it)
    for candidate in filter(None, candidates):
        try:
            status = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISDIR(status.st_mode) and status.st_dev != device and os.access(candidate, os.W_OK | os.X_OK):
            return (Path(candidate) / f"unhooked-{hashlib.sha256(str(database).encode()).hexdigest()[:12]}",)
    return ()


def spool_dirs(env: Mapping[str, str], db_path: Path) -> tuple[Path, ...]:
    """``UNHOOKED_SPOOL_DIR``: folders separated by ``:``; unset, ``default_spool_dirs``."""
    raw = env.get("UNHOOKED_SPOOL_DIR", "").strip()
    if not raw:
        return default_spool_dirs(db_path, env)
    folders = tuple(Path(part.strip()) for part in raw.split(":") if part.strip())
    for folder in folders:
        problem = None if folder.is_absolute() else f"{folder} is not an absolute path"
        problem = problem or private_folder_problem(folder)
        if problem is not None:
            raise ConfigError(
                f"UNHOOKED_SPOOL_DIR cannot hold the spool: {problem}; set it to absolute folders of the bot's own "
                "user on another disk than the database (each is created 0700 if missing), separated by ':', "
                "e.g. UNHOOKED_SPOOL_DIR=/run/unhooked"
            )
    return folders


def _read(path: Path) -> list[Escalation]:
    """Every escalation in one spool file; a torn or foreign line is skipped and logged."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    found = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            found.append(from_json(line))
        except ValueError:
            log.error("%s:%d is not an escalation record; skipped", path, number)
    return found


class Spool:
    """Escalations written line by line, flushed and fsynced, so a crash loses none of them.

    Appends and replays may run in different processes (the bot, and a second bot start such as
    ``chat`` on the same database): a replay first renames the file to ``<name>.replaying``, so new
    appends start a fresh file, and both sides hold an exclusive ``flock`` while they touch a file,
    so a record being written while the file is taken is either read by the replay or rewritten
    to the fresh file, never lost.
    """

    def __init__(self, path: Path, *, private: bool = False) -> None:
        self.path = path
        self.private = private
        """The folder is created 0700 and refused unless it is this user's own (a place under ``/dev/shm``)."""

    @property
    def claimed(self) -> Path:
        """Where a replay moves the spool while it copies it into the database."""
        return self.path.with_name(self.path.name + ".replaying")

    def append(self, escalation: Escalation) -> None:
        """Write one escalation durably; raises ``OSError`` if even that is impossible."""
        self._make_folder()
        line = (to_json(escalation) + "\n").encode()
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                if not self._still_the_spool(descriptor):
                    continue  # a replay took this file while we waited; write to the fresh one
                size = os.fstat(descriptor).st_size
                if size and os.pread(descriptor, 1, size - 1) != b"\n":
                    line = b"\n" + line  # a crash tore the last line: keep this record on a line of its own
                os.write(descriptor, line)
                os.fsync(descriptor)
                return
            finally:
                os.close(descriptor)

    def _make_folder(self) -> None:
        folder = self.path.parent
        if not self.private:
            folder.mkdir(parents=True, exist_ok=True)
            return
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700, parents=True)
        problem = private_folder_problem(folder)
        if problem is not None:
            raise OSError(errno.EPERM, f"{problem}: not spooling there")

    def _still_the_spool(self, descriptor: int) -> bool:
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            return False
        opened = os.fstat(descriptor)
        return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)

    def waiting(self) -> bool:
        """Whether any escalation may be waiting here (a file, or a replay's claimed file, is there)."""
        return self.path.is_file() or self.claimed.is_file()

    def read(self) -> list[Escalation]:
        """Every escalation waiting, whether a replay has taken it already or not."""
        return merged(_read(self.claimed) + _read(self.path))

    async def replay(self, store: EscalationLog) -> int:
        """Move every spooled escalation into the store, then remove what was moved; return how many.

        If the store refuses, the records stay in ``claimed`` and the next replay takes them first.
        """
        moved = await self._drain(store) if self.claimed.exists() else 0
        try:
            os.replace(self.path, self.claimed)
        except FileNotFoundError:
            return moved
        return moved + await self._drain(store)

    async def _drain(self, store: EscalationLog) -> int:
        descriptor = os.open(self.claimed, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # waits for an append under way to this file
            found = merged(_read(self.claimed))
            if found:
                await store.record_escalations(found)
                for escalation in found:
                    if escalation.alerted_at is not None:  # also when the database had it already
                        await store.mark_alerted(escalation.id, escalation.alerted_at)
                log.warning("replayed %d escalations from %s into the database", len(found), self.path)
            self.claimed.unlink()
            return len(found)
        finally:
            os.close(descriptor)


class Spools:
    """The spool's places, tried in order: an escalation goes to the first that takes it; all are read and replayed."""

    def __init__(self, paths: Sequence[Path]) -> None:
        if not paths:
            raise ValueError("a spool needs at least one place")
        self.places = tuple(Spool(path, private=number > 0) for number, path in enumerate(paths))

    @property
    def where(self) -> str:
        """The places, for messages."""
        return ", ".join(str(place.path) for place in self.places)

    def append(self, escalation: Escalation) -> Path:
        """Write one escalation durably to the first place that takes it, and say where; ``OSError`` if none does."""
        refused = []
        for place in self.places:
            try:
                place.append(escalation)
            except OSError as error:
                refused.append(f"{place.path}: {error.strerror or error}")
                continue
            if refused:
                log.error("spooled escalation %s to %s, refused by %s", escalation.id, place.path, "; ".join(refused))
            return place.path
        raise OSError(errno.EIO, "no spool place took it (" + "; ".join(refused) + ")")

    def waiting(self) -> bool:
        """Whether any escalation may be waiting in any place."""
        return any(place.waiting() for place in self.places)

    def read(self) -> list[Escalation]:
        """Every escalation waiting in any place that can be read, once each."""
        found = []
        for place in self.places:
            try:
                found += place.read()
            except OSError as error:
                log.error("cannot read the spool at %s: %s", place.path, error.strerror or error)
        return merged(found)

    async def replay(self, store: EscalationLog) -> int:
        """Move every place's escalations into the store; return how many moved.

        A place that cannot be read is left for the next replay (``OSError`` once the others are done); if the
        store refuses, ``StoreError`` stops the replay with everything still spooled.
        """
        moved, unreadable = 0, []
        for place in self.places:
            if not place.waiting():
                continue
            try:
                moved += await place.replay(store)
            except OSError as error:
                unreadable.append(f"{place.path}: {error.strerror or error}")
        if unreadable:
            raise OSError(errno.EIO, "; ".join(unreadable))
        return moved
