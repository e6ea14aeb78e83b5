"""An append-only JSONL file for escalations the database could not take; replayed at the next start."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path

from bot.models import Escalation, Level
from bot.store import Store

log = logging.getLogger("unhooked.spool")


def to_json(escalation: Escalation) -> str:
    """One escalation as one line of JSON."""
    record = dataclasses.asdict(escalation)
    record["level"] = escalation.level.value
    record["resources"] = list(escalation.resources)
    return json.dumps(record, sort_keys=True)


def from_json(line: str) -> Escalation:
    """The escalation written by ``to_json``; raises ``ValueError`` on anything else."""
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError("not an object")
    try:
        record["level"] = Level(record["level"])
        record["resources"] = tuple(record["resources"])
        return Escalation(**record)
    except (KeyError, TypeError) as error:
        raise ValueError(str(error)) from error


class Spool:
    """Escalations written line by line, flushed and fsynced, so a crash loses none of them."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, escalation: Escalation) -> None:
        """Write one escalation durably; raises ``OSError`` if even that is impossible."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, (to_json(escalation) + "\n").encode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def read(self) -> list[Escalation]:
        """Every escalation in the spool; a torn or foreign line is skipped and logged."""
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        found = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                found.append(from_json(line))
            except ValueError:
                log.error("%s:%d is not an escalation record; skipped", self.path, number)
        return found

    async def replay(self, store: Store) -> int:
        """Move every spooled escalation into the store, then empty the spool; return how many."""
        found = self.read()
        if found:
            await store.record_escalations(found)
            log.warning("replayed %d escalations from %s into the database", len(found), self.path)
        self.path.unlink(missing_ok=True)
        return len(found)
