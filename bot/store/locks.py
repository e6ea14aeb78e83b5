"""Named locks for work that one process at a time may do: a run-once job, or answering one chat.

On PostgreSQL every replica on the database shares them (``postgres_locks``); on SQLite and memory there is one
process, so a lock only keeps two tasks of that process apart (``LocalLocks``).
"""

from __future__ import annotations

import hashlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable

from bot.errors import StoreError

log = logging.getLogger("unhooked.store")


def lock_key(name: str) -> int:
    """The signed 64-bit key of a named lock (PostgreSQL's advisory locks take a ``bigint``)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


class Locks(ABC):
    """Locks that are taken now or not at all (never waited for), and go with the process that held them."""

    shared: bool = False
    """Whether other processes take these locks too (replicas on one PostgreSQL database)."""

    @abstractmethod
    async def acquire(self, name: str, *, shared: bool = False) -> bool:
        """Take ``name`` if no one else holds it (``shared``: beside other shared holders); ``True`` if taken."""

    @abstractmethod
    async def release(self, name: str) -> None:
        """Give ``name`` back; harmless if it is not held."""

    @abstractmethod
    async def close(self) -> None:
        """Give every lock back; safe to call twice."""


async def run_once(locks: Locks, name: str, job: Callable[[], Awaitable[object]]) -> bool:
    """Run ``job`` unless another process runs it now; ``False`` if skipped. A lock that cannot be had skips it."""
    try:
        taken = await locks.acquire(name)
    except StoreError as error:
        log.error("could not take the lock of %s (%s); skipped this time", name, error)
        return False
    if not taken:
        return False
    try:
        await job()
    finally:
        try:
            await locks.release(name)
        except StoreError as error:
            log.error("could not give the lock of %s back (%s); it goes with the connection", name, error)
    return True


class LocalLocks(Locks):
    """The locks of a single process: SQLite and memory serve one bot process, so these keep its tasks apart."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    async def acquire(self, name: str, *, shared: bool = False) -> bool:
        if name in self._held:  # one process: shared or not, a name is held once
            return False
        self._held.add(name)
        return True

    async def release(self, name: str) -> None:
        self._held.discard(name)

    async def close(self) -> None:
        self._held.clear()
