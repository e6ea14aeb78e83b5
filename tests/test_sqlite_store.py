"""What only the SQLite backend does: files, WAL, migrations from files, a shielded connection, backups."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.config import Settings
from bot.errors import SchemaError, StoreError
from bot.models import Level
from bot.service import running_service
from bot.store import Answered, codec
from bot.store.backup import TABLE_COUNTS
from bot.store.schema import Migration, check_migrations
from bot.store.sqlite import _ESCALATION_COLUMNS, MIGRATIONS, SqliteStore
from tests.conftest import REPO
from tests.records import escalation, session


async def test_a_backup_holds_everything_stored(tmp_path: Path, umask_022: None) -> None:
    async with SqliteStore(tmp_path / "live.sqlite3") as store:
        await store.save_sessions([session("k1"), session("k2", crisis_level=Level.CRISIS, crisis_at=150.0)])
        await store.record_escalations([escalation("b", at=200.0), escalation("a")])
        await store.acknowledge("a", "sam", 300.0)
        await store.add_counts({("2026-11-29", "messages"): 7})
        await store.record_updates([(1, '{"update_id": 1}'), (2, '{"update_id": 2}')], 400.0)
        await store.answer_updates([Answered(1, "k1", (5, 6))], 410.0)
        await store.tell_group_once("g1", 420.0)
        done = await store.backup(tmp_path / "backup.sqlite3")
        assert done.rows == {
            "sessions": 2,
            "escalations": 2,
            "escalation_reminders": 0,
            "daily_counts": 1,
            "updates": 2,
            "message_ids": 2,
            "told_groups": 1,
            "job_runs": 0,
        }
        assert done.migrations == tuple(m.name for m in MIGRATIONS)
        assert done.size == (tmp_path / "backup.sqlite3").stat().st_size > 0
        assert (tmp_path / "backup.sqlite3").stat().st_mode & 0o777 == 0o600
        async with SqliteStore(tmp_path / "backup.sqlite3") as copy:
            assert await copy.load_session("k2") == await store.load_session("k2")
            assert await copy.escalations() == await store.escalations()
            assert await copy.escalation_feed() == await store.escalation_feed()
            assert await copy.counts("2026-11-29") == {"messages": 7}
            assert await copy.unanswered_updates() == [(2, '{"update_id": 2}')]
            assert await copy.message_ids("k1") == [5, 6]
            assert await copy.tell_group_once("g1", 500.0) is False
            assert await copy.purge_updates(before=410.5) == 1  # the answered time came along too
        assert sorted(p.name for p in tmp_path.iterdir() if "backup" in p.name) == ["backup.sqlite3"]


async def test_a_backup_never_replaces_a_file_unless_asked(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "live.sqlite3") as store:
        target = tmp_path / "backup.sqlite3"
        target.write_text("an older backup")
        with pytest.raises(StoreError, match="already exists; choose a new name, or replace it with --force"):
            await store.backup(target)
        assert target.read_text() == "an older backup"
        await store.save_sessions([session()])
        assert (await store.backup(target, overwrite=True)).rows["sessions"] == 1


async def test_a_backup_into_a_missing_folder_says_so(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "live.sqlite3") as store:
        with pytest.raises(StoreError, match="does not exist; create it first"):
            await store.backup(tmp_path / "nowhere" / "backup.sqlite3")


async def test_a_backup_counts_the_rows_of_every_table_the_migrations_create(tmp_path: Path) -> None:
    async with (
        SqliteStore(tmp_path / "db.sqlite3") as store,
        store.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '_migrations'"
        ) as cursor,
    ):
        tables = {row[0] async for row in cursor}
    assert set(TABLE_COUNTS) == tables


async def test_a_write_whose_caller_gave_up_still_ends_and_the_next_write_works(tmp_path: Path) -> None:
    """A timed-out caller under another process's lock must not leave the shared connection in a transaction."""
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path) as store:
        locker = sqlite3.connect(path, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")
        release = asyncio.get_running_loop().call_later(0.5, locker.rollback)
        try:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await store.save_sessions([session("given-up")])
            await store.save_sessions([session("next")])
        finally:
            release.cancel()
            locker.close()
        assert not store.db.in_transaction
        assert await store.load_session("given-up") is not None  # it finished on its own, after the lock went
        assert await store.load_session("next") is not None


async def test_sqlite_sessions_survive_a_restart(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.save_sessions([session()])
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        assert await store.load_session("k1") == session()


async def test_migrations_are_recorded_once_in_order(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        assert await store.applied_migrations() == [m.name for m in MIGRATIONS]
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        assert await store.applied_migrations() == [m.name for m in MIGRATIONS]


async def test_escalations_from_before_the_feed_keep_their_order_and_get_positions(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    early = tuple(m for m in MIGRATIONS if m.name < "0004")
    async with SqliteStore(path, early) as store:
        await store.db.execute(
            "INSERT INTO escalations (id, at, user_key, level, category, rule, channel, resources)"
            " VALUES ('b', 2.0, 'k', 'crisis', 'suicidal', 'r', 'test', '[]'), ('a', 1.0, 'k', 'crisis', 'suicidal',"
            " 'r', 'test', '[]')"
        )
        await store.db.execute("INSERT INTO sessions (user_key, first_seen, last_seen) VALUES ('k', 1.0, 2.0)")
    async with SqliteStore(path) as store:
        assert [(position, e.id) for position, e in await store.escalation_feed()] == [(1, "b"), (2, "a")]
        assert (await store.load_session("k")).crisis_track is None
        await store.record_escalations([escalation("a"), escalation("c")])
        assert [e.id for _, e in await store.escalation_feed(2)] == ["c"]


async def test_a_purge_waits_for_a_busy_database_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path) as store:
        await store.record_escalations([escalation("old", at=1.0)])
        locker = sqlite3.connect(path)
        locker.execute("BEGIN IMMEDIATE")
        release = asyncio.get_running_loop().call_later(0.3, locker.rollback)
        try:
            assert (await store.purge(100.0)).escalations == 1
        finally:
            release.cancel()
            locker.close()


async def test_a_new_migration_is_applied_on_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path):
        pass
    extra = (*MIGRATIONS, Migration("9999_notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY);"))
    async with SqliteStore(path, extra) as store:
        assert (await store.applied_migrations())[-1] == "9999_notes"


async def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    broken = (*MIGRATIONS, Migration("9999_broken", "CREATE TABLE half (id INTEGER);\nNOT SQL;"))
    with pytest.raises(StoreError, match="open the database"):
        await SqliteStore(path, broken).open()
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert "half" not in tables


@pytest.mark.parametrize(
    ("migrations", "message"),
    [
        ((Migration("0001_a", ""), Migration("0001_a", "")), "more than once"),
        ((Migration("0002_b", ""), Migration("0001_a", "")), "order"),
        ((Migration("add things", ""),), "must look like"),
    ],
)
def test_bad_migration_lists_are_refused(migrations: tuple[Migration, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_migrations(migrations)


async def test_sqlite_uses_wal(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store, store.db.execute("PRAGMA journal_mode") as cursor:
        assert (await cursor.fetchone())[0] == "wal"


async def test_an_unopenable_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "not-a-db.sqlite3").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"not-a-db\.sqlite3"):
        await SqliteStore(tmp_path / "not-a-db.sqlite3").open()


async def test_using_a_closed_store_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not open"):
        await SqliteStore(tmp_path / "db.sqlite3").load_session("k1")


async def test_sqlite_takes_concurrent_writes_from_many_tasks(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await asyncio.gather(
            *(store.save_sessions([session(f"k{n}")]) for n in range(20)),
            *(store.answer_updates([Answered(n, "chat", (n,))], 1.0) for n in range(20)),
            *(store.record_escalations([escalation(f"e{n}")]) for n in range(20)),
        )
        assert len(await store.message_ids("chat")) == 20
        assert len(await store.escalations()) == 20


async def test_sqlite_keeps_no_update_text_once_answered(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.record_updates([(1, '{"text": "my words"}'), (2, '{"text": "other words"}')], 1.0, {1: 5, 2: 6})
        await store.answer_updates([Answered(1)], 2.0)
        query = "SELECT update_id, raw IS NULL, lane, answered_at FROM updates ORDER BY 1"
        async with store.db.execute(query) as cursor:  # nor which chat it came from
            assert await cursor.fetchall() == [(1, 1, None, 2.0), (2, 0, 6, None)]


async def test_a_mark_and_the_session_it_carries_are_written_together_or_not_at_all(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.record_updates([(1, '{"text": "my words"}')], 1.0)
        with pytest.raises(StoreError, match="NOT NULL"):
            await store.answer_updates([Answered(1, "k1", (5,), session("k1", first_seen=None))], 2.0)
        assert await store.unanswered_updates() == [(1, '{"text": "my words"}')]
        assert (await store.load_session("k1"), await store.message_ids("k1")) == (None, [])


def test_the_shipped_migrations_keep_the_names_existing_databases_recorded() -> None:
    assert [(m.name, m.part) for m in MIGRATIONS] == [
        ("0001_sessions", "core"),
        ("0002_escalations", "core"),
        ("0003_daily_counts", "core"),
        ("0004_escalation_seq", "core"),
        ("0005_session_crisis_track", "core"),
        ("0006_job_runs", "core"),
        ("0007_escalation_reminders", "core"),
        ("0010_updates", "telegram"),
        ("0011_message_ids", "telegram"),
        ("0012_told_groups", "telegram"),
        ("0013_update_lanes", "telegram"),
    ]


def test_a_migration_file_splits_into_its_statements_and_refuses_an_unfinished_one() -> None:
    sql = "-- a comment; not a statement\nCREATE TABLE a (x TEXT DEFAULT ';');\nCREATE INDEX a_x ON a (x);\n-- end\n"
    assert Migration("0001_a", sql).statements() == [
        "-- a comment; not a statement\nCREATE TABLE a (x TEXT DEFAULT ';');",
        "CREATE INDEX a_x ON a (x);",
    ]
    with pytest.raises(ValueError, match="unfinished statement"):
        Migration("0001_a", "CREATE TABLE a (x TEXT)\n").statements()


def test_the_escalation_columns_are_the_codecs_fields() -> None:
    assert tuple(_ESCALATION_COLUMNS.split(", ")) == codec.FIELDS


async def test_a_database_with_a_migration_this_version_does_not_know_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path):
        pass
    sqlite3.connect(path, isolation_level=None).execute(
        "INSERT INTO _migrations (name, applied_at) VALUES ('0099_from_the_future', 'later')"
    )
    for migrate in (True, False):
        with pytest.raises(StoreError, match="has migration 0099_from_the_future, which this version of Unhooked"):
            await SqliteStore(path, migrate=migrate).open()


async def test_opening_without_migrating_refuses_a_database_behind_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    early = tuple(m for m in MIGRATIONS if m.part == "core")
    async with SqliteStore(path, early):
        pass
    with pytest.raises(StoreError, match=r"lacks migrations 0010_updates, .*run `python -m bot migrate`"):
        await SqliteStore(path, migrate=False).open()
    applied = [row[0] for row in sqlite3.connect(path).execute("SELECT name FROM _migrations ORDER BY name")]
    assert applied == [m.name for m in early]


async def test_the_bot_does_not_start_on_a_database_from_a_newer_version(tmp_path: Path) -> None:
    """An unusable file falls back to memory; another version's database stops the start instead."""
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path):
        pass
    sqlite3.connect(path, isolation_level=None).execute("INSERT INTO _migrations VALUES ('0099_newer', 'later')")
    with pytest.raises(SchemaError, match="has migration 0099_newer"):
        async with running_service(Settings(db_path=path, content_dir=REPO, secret="s" * 32)):
            pass
