"""One contract for every store, plus what only the SQLite store does (migrations, WAL, files)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.errors import StoreError
from bot.models import Level, Session
from bot.store import MIGRATIONS, Migration, SqliteStore, Store, check_migrations


def session(key: str = "k1", **changes) -> Session:
    base = Session(user_key=key, first_seen=100.0, last_seen=200.0, turns=3, last_intent="miss_them")
    base.shown = {"miss_them.hooked", "no_contact.purpose"}
    for name, value in changes.items():
        setattr(base, name, value)
    return base


class TestStoreContract:
    """Every store behaves the same; the ``store`` fixture runs each test on each implementation."""

    async def test_unknown_person_has_no_session(self, store: Store) -> None:
        assert await store.load_session("nobody") is None

    async def test_a_saved_session_reads_back_equal(self, store: Store) -> None:
        saved = session(crisis_level=Level.IMMINENT, crisis_at=150.0)
        await store.save_sessions([saved])
        assert await store.load_session("k1") == saved

    async def test_saving_again_replaces(self, store: Store) -> None:
        await store.save_sessions([session()])
        await store.save_sessions([session(turns=4, last_intent=None, shown=set())])
        loaded = await store.load_session("k1")
        assert (loaded.turns, loaded.last_intent, loaded.shown) == (4, None, set())

    async def test_a_batch_saves_every_session(self, store: Store) -> None:
        await store.save_sessions([session(f"k{n}") for n in range(50)])
        assert all([await store.load_session(f"k{n}") for n in range(50)])

    async def test_changing_a_loaded_session_does_not_change_the_store(self, store: Store) -> None:
        await store.save_sessions([session()])
        loaded = await store.load_session("k1")
        loaded.shown.add("changed")
        assert "changed" not in (await store.load_session("k1")).shown

    async def test_forget_removes_one_person_only(self, store: Store) -> None:
        await store.save_sessions([session("a"), session("b")])
        assert await store.forget("a") == 1
        assert await store.forget("a") == 0
        assert await store.load_session("a") is None
        assert await store.load_session("b") is not None

    async def test_close_twice_is_harmless(self, store: Store) -> None:
        await store.close()
        await store.close()


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


async def test_a_new_migration_is_applied_on_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path):
        pass
    extra = (*MIGRATIONS, Migration("9999_notes", ("CREATE TABLE notes (id INTEGER PRIMARY KEY)",)))
    async with SqliteStore(path, extra) as store:
        assert (await store.applied_migrations())[-1] == "9999_notes"


async def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    broken = (*MIGRATIONS, Migration("9999_broken", ("CREATE TABLE half (id INTEGER)", "NOT SQL")))
    with pytest.raises(StoreError, match="open the database"):
        await SqliteStore(path, broken).open()
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert "half" not in tables


@pytest.mark.parametrize(
    ("migrations", "message"),
    [
        ((Migration("0001_a", ()), Migration("0001_a", ())), "more than once"),
        ((Migration("0002_b", ()), Migration("0001_a", ())), "order"),
        ((Migration("add things", ()),), "must look like"),
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
