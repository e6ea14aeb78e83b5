"""``restore``: a backup back in place, checked, the replaced database kept, refused while the bot has it open."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

from bot.models import Escalation, Level, Session
from bot.store.sqlite import SqliteStore
from tests.test_cli import run


def escalation(escalation_id: str) -> Escalation:
    return Escalation(escalation_id, 1.0, "k" * 32, Level.CRISIS, "suicidal", "r", "test", ("lifeline",))


async def fill(path: Path, *ids: str) -> None:
    async with SqliteStore(path) as store:
        await store.save_sessions([Session("someone", 1.0, 2.0)])
        await store.record_escalations([escalation(i) for i in ids])


def escalation_ids(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as db:
        return [row[0] for row in db.execute("SELECT id FROM escalations ORDER BY id")]


def test_restore_puts_the_backup_back_and_keeps_what_it_replaces(tmp_path: Path, umask_022: None) -> None:
    db = tmp_path / "data" / "bot.sqlite3"
    db.parent.mkdir()
    asyncio.run(fill(db, "before"))
    backup = run("backup", str(tmp_path / "backup.sqlite3"), tmp=tmp_path)
    assert backup.returncode == 0, backup.stderr
    asyncio.run(fill(db, "after"))  # written after the backup: gone from the restored database, kept aside

    refused = run("restore", str(tmp_path / "backup.sqlite3"), tmp=tmp_path)
    assert refused.returncode == 1 and "already exists; stop the bot, then add --force" in refused.stderr
    assert escalation_ids(db) == ["after", "before"]

    restored = run("restore", str(tmp_path / "backup.sqlite3"), "--force", tmp=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert escalation_ids(db) == ["before"]
    [kept] = db.parent.glob("bot.sqlite3.before-restore-*")
    assert escalation_ids(kept) == ["after", "before"]
    assert f"kept the database it replaces as {kept}" in restored.stdout
    assert "restored " in restored.stdout and "escalations 1" in restored.stdout
    assert db.stat().st_mode & 0o777 == 0o600
    assert not list(db.parent.glob(".bot.sqlite3.restoring-*"))


def test_restore_into_an_empty_place_and_a_bad_backup(tmp_path: Path) -> None:
    asyncio.run(fill(tmp_path / "backup.sqlite3", "only"))
    fresh = run("restore", str(tmp_path / "backup.sqlite3"), tmp=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert escalation_ids(tmp_path / "data" / "bot.sqlite3") == ["only"]
    (tmp_path / "junk.sqlite3").write_text("not a database")
    junk = run("restore", str(tmp_path / "junk.sqlite3"), "--db", str(tmp_path / "other.sqlite3"), tmp=tmp_path)
    assert junk.returncode == 1 and "cannot be read as a SQLite database" in junk.stderr
    missing = run("restore", str(tmp_path / "none.sqlite3"), tmp=tmp_path)
    assert missing.returncode == 1 and "there is no backup at" in missing.stderr


def test_a_backup_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite3"
    asyncio.run(fill(newer, "x"))
    with closing(sqlite3.connect(newer)) as db:
        db.execute("INSERT INTO _migrations (name, applied_at) VALUES ('9999_from_the_future', 'now')")
        db.commit()
    result = run("restore", str(newer), tmp=tmp_path)
    assert result.returncode == 1 and "written by a newer version of Unhooked" in result.stderr
    assert not (tmp_path / "data" / "bot.sqlite3").exists()


def test_restore_refuses_a_database_another_process_has_open(tmp_path: Path) -> None:
    db = tmp_path / "data" / "bot.sqlite3"
    db.parent.mkdir()
    asyncio.run(fill(db, "live"))
    asyncio.run(fill(tmp_path / "backup.sqlite3", "old"))
    bot = sqlite3.connect(db)  # the running bot's connection, in WAL mode
    bot.execute("PRAGMA journal_mode=WAL")
    bot.execute("INSERT INTO daily_counts (day, name, value) VALUES ('d', 'n', 1)")
    bot.commit()
    try:
        result = run("restore", str(tmp_path / "backup.sqlite3"), "--force", tmp=tmp_path)
    finally:
        bot.close()
    assert result.returncode == 1 and "still open in another process" in result.stderr
    assert escalation_ids(db) == ["live"]
