"""A fresh PostgreSQL schema for a block, as a URL whose connections use it (tests and the benchmark)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def pg_schema(server: str, prefix: str = "unhooked_test") -> AsyncIterator[str]:
    """A fresh schema on ``server`` for the block, as a URL whose connections use it; dropped at the end."""
    import asyncpg  # the postgres extra

    schema = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in server else "?"
        yield f"{server}{separator}search_path={schema}"
    finally:
        await admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await admin.close()
