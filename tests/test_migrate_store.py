"""``python -m bot migrate-store``: SQLite moved into PostgreSQL; a non-empty target or a bad row refused."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import asyncpg
import pytest

from bot.__main__ import main
from bot.models import Level
from bot.store.base import Answered
from bot.store.postgres import PostgresStore
from bot.store.sqlite import SqliteStore
from bot.store.transfer import TABLES
from tests.records import escalation, session


async def _fill(path: Path) -> None:
    async with SqliteStore(path) as store:
        await store.save_sessions([session("k1"), session("k2", turns=9, crisis_level=Level.IMMINENT, crisis_at=150.0)])
        await store.record_escalations([escalation("e1"), escalation("e2", at=120.0, level=Level.IMMINENT)])
        await store.acknowledge("e1", "sam", 130.0)
        await store.mark_alerted("e1", 101.0)
        await store.record_reminder("e2", 1, 1020.0)
        await store.add_counts({("2027-01-15", "concern.crisis"): 4})
        await store.record_updates([(1, '{"a": 1}'), (2, '{"b": 2}')], 90.0, {1: 7, 2: 8})
        await store.answer_updates([Answered(1, "chat-a", (11, 12))], 95.0)
        await store.tell_group_once("group-a", 96.0)


async def test_a_sqlite_database_moves_into_postgresql_with_everything_the_bot_keeps(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "unhooked.sqlite3"
    await _fill(source)
    assert await asyncio.to_thread(main, ["migrate-store", str(source), pg_url]) == 0
    assert (
        "2 sessions, 2 escalations, 1 escalation_reminders, 1 daily_counts, 2 updates, 2 message_ids,"
        " 1 told_groups, 0 job_runs" in capsys.readouterr().out
    )
    async with PostgresStore(pg_url, migrate=False) as moved:
        assert (await moved.load_session("k2")).turns == 9
        assert (await moved.load_session("k2")).crisis_level is Level.IMMINENT
        assert await moved.load_session("k1") == session("k1")
        first, second = await moved.escalations()
        assert (first.id, first.acked_by, first.acked_at, first.alerted_at) == ("e1", "sam", 130.0, 101.0)
        assert (second.id, second.level, second.acked_by, second.alerted_at) == ("e2", Level.IMMINENT, None, None)
        assert [e.id for e in await moved.unalerted()] == ["e2"]  # its alert is still owed after the move
        assert await moved.unacked_reminders() == {"e2": [1020.0]}
        assert [e.id for _, e in await moved.escalation_feed()] == ["e1", "e2"]
        assert await moved.counts("2027-01-15") == {"concern.crisis": 4}
        assert await moved.unanswered_updates() == [(2, '{"b": 2}')]
        assert await moved.lane_updates(8) == [(2, '{"b": 2}')]
        assert await moved.record_updates([(1, "{}"), (3, "{}")], 99.0) == [3]  # answered ids still deduplicate
        assert await moved.message_ids("chat-a") == [11, 12]
        assert not await moved.tell_group_once("group-a", 97.0)
    connection = await asyncpg.connect(pg_url)
    tables = await connection.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        " AND table_name != '_migrations'"
    )
    await connection.close()
    assert set(TABLES) == {row["table_name"] for row in tables}  # a table a migration adds is moved too


async def test_a_target_holding_rows_is_refused_and_force_replaces_it(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "unhooked.sqlite3"
    await _fill(source)
    async with PostgresStore(pg_url) as target:
        await target.record_escalations([escalation("already-there")])
    assert await asyncio.to_thread(main, ["migrate-store", str(source), pg_url]) == 1
    assert "already holds 1 rows; move into an empty database, or pass --force" in capsys.readouterr().err
    async with PostgresStore(pg_url, migrate=False) as target:
        assert [e.id for e in await target.escalations()] == ["already-there"]  # nothing was changed
    assert await asyncio.to_thread(main, ["migrate-store", f"sqlite:///{source}", pg_url, "--force"]) == 0
    assert "first (1 rows were there)" in capsys.readouterr().out
    async with PostgresStore(pg_url, migrate=False) as target:
        assert [e.id for e in await target.escalations()] == ["e1", "e2"]


@pytest.mark.parametrize(
    ("source", "target", "says"),
    [
        ("missing.sqlite3", "postgresql://u@h/db", "there is no SQLite database at"),
        ("postgresql://u@h/db", "postgresql://u@h/db", "the source must be a SQLite database file"),
        ("a.sqlite3", "b.sqlite3", "the target must be a PostgreSQL URL"),
    ],
)
def test_a_wrong_source_or_target_is_refused_with_a_sentence(
    source: str,
    target: str,
    says: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["migrate-store", source, target]) == 1
    assert says in capsys.readouterr().err


def test_migrate_store_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["migrate-store", "--help"])
    assert "Stop the bot first" in capsys.readouterr().out


async def test_a_row_postgresql_cannot_take_is_reported_in_a_sentence_and_nothing_is_copied(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "unhooked.sqlite3"
    await _fill(source)
    with sqlite3.connect(source) as damaged:  # SQLite keeps a word in an integer column; asyncpg refuses it
        damaged.execute("UPDATE sessions SET turns = 'nine' WHERE user_key = 'k2'")
    damaged.close()
    assert await asyncio.to_thread(main, ["migrate-store", str(source), pg_url]) == 1
    assert "(nothing was changed): a row of sessions holds a value of the wrong type" in capsys.readouterr().err
    async with PostgresStore(pg_url, migrate=False) as target:
        assert await target.load_session("k1") is None  # the transaction was rolled back whole
