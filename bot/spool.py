"""An append-only JSONL file for escalations the database could not take; replayed at the next start."""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from bot.models import Escalation
from bot.store import EscalationLog
from bot.store.codec import from_json, to_json

log = logging.getLogger("unhooked.spool")


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

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def claimed(self) -> Path:
        """Where a replay moves the spool while it copies it into the database."""
        return self.path.with_name(self.path.name + ".replaying")

    def append(self, escalation: Escalation) -> None:
        """Write one escalation durably; raises ``OSError`` if even that is impossible."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
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

    def _still_the_spool(self, descriptor: int) -> bool:
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            return False
        opened = os.fstat(descriptor)
        return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)

    def waiting(self) -> bool:
        """Whether any escalation may be waiting here (a file, or a replay's claimed file, is there)."""
        return self.path.exists() or self.claimed.exists()

    def read(self) -> list[Escalation]:
        """Every escalation waiting, whether a replay has taken it already or not."""
        return _read(self.claimed) + _read(self.path)

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
            found = _read(self.claimed)
            if found:
                await store.record_escalations(found)
                log.warning("replayed %d escalations from %s into the database", len(found), self.path)
            self.claimed.unlink()
            return len(found)
        finally:
            os.close(descriptor)
