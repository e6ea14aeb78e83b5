"""Named locks shared by every replica on one PostgreSQL database: session advisory locks on a connection of their own.

A lock's key is its name within the connection's schema (``current_schema()``): deployments in two schemas of one
database do not take each other's locks. A lock lives as long as the connection that took it: a replica that is
killed (its socket closes) or cut off (TCP keepalives, ``KEEPALIVE``) loses its locks on the server at once, and
another replica can take its work.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from bot.errors import StoreError
from bot.store.locks import Locks, lock_key

FAULTS = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError, TimeoutError)
"""What asyncpg raises when the server or the connection fails: a connection the server cut while a statement
was on its way answers ``InternalClientError`` ("another operation is in progress"), which is that too."""

KEEPALIVE = {"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3"}
"""The server drops the connection (and its locks) of a replica whose machine vanished within about 11 seconds."""


class PostgresLocks(Locks):
    """Advisory locks held on one connection; a process never holds a name twice (the server's are re-entrant)."""

    shared = True

    def __init__(self, url: str, timeout: float, where: str = "PostgreSQL") -> None:
        self._url = url
        self._timeout = timeout
        self._where = where
        self._connection: asyncpg.Connection | None = None
        self._held: dict[str, bool] = {}
        """Names held by this process, and whether shared."""
        self._schema = ""
        """The connection's schema, which every key is taken within."""
        self._one_at_a_time = asyncio.Lock()
        """asyncpg runs one statement at a time on a connection."""

    @asynccontextmanager
    async def _session(self, doing: str) -> AsyncIterator[asyncpg.Connection]:
        async with self._one_at_a_time:
            try:
                if self._connection is None or self._connection.is_closed():
                    self._held.clear()  # a lost connection took its locks with it
                    self._connection = await asyncpg.connect(
                        self._url, timeout=self._timeout, command_timeout=self._timeout, server_settings=KEEPALIVE
                    )
                    self._schema = str(await self._connection.fetchval("SELECT current_schema()"))
                yield self._connection
            except FAULTS as error:
                self._held.clear()  # whatever happened to the connection, the next statement starts a new one
                if self._connection is not None:
                    self._connection.terminate()
                    self._connection = None
                raise StoreError(f"could not {doing} in {self._where}: {error or type(error).__name__}") from error

    def _key(self, name: str) -> int:
        return lock_key(f"{self._schema}/{name}")

    async def acquire(self, name: str, *, shared: bool = False) -> bool:
        if name in self._held:
            return False
        function = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
        async with self._session("take a lock") as connection:
            taken = bool(await connection.fetchval(f"SELECT {function}($1)", self._key(name)))
            if taken:
                self._held[name] = shared
        return taken

    async def release(self, name: str) -> None:
        if name not in self._held:
            return
        async with self._session("give a lock back") as connection:
            shared = self._held.pop(name, None)
            if shared is not None:
                function = "pg_advisory_unlock_shared" if shared else "pg_advisory_unlock"
                await connection.fetchval(f"SELECT {function}($1)", self._key(name))

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        self._held.clear()
        if connection is not None and not connection.is_closed():
            await connection.close()
