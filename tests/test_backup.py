"""Online backups: consistent while another connection writes, and the ``backup`` command as operators use it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from bot.errors import StoreError
from bot.models import Session
from bot.store.sqlite import SqliteStore
from tests.test_cli import run

PRELOADED = 20_000


def _writer(path: Path, stop: threading.Event, written: list[int]) -> None:
    """Another process's connection: each transaction adds a session and counts it, so the two always agree."""
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        number = 0
        while not stop.is_set():
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO sessions (user_key, first_seen, last_seen) VALUES (?, 1, 1)", (f"writer-{number}",))
            db.execute("UPDATE daily_counts SET value = value + 1 WHERE day = 'all' AND name = 'sessions'")
            db.execute("COMMIT")
            number += 1
            written[0] = number
    finally:
        db.close()


async def _filled(path: Path) -> None:
    async with SqliteStore(path) as store:
        await store.save_sessions([Session(f"k{n}", 1.0, 2.0, shown={"a.b"}) for n in range(PRELOADED)])
        await store.add_counts({("all", "sessions"): PRELOADED})


async def _wait_for(written: list[int], at_least: int) -> None:
    async with asyncio.timeout(30):
        while written[0] < at_least:
            await asyncio.sleep(0.005)


async def test_a_backup_taken_while_another_connection_writes_is_consistent(tmp_path: Path) -> None:
    live, target = tmp_path / "live.sqlite3", tmp_path / "backup.sqlite3"
    await _filled(live)
    stop, written = threading.Event(), [0]
    writer = threading.Thread(target=_writer, args=(live, stop, written), daemon=True)
    writer.start()
    try:
        await _wait_for(written, 50)
        async with SqliteStore(live, migrate=False) as store:
            before = written[0]
            done = await store.backup(target)
            after = written[0]
        await _wait_for(written, after + 50)
    finally:
        stop.set()
        writer.join(timeout=30)

    copy = sqlite3.connect(target)
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    sessions = copy.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    counted = copy.execute("SELECT value FROM daily_counts WHERE day = 'all' AND name = 'sessions'").fetchone()[0]
    assert sessions == counted, "the copy mixes two moments: a session without its count, or the reverse"
    assert PRELOADED + before <= sessions <= PRELOADED + after
    assert sessions < PRELOADED + written[0], "the writer went on after the backup; the copy is a snapshot"
    assert done.rows["sessions"] == sessions
    async with SqliteStore(target) as reopened:
        assert (await reopened.load_session("k123")).shown == {"a.b"}


async def test_backing_up_the_database_onto_itself_is_refused(tmp_path: Path) -> None:
    live = tmp_path / "live.sqlite3"
    async with SqliteStore(live) as store:
        with pytest.raises(StoreError, match="is the live database itself"):
            await store.backup(live, overwrite=True)


async def test_opening_without_migrating_never_creates_a_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="there is no database at"):
        await SqliteStore(tmp_path / "missing.sqlite3", migrate=False).open()
    assert not (tmp_path / "missing.sqlite3").exists()


async def test_a_foreign_sqlite_file_is_not_taken_for_the_bots_database(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "other.sqlite3").execute("CREATE TABLE notes (x)")
    with pytest.raises(StoreError, match="is not an Unhooked database"):
        await SqliteStore(tmp_path / "other.sqlite3", migrate=False).open()


def test_the_backup_command_writes_a_copy_and_says_what_it_wrote(tmp_path: Path) -> None:
    chat = run("chat", stdin="hi\nwhy do I miss him\nI want to die\n", tmp=tmp_path)
    assert chat.returncode == 0, chat.stderr
    target = tmp_path / "backup.sqlite3"
    result = run("backup", str(target), tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"wrote {target}:" in result.stdout
    assert "sessions 1, escalations 1" in result.stdout and "integrity check ok" in result.stdout
    assert sqlite3.connect(target).execute("SELECT COUNT(*) FROM escalations").fetchone()[0] == 1


def test_the_backup_command_refuses_an_existing_file_unless_forced(tmp_path: Path) -> None:
    run("chat", stdin="hi\n", tmp=tmp_path)
    target = tmp_path / "backup.sqlite3"
    target.write_text("yesterday's backup")
    refused = run("backup", str(target), tmp=tmp_path)
    assert refused.returncode == 1
    assert f"unhooked: {target} already exists; choose a new name, or replace it with --force" in refused.stderr
    assert target.read_text() == "yesterday's backup"
    forced = run("backup", str(target), "--force", tmp=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert sqlite3.connect(target).execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1


def test_the_backup_command_without_a_database_says_what_to_set(tmp_path: Path) -> None:
    result = run("backup", str(tmp_path / "backup.sqlite3"), tmp=tmp_path)
    assert result.returncode == 1
    assert "there is no database at" in result.stderr and "set UNHOOKED_DB" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "bot.sqlite3").exists()
