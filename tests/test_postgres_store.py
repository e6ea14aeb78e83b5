"""What only the PostgreSQL backend does: migrations shared by replicas, refusals, the CLI on a server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys

import asyncpg
import pytest

from bot.database import Pool
from bot.errors import SchemaError, StoreError
from bot.store.locks import lock_key
from bot.store.postgres import MIGRATIONS, PostgresStore
from tests.conftest import REPO
from tests.pg_schema import pg_schema
from tests.records import escalation


def test_the_postgresql_migrations_are_files_per_part() -> None:
    assert [(m.name, m.part) for m in MIGRATIONS] == [
        ("0001_sessions", "core"),
        ("0002_escalations", "core"),
        ("0003_daily_counts", "core"),
        ("0004_job_runs", "core"),
        ("0005_escalation_reminders", "core"),
        ("0010_updates", "telegram"),
        ("0011_message_ids", "telegram"),
        ("0012_told_groups", "telegram"),
        ("0013_update_lanes", "telegram"),
    ]


async def test_replicas_starting_together_apply_each_migration_once(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    try:
        assert sorted(len(store.migrated) for store in stores) == [0, 0, 0, len(MIGRATIONS)]
        assert await stores[0].applied_migrations() == [m.name for m in MIGRATIONS]
    finally:
        await asyncio.gather(*(store.close() for store in stores))


async def test_a_database_from_a_newer_version_is_refused_and_one_behind_is_not_migrated_by_read_commands(
    pg_url: str,
) -> None:
    early = tuple(m for m in MIGRATIONS if m.part == "core")
    async with PostgresStore(pg_url, migrations=early):
        pass
    with pytest.raises(SchemaError, match="lacks migrations 0010_updates, 0011_message_ids, 0012_told_groups, 0013"):
        await PostgresStore(pg_url, migrate=False).open()
    async with PostgresStore(pg_url) as store:
        assert store.migrated == ("0010_updates", "0011_message_ids", "0012_told_groups", "0013_update_lanes")
    connection = await asyncpg.connect(pg_url)
    await connection.execute("INSERT INTO _migrations VALUES ('0099_newer', 'later')")
    await connection.close()
    for migrate in (True, False):
        with pytest.raises(SchemaError, match="has migration 0099_newer, which this version of Unhooked does not"):
            await PostgresStore(pg_url, migrate=migrate).open()


async def test_a_schema_never_migrated_is_not_taken_for_the_bots_database(pg_url: str) -> None:
    with pytest.raises(StoreError, match="is not an Unhooked database"):
        await PostgresStore(pg_url, migrate=False, where="the test schema").open()


async def test_a_server_that_does_not_answer_is_a_store_error_without_the_password() -> None:
    store = PostgresStore("postgresql://bot:hunter2@127.0.0.1:1/none", Pool(timeout=1), where="postgresql://bot@x")
    with pytest.raises(StoreError, match="could not connect to the database in postgresql://bot@x") as raised:
        await store.open()
    assert "hunter2" not in str(raised.value)


async def test_the_store_is_shared_by_replicas(pg_url: str) -> None:
    async with PostgresStore(pg_url) as one, PostgresStore(pg_url) as two:
        await one.record_escalations([escalation("a")])
        await two.record_escalations([escalation("a"), escalation("b")])
        assert [e.id for e in await one.escalations()] == ["a", "b"]
        assert await one.record_updates([(1, "{}"), (2, "{}")], 1.0) == [1, 2]
        assert await two.record_updates([(2, "{}"), (3, "{}")], 1.0) == [3]  # an update is taken once


async def test_a_lock_keeps_other_replicas_out_until_released_or_its_replica_is_gone(pg_url: str) -> None:
    async with PostgresStore(pg_url) as one, PostgresStore(pg_url) as two:
        assert (one.locks.shared, await one.locks.acquire("job")) == (True, True)
        assert await two.locks.acquire("job") is False
        assert await two.locks.acquire("job", shared=True) is False
        await one.locks.release("job")
        assert await two.locks.acquire("job") is True
        admin = await asyncpg.connect(pg_url)
        try:  # the replica's connection dies (a killed process, a lost machine): its locks go with it
            key = lock_key(f"{await admin.fetchval('SELECT current_schema()')}/job") & 0xFFFFFFFFFFFFFFFF
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
                " AND classid::bigint = $1 AND objid::bigint = $2",
                key >> 32,
                key & 0xFFFFFFFF,
            )
        finally:
            await admin.close()
        assert await one.locks.acquire("job") is True
        with contextlib.suppress(StoreError):  # it may notice now, or may have noticed already
            await two.locks.release("job")
        assert await two.locks.acquire("job") is False  # connected again, and knows its old locks are gone
        await one.locks.close()
        assert await two.locks.acquire("job") is True


async def test_deployments_in_two_schemas_of_one_database_take_their_own_locks(pg_url: str, pg_server: str) -> None:
    async with pg_schema(pg_server) as other, PostgresStore(pg_url) as one, PostgresStore(other) as two:
        assert await one.locks.acquire("telegram-bot") is True
        assert await two.locks.acquire("telegram-bot") is True  # another deployment: not the same bot
        async with PostgresStore(pg_url) as beside:
            assert await beside.locks.acquire("telegram-bot") is False  # the same schema: the same bot


async def test_shared_holders_keep_out_an_exclusive_one(pg_url: str) -> None:
    async with PostgresStore(pg_url) as one, PostgresStore(pg_url) as two, PostgresStore(pg_url) as three:
        assert await one.locks.acquire("bot", shared=True) is True
        assert await two.locks.acquire("bot", shared=True) is True
        assert await three.locks.acquire("bot") is False
        await one.locks.release("bot")
        await two.locks.release("bot")
        assert await three.locks.acquire("bot") is True
        assert await one.locks.acquire("bot", shared=True) is False


def _cli(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UNHOOKED_DB": url, "UNHOOKED_SECRET": "s" * 32}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False
    )


def test_the_operators_commands_work_on_postgresql_and_only_migrate_does_migrate(pg_url: str) -> None:
    refused = _cli("escalations", "list", url=pg_url)
    assert refused.returncode == 1 and "is not an Unhooked database" in refused.stderr
    done = _cli("migrate", url=pg_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("applied 9 migrations to postgresql://postgres@127.0.0.1:5432/test: 0001_sessions")
    chat = _cli("chat", url=pg_url)
    assert chat.returncode == 0, chat.stderr
    listed = _cli("escalations", "list", url=pg_url)
    assert listed.stdout == "no escalations\n", listed.stderr
    backup = _cli("backup", "/tmp/never.sqlite3", url=pg_url)
    assert backup.returncode == 1 and "back up PostgreSQL with pg_dump" in backup.stderr
