"""One contract for every store, plus what only the SQLite store does (migrations, WAL, files)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.errors import StoreError
from bot.models import Escalation, Level, Session, Track
from bot.store import (
    MIGRATIONS,
    TABLE_COUNTS,
    Answered,
    MemoryStore,
    Migration,
    Purged,
    SqliteStore,
    Store,
    check_migrations,
)


def session(key: str = "k1", **changes) -> Session:
    base = Session(user_key=key, first_seen=100.0, last_seen=200.0, turns=3, last_intent="miss_them")
    base.shown = {"miss_them.hooked", "no_contact.purpose"}
    for name, value in changes.items():
        setattr(base, name, value)
    return base


def escalation(escalation_id: str, **changes) -> Escalation:
    fields = {
        "id": escalation_id,
        "at": 100.0,
        "user_key": "k1",
        "level": Level.CRISIS,
        "category": "suicidal",
        "rule": "suicide.word",
        "channel": "test",
        "resources": ("lifeline", "outside_us"),
    }
    return Escalation(**{**fields, **changes})


class TestStoreContract:
    """Every store behaves the same; the ``store`` fixture runs each test on each implementation."""

    async def test_unknown_person_has_no_session(self, store: Store) -> None:
        assert await store.load_session("nobody") is None

    async def test_a_saved_session_reads_back_equal(self, store: Store) -> None:
        saved = session(crisis_level=Level.IMMINENT, crisis_at=150.0, crisis_track=Track.OTHERS)
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

    async def test_escalations_read_back_in_time_order(self, store: Store) -> None:
        await store.record_escalations([escalation("b", at=20.0), escalation("a", at=10.0, level=Level.IMMINENT)])
        assert [e.id for e in await store.escalations()] == ["a", "b"]
        assert await store.escalations() == [escalation("a", at=10.0, level=Level.IMMINENT), escalation("b", at=20.0)]

    async def test_recording_the_same_escalation_twice_keeps_one(self, store: Store) -> None:
        await store.record_escalations([escalation("a")])
        await store.record_escalations([escalation("a", category="changed")])
        assert [e.category for e in await store.escalations()] == ["suicidal"]

    async def test_escalations_filter_by_time_level_and_acknowledgement(self, store: Store) -> None:
        await store.record_escalations(
            [escalation("a", at=10.0), escalation("b", at=20.0, level=Level.IMMINENT), escalation("c", at=30.0)]
        )
        await store.acknowledge("c", "sam", 31.0)
        assert [e.id for e in await store.escalations(since=20.0)] == ["b", "c"]
        assert [e.id for e in await store.escalations(level=Level.IMMINENT)] == ["b"]
        assert [e.id for e in await store.escalations(unacked=True)] == ["a", "b"]
        assert [e.id for e in await store.escalations(limit=1)] == ["a"]

    async def test_the_first_acknowledgement_stays(self, store: Store) -> None:
        await store.record_escalations([escalation("a")])
        first = await store.acknowledge("a", "sam", 50.0)
        again = await store.acknowledge("a", "kim", 60.0)
        assert (first.acked_by, first.acked_at) == ("sam", 50.0)
        assert again == first
        assert await store.acknowledge("nope", "sam", 50.0) is None

    async def test_alerts_owed_until_marked(self, store: Store) -> None:
        await store.record_escalations([escalation("a", at=1.0), escalation("b", at=2.0)])
        await store.mark_alerted("a", 5.0)
        assert [e.id for e in await store.unalerted()] == ["b"]
        assert (await store.escalations())[0].alerted_at == 5.0

    async def test_forget_removes_the_persons_escalations(self, store: Store) -> None:
        await store.save_sessions([session("k1")])
        await store.record_escalations([escalation("a", user_key="k1"), escalation("b", user_key="k2")])
        assert await store.forget("k1") == 2
        assert [e.id for e in await store.escalations()] == ["b"]

    async def test_journalled_updates_are_new_once_and_unanswered_until_answered(self, store: Store) -> None:
        assert await store.record_updates([(3, '{"update_id": 3}'), (1, '{"update_id": 1}')], 10.0) == [3, 1]
        assert await store.record_updates([(1, "again"), (2, '{"update_id": 2}')], 11.0) == [2]
        assert await store.unanswered_updates() == [
            (1, '{"update_id": 1}'),
            (2, '{"update_id": 2}'),
            (3, '{"update_id": 3}'),
        ]
        await store.answer_updates([Answered(2)], 12.0)
        assert [update_id for update_id, _ in await store.unanswered_updates()] == [1, 3]
        assert await store.record_updates([(2, '{"update_id": 2}')], 13.0) == []
        assert await store.record_updates([], 13.0) == []

    async def test_answered_update_ids_are_purged_after_a_while(self, store: Store) -> None:
        await store.record_updates([(1, "{}"), (2, "{}"), (3, "{}")], 10.0)
        await store.answer_updates([Answered(1)], 20.0)
        await store.answer_updates([Answered(2)], 40.0)
        assert await store.purge_updates(before=30.0) == 1
        assert await store.record_updates([(1, "{}"), (2, "{}")], 50.0) == [1]
        assert [update_id for update_id, _ in await store.unanswered_updates()] == [1, 3]

    async def test_message_ids_are_remembered_per_chat_when_an_update_is_answered(self, store: Store) -> None:
        await store.record_updates([(1, "{}")], 10.0)
        await store.answer_updates([Answered(1, "chat-a", (5, 6))], 10.0)
        await store.answer_updates([Answered(2, "chat-a", (7, 6))], 20.0)
        await store.answer_updates([Answered(3, "chat-b", (5,))], 20.0)
        assert await store.message_ids("chat-a") == [5, 6, 7]
        assert await store.purge_message_ids(before=15.0) == 2
        assert await store.message_ids("chat-a") == [7]
        assert await store.drop_message_ids("chat-a") == 1
        assert await store.message_ids("chat-a") == []
        assert await store.message_ids("chat-b") == [5]

    async def test_forget_removes_the_persons_message_ids(self, store: Store) -> None:
        await store.answer_updates([Answered(1, "k1", (5, 6))], 10.0)
        await store.answer_updates([Answered(2, "k2", (5,))], 10.0)
        assert await store.forget("k1") == 2
        assert await store.message_ids("k1") == []
        assert await store.message_ids("k2") == [5]

    async def test_a_batch_of_answered_updates_is_marked_in_one_go(self, store: Store) -> None:
        await store.record_updates([(1, "{}"), (2, "{}"), (3, "{}")], 10.0)
        await store.answer_updates([Answered(1, "chat-a", (5,)), Answered(3, "chat-b", (6, 7)), Answered(99)], 20.0)
        assert [update_id for update_id, _ in await store.unanswered_updates()] == [2]
        assert (await store.message_ids("chat-a"), await store.message_ids("chat-b")) == ([5], [6, 7])
        await store.answer_updates([Answered(1)], 30.0)  # marking again changes nothing
        await store.answer_updates([], 30.0)
        assert await store.purge_updates(before=25.0) == 2

    async def test_a_store_that_answers_passes_the_ping(self, store: Store) -> None:
        await store.ping()

    async def test_a_group_is_told_once(self, store: Store) -> None:
        assert await store.tell_group_once("g1", 10.0) is True
        assert await store.tell_group_once("g1", 20.0) is False
        assert await store.tell_group_once("g2", 20.0) is True

    async def test_the_feed_gives_each_escalation_once_in_the_order_stored(self, store: Store) -> None:
        await store.record_escalations([escalation("late", at=50.0), escalation("early", at=10.0)])
        first = await store.escalation_feed()
        assert [e.id for _, e in first] == ["late", "early"]
        await store.record_escalations([escalation("replayed", at=1.0)])
        after = await store.escalation_feed(first[-1][0])
        assert [e.id for _, e in after] == ["replayed"]
        assert await store.escalation_feed(after[-1][0]) == []
        assert [e.id for _, e in await store.escalation_feed(0, limit=1)] == ["late"]

    async def test_feed_positions_are_never_reused(self, store: Store) -> None:
        await store.record_escalations([escalation("a"), escalation("b", user_key="k2")])
        last = (await store.escalation_feed())[-1][0]
        await store.forget("k2")
        await store.record_escalations([escalation("c")])
        assert [(e.id, position > last) for position, e in await store.escalation_feed(last)] == [("c", True)]

    async def test_all_counts_reads_every_day_from_a_first_day(self, store: Store) -> None:
        await store.add_counts({("2026-11-01", "messages"): 2, ("2026-11-03", "concerns"): 1})
        assert await store.all_counts() == {("2026-11-01", "messages"): 2, ("2026-11-03", "concerns"): 1}
        assert await store.all_counts("2026-11-02") == {("2026-11-03", "concerns"): 1}

    async def test_purge_folds_old_escalations_into_counts_and_deletes_idle_sessions(self, store: Store) -> None:
        day = 86400.0
        await store.record_escalations(
            [
                escalation("old1", at=1 * day, level=Level.IMMINENT, category="attempt"),
                escalation("old2", at=1 * day + 60),
                escalation("old3", at=2 * day),
                escalation("new", at=40 * day),
            ]
        )
        await store.save_sessions([session("idle", last_seen=1 * day), session("active", last_seen=40 * day)])
        result = await store.purge(30 * day)
        assert result == Purged(escalations=3, sessions=1, days=("1970-01-02", "1970-01-03"))
        assert [e.id for e in await store.escalations()] == ["new"]
        assert await store.load_session("idle") is None and await store.load_session("active") is not None
        assert await store.all_counts() == {
            ("1970-01-02", "escalations.imminent.attempt"): 1,
            ("1970-01-02", "escalations.crisis.suicidal"): 1,
            ("1970-01-03", "escalations.crisis.suicidal"): 1,
        }
        assert await store.purge(30 * day) == Purged(0, 0, ())
        assert len(await store.all_counts()) == 3

    async def test_purge_can_keep_escalations_nobody_has_acknowledged(self, store: Store) -> None:
        day = 86400.0
        await store.record_escalations([escalation("seen", at=1 * day), escalation("waiting", at=1 * day + 60)])
        await store.acknowledge("seen", "sam", 2 * day)
        result = await store.purge(30 * day, keep_unacked=True)
        assert (result.escalations, result.kept) == (1, 1)
        assert [e.id for e in await store.escalations()] == ["waiting"]
        assert await store.all_counts() == {("1970-01-02", "escalations.crisis.suicidal"): 1}

    async def test_a_backup_holds_everything_stored(self, store: Store, tmp_path: Path) -> None:
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
            "daily_counts": 1,
            "updates": 2,
            "message_ids": 2,
            "told_groups": 1,
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

    async def test_a_backup_never_replaces_a_file_unless_asked(self, store: Store, tmp_path: Path) -> None:
        target = tmp_path / "backup.sqlite3"
        target.write_text("an older backup")
        with pytest.raises(StoreError, match="already exists; choose a new name, or replace it with --force"):
            await store.backup(target)
        assert target.read_text() == "an older backup"
        await store.save_sessions([session()])
        assert (await store.backup(target, overwrite=True)).rows["sessions"] == 1

    async def test_a_backup_into_a_missing_folder_says_so(self, store: Store, tmp_path: Path) -> None:
        with pytest.raises(StoreError, match="does not exist; create it first"):
            await store.backup(tmp_path / "nowhere" / "backup.sqlite3")

    async def test_writes_from_many_tasks_at_once_all_land(self, store: Store) -> None:
        # The session writer, the escalator and an erasure request share one connection in the bot.
        await store.record_escalations([escalation("first")])
        writes = []
        for n in range(40):
            writes += [
                store.save_sessions([session(f"k{n}")]),
                store.record_escalations([escalation(f"e{n}", user_key=f"k{n}")]),
                store.add_counts({("2026-11-29", "messages"): 1}),
                store.mark_alerted("first", float(n)),
                store.acknowledge(f"e{n}", "sam", 1.0),
            ]
        await asyncio.gather(*writes)
        assert all([await store.load_session(f"k{n}") for n in range(40)])
        assert len(await store.escalations()) == 41
        assert await store.unalerted() == [e for e in await store.escalations() if e.id != "first"]
        assert await store.counts("2026-11-29") == {"messages": 40}
        assert all(e.acked_by == "sam" for e in await store.escalations() if e.id != "first")

    async def test_close_twice_is_harmless(self, store: Store) -> None:
        await store.close()
        await store.close()


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


async def test_daily_counts_add_up_per_day(tmp_path: Path) -> None:
    for made in (MemoryStore(), SqliteStore(tmp_path / "db.sqlite3")):
        async with made as store:
            await store.add_counts({("2026-11-29", "messages"): 3, ("2026-11-30", "messages"): 1})
            await store.add_counts({("2026-11-29", "messages"): 2, ("2026-11-29", "fallbacks"): 1})
            assert await store.counts("2026-11-29") == {"messages": 5, "fallbacks": 1}
            assert await store.counts("2026-12-01") == {}


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
        await store.record_updates([(1, '{"text": "my words"}'), (2, '{"text": "other words"}')], 1.0)
        await store.answer_updates([Answered(1)], 2.0)
        async with store.db.execute("SELECT update_id, raw IS NULL, answered_at FROM updates ORDER BY 1") as cursor:
            assert await cursor.fetchall() == [(1, 1, 2.0), (2, 0, None)]
