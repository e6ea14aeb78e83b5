"""Escalation records that never depend on one disk: commits forced to disk, a spool in several places, replays
only into a database, alert marks that survive a replay, a database file watched for deletion, replacement and
corruption, and no fresh start over a database that held data."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest

from bot.adapters.telegram.render import alert
from bot.backups import start_afresh
from bot.config import Settings
from bot.content import Catalog
from bot.engine import Engine
from bot.errors import CORRUPT, MISSING, REPLACED, ConfigError, DatabaseFault, StoreError
from bot.escalation import Escalator
from bot.health import STORE, Faults
from bot.metrics import Metrics
from bot.models import Escalation, Incoming, Level, Session
from bot.service import running_service
from bot.spool import SPOOL_NAME, Spools
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore
from bot.watchdog import Watchdog
from tests.conftest import REPO, Clock
from tests.test_cli import run
from tests.test_escalation import Alerts


def record(escalation_id: str, at: float = 1.0) -> Escalation:
    return Escalation(
        escalation_id, at, "k" * 32, Level.CRISIS, "suicidal", "suicidal.want_to_die", "test", ("lifeline",)
    )


def ids(escalations: list[Escalation]) -> list[str]:
    return [escalation.id for escalation in escalations]


async def test_an_escalation_is_committed_to_disk_and_other_writes_are_not_slowed_down(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        said: list[str] = []
        await store.db.set_trace_callback(said.append)
        await store.record_escalations([record("e1")])
        await store.save_sessions([Session("k", 1.0, 2.0)])
        await store.db.set_trace_callback(None)
        async with store.db.execute("PRAGMA synchronous") as cursor:
            assert (await cursor.fetchone())[0] == 1  # NORMAL between forced commits
    [first, begin, insert, commit, after, *sessions] = said
    assert (first, begin, commit, after) == (
        "PRAGMA synchronous=FULL",  # the WAL, with every commit before this one, is fsynced at this commit
        "BEGIN IMMEDIATE",
        "COMMIT",
        "PRAGMA synchronous=NORMAL",
    )
    assert insert.startswith("INSERT OR IGNORE INTO escalations")
    assert not any("synchronous" in statement for statement in sessions)


def test_an_escalation_goes_to_the_first_place_that_takes_it(tmp_path: Path) -> None:
    beside_the_database = tmp_path / "data" / SPOOL_NAME
    beside_the_database.mkdir(parents=True)  # a folder where the spool file should be: it cannot be written
    second = tmp_path / "second"
    spools = Spools([beside_the_database, second / SPOOL_NAME])
    assert spools.append(record("e1")) == second / SPOOL_NAME
    assert stat.S_IMODE(second.stat().st_mode) == 0o700
    assert stat.S_IMODE((second / SPOOL_NAME).stat().st_mode) == 0o600
    assert ids(spools.read()) == ["e1"] and spools.waiting()


def test_a_place_other_users_can_write_to_is_refused_and_none_left_raises(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # as /dev/shm itself is: anyone could swap the spool for a link
    blocked = tmp_path / "file"
    blocked.write_text("in the way")
    spools = Spools([blocked / SPOOL_NAME, shared / SPOOL_NAME])
    with pytest.raises(OSError, match="can be written by other users"):
        spools.append(record("e1"))
    assert not (shared / SPOOL_NAME).exists()


async def test_a_stand_in_in_memory_gets_no_escalation_and_no_replay(tmp_path: Path) -> None:
    spools = Spools([tmp_path / SPOOL_NAME])
    spools.append(record("from-the-last-run"))
    stand_in = MemoryStore()
    escalator = Escalator(stand_in, spools)
    await escalator.record(record("new"))
    assert await escalator.replay_spool() == 0
    assert await stand_in.escalations() == []
    assert ids(spools.read()) == ["from-the-last-run", "new"]  # waiting for a real database
    assert escalator.metrics.escalations_stored.value("spool") == 1


async def test_an_escalation_alerted_while_spooled_is_not_alerted_again_after_the_replay(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "data" / "bot.sqlite3"
    spools = Spools([tmp_path / "data" / SPOOL_NAME, tmp_path / "second" / SPOOL_NAME])
    first = Alerts()
    async with SqliteStore(path) as store:
        escalator = Escalator(store, spools, first, clock=clock)
        path.unlink()  # the database file is deleted under the bot: the record and its alert mark are spooled
        await escalator.record(record("e1", clock.now))
        await escalator.deliver_owed()
        await escalator.aclose()
    assert ids(first.sent) == ["e1"]
    assert [e.alerted_at for e in spools.read()] == [clock.now]
    start_afresh(path)  # a new database is intended (its mark and the deleted one's WAL files go aside)
    again = Alerts()
    async with SqliteStore(path) as store:  # the next start
        escalator = Escalator(store, spools, again, clock=clock)
        assert await escalator.replay_spool() == 1
        assert await escalator.deliver_owed() == 0
        [stored] = await store.escalations()
        assert stored.id == "e1" and stored.alerted_at == clock.now
    assert again.sent == [] and not spools.waiting()


async def test_an_escalation_no_place_takes_is_kept_in_memory_and_stored_later(tmp_path: Path) -> None:
    blocked = tmp_path / "data"
    blocked.write_text("a file where the folder should be")
    alerts = Alerts()
    escalator = Escalator(MemoryStore(), Spools([blocked / SPOOL_NAME]), alerts)
    await escalator.record(record("e1"))
    await escalator.deliver_owed()
    assert escalator.metrics.escalations_stored.value("nowhere") == 1
    assert "1 escalations stored nowhere" in escalator.faults.of(STORE)["unstored escalations"].detail
    [told] = alerts.sent  # the operators' alert is the last record meanwhile: every field of it, no text
    assert (told.id, told.level, told.category, told.at) == ("e1", Level.CRISIS, "suicidal", 1.0)
    shown = alert(told).html
    assert all(part in shown for part in ("e1", "CRISIS", "suicidal", "1970-01-01 00:00 UTC", "suicidal.want_to_die"))
    blocked.unlink()  # the disk is back
    await escalator.replay_spool()
    assert "unstored escalations" not in escalator.faults.of(STORE)
    [spooled] = Spools([blocked / SPOOL_NAME]).read()
    assert spooled.id == "e1" and spooled.alerted_at is not None  # stored with its alert mark: not alerted again
    await escalator.aclose()


class BuggyLog(SqliteStore):
    """A database whose escalation write has a bug: it raises something that is not a ``StoreError``."""

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        raise RuntimeError("bug")


async def test_a_bug_in_the_escalation_write_still_leaves_the_record_in_the_spool(
    tmp_path: Path, catalog: Catalog
) -> None:
    spools = Spools([tmp_path / SPOOL_NAME])
    async with BuggyLog(tmp_path / "db.sqlite3") as store:
        engine = Engine(store, b"k" * 32, catalog, escalator=Escalator(store, spools))
        outcome = await engine.handle(Incoming("9", "i want to kill myself", "test"))
        await engine.aclose()
    assert "988" in outcome.replies[0].text
    assert ids(spools.read()) == [outcome.escalation.id]


async def test_a_database_file_deleted_under_the_bot_is_noticed_and_gets_no_escalation(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    async with SqliteStore(path) as store:
        assert await store.check() is None
        path.unlink()
        with pytest.raises(StoreError, match="was deleted while the bot ran"):
            await store.record_escalations([record("e1")])
        fault = await store.check()
        assert fault is not None and fault.kind == MISSING
        with pytest.raises(StoreError, match="did not mark an alert as sent"):
            await store.mark_alerted("e1", 2.0)
        await store.save_sessions([Session("k", 1.0, 2.0)])  # the rest goes on in the old file until the stop


async def test_a_database_file_replaced_under_the_bot_is_noticed(tmp_path: Path) -> None:
    path, other = tmp_path / "bot.sqlite3", tmp_path / "other.sqlite3"
    async with SqliteStore(other):
        pass
    async with SqliteStore(path) as store:
        os.replace(other, path)
        fault = await store.check()
        assert fault is not None and fault.kind == REPLACED and "replaced by another file" in str(fault)


async def test_a_database_file_overwritten_with_garbage_is_found_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    async with SqliteStore(path) as store:
        await store.record_escalations([record("before")])
        await store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages are in the file now, not the WAL
        with path.open("r+b") as handle:
            handle.write(os.urandom(8192))  # the header and the first pages
        fault = await store.check()
        assert fault is not None and fault.kind == CORRUPT and "is corrupt" in str(fault)
        with pytest.raises(StoreError, match="is corrupt"):
            await store.record_escalations([record("after")])


async def test_the_watchdog_says_it_once_and_retries_the_notice_until_delivered(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    sent: list[str] = []
    failing = True

    async def notice(text: str) -> None:
        if failing:
            raise ConnectionError("operators' chat unreachable")
        sent.append(text)

    faults, metrics = Faults(), Metrics()
    async with SqliteStore(path) as store:
        watchdog = Watchdog(store, faults, metrics, notice, spool="/spool/here")
        await watchdog.watch_once()
        assert faults.of(STORE) == {} and metrics.database_fault.value(MISSING) == 0
        path.unlink()
        await watchdog.watch_once()
        detail = faults.of(STORE)["database"].detail
        assert "was deleted while the bot ran" in detail and "python -m bot restore" in detail
        assert metrics.database_fault.value(MISSING) == 1
        failing = False
        for _ in range(3):
            await watchdog.watch_once()
    [told] = sent
    assert "lost its database while running" in told and "/spool/here" in told and "python -m bot restore" in told


async def test_no_empty_database_is_made_where_one_held_data(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bot.sqlite3"
    async with SqliteStore(path):
        pass
    assert (tmp_path / "data" / "bot.sqlite3.created").exists()
    path.unlink()
    with pytest.raises(DatabaseFault, match=r"is missing, but bot\.sqlite3\.created show it held data") as refused:
        await SqliteStore(path).open()
    assert refused.value.kind == MISSING and not path.exists()
    migrate = run("migrate", tmp=tmp_path)  # no command makes one either
    assert migrate.returncode == 1 and "python -m bot start-afresh first" in migrate.stderr and not path.exists()
    afresh = run("start-afresh", tmp=tmp_path)
    assert afresh.returncode == 0, afresh.stderr
    assert "the next start creates an empty database" in afresh.stdout
    async with SqliteStore(path) as store:
        assert await store.escalations() == []


def test_start_afresh_over_a_corrupt_file_keeps_it_aside_only_when_forced(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bot.sqlite3"
    path.parent.mkdir()
    path.write_bytes(b"damaged" * 1000)
    refused = run("start-afresh", tmp=tmp_path)
    assert refused.returncode == 1 and "add --force" in refused.stderr and path.exists()
    forced = run("start-afresh", "--force", tmp=tmp_path)
    assert forced.returncode == 0, forced.stderr
    [kept] = path.parent.glob("bot.sqlite3.before-fresh-start-*")
    assert kept.read_bytes() == b"damaged" * 1000 and not path.exists()


async def test_restore_over_a_corrupt_database_keeps_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bot.sqlite3"
    async with SqliteStore(tmp_path / "backup.sqlite3") as backup:
        await backup.record_escalations([record("saved")])
    async with SqliteStore(path):
        pass
    path.write_bytes(b"damaged" * 1000)
    restored = run("restore", str(tmp_path / "backup.sqlite3"), "--force", tmp=tmp_path)
    assert restored.returncode == 0, restored.stderr
    [kept] = path.parent.glob("bot.sqlite3.before-restore-*")
    assert kept.read_bytes() == b"damaged" * 1000 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT id FROM escalations").fetchall() == [("saved",)]


async def test_restore_where_the_database_was_deleted_moves_its_leftover_wal_away(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bot.sqlite3"
    async with SqliteStore(tmp_path / "backup.sqlite3") as backup:
        await backup.record_escalations([record("saved")])
    async with SqliteStore(path) as store:
        await store.record_escalations([record("lost")])
    path.unlink()
    (tmp_path / "data" / "bot.sqlite3-wal").write_bytes(b"frames of the deleted database")  # as after a kill
    restored = run("restore", str(tmp_path / "backup.sqlite3"), tmp=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert "moved bot.sqlite3-wal, left by the database it replaces" in restored.stdout
    [aside] = path.parent.glob("bot.sqlite3-wal.before-restore-*")
    assert aside.read_bytes() == b"frames of the deleted database"
    async with SqliteStore(path) as store:
        assert ids(await store.escalations()) == ["saved"]


async def test_a_corrupt_database_at_start_is_reported_and_never_replayed_into_memory(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "data" / "bot.sqlite3", content_dir=REPO, secret="s" * 20)
    settings.db_path.parent.mkdir()
    Spools(settings.spool_paths).append(record("from-the-last-run"))
    settings.db_path.write_bytes(b"damaged" * 1000)
    told: list[str] = []

    async def notice(text: str) -> None:
        told.append(text)

    async with running_service(settings, notice=notice) as service:
        outcome = await service.engine.handle(Incoming("9", "i want to end my life", "test"))
        assert "988" in outcome.replies[0].text
        ok, body = await service.health().report()
        async with asyncio.timeout(10):
            while not told:
                await asyncio.sleep(0.01)
        assert service.engine.metrics.database_fault.value(CORRUPT) == 1
    assert not ok and body["failing"] == ["store"]
    [problem] = [line for line in body["checks"]["store"]["problems"] if line.startswith("database")]
    assert "is corrupt" in problem and "python -m bot restore BACKUP --force" in problem
    assert "start-afresh --force" in problem
    assert "started without its database" in told[0]
    assert ids(Spools(settings.spool_paths).read()) == ["from-the-last-run", outcome.escalation.id]
    assert settings.db_path.read_bytes() == b"damaged" * 1000  # left as it was, for a restore to keep


def test_the_spool_setting_names_more_places_and_is_checked(tmp_path: Path) -> None:
    db = tmp_path / "data" / "bot.sqlite3"
    first, second = tmp_path / "one", tmp_path / "two"
    settings = Settings.from_env({"UNHOOKED_DB": str(db), "UNHOOKED_SPOOL_DIR": f"{first}:{second}"})
    assert settings.spool_paths == (db.parent / SPOOL_NAME, first / SPOOL_NAME, second / SPOOL_NAME)
    with pytest.raises(ConfigError, match=r"UNHOOKED_SPOOL_DIR cannot hold the spool: spool is not an absolute path"):
        Settings.from_env({"UNHOOKED_DB": str(db), "UNHOOKED_SPOOL_DIR": "spool"})
    first.mkdir()
    first.chmod(0o1777)
    with pytest.raises(ConfigError, match=r"can be written by other users \(mode 1777\); make it 0700"):
        Settings.from_env({"UNHOOKED_DB": str(db), "UNHOOKED_SPOOL_DIR": str(first)})
    assert Settings.from_env({"UNHOOKED_DB": ":memory:"}).spool_paths == ()


def test_the_default_second_place_is_a_runtime_folder_on_another_filesystem(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("/dev/shm is not another filesystem here, so there is no default second place to check")
    same_disk = tmp_path / "run"
    same_disk.mkdir()
    env = {"UNHOOKED_DB": str(tmp_path / "data" / "bot.sqlite3"), "RUNTIME_DIRECTORY": str(same_disk)}
    [place] = Settings.from_env(env).spool_dirs  # the runtime folder on the database's disk is passed over
    assert place.parent in (shm, Path(f"/run/user/{os.geteuid()}")) and place.name.startswith("unhooked-")
    other = Settings.from_env({**env, "UNHOOKED_DB": str(tmp_path / "other" / "bot.sqlite3")}).spool_dirs
    assert other != (place,)  # each database has its own folder there
