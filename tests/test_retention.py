"""Retention inside the bot: one purge a UTC day, taken by one process, never of an unacknowledged escalation."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.config import Settings
from bot.models import Escalation, Level, Session
from bot.retention import Retention
from bot.service import running_service
from bot.store.memory import MemoryStore
from bot.store.postgres import PostgresStore
from bot.store.sqlite import SqliteStore
from tests.conftest import REPO, Clock

DAY = 86400.0


def escalation(escalation_id: str, at: float) -> Escalation:
    return Escalation(escalation_id, at, "k" * 32, Level.CRISIS, "suicidal", "r", "test", ("lifeline",))


async def test_one_purge_a_day_keeping_what_nobody_acknowledged(clock: Clock) -> None:
    store = MemoryStore()
    now = clock()
    await store.record_escalations([escalation("seen", now - 40 * DAY), escalation("waiting", now - 40 * DAY)])
    await store.acknowledge("seen", "sam", now - 39 * DAY)
    await store.save_sessions([Session("idle", now - 40 * DAY, now - 40 * DAY)])
    retention = Retention(store, 30, clock=clock)
    done = await retention.run_once()
    assert done is not None and (done.escalations, done.sessions, done.kept) == (1, 1, 1)
    assert [e.id for e in await store.escalations()] == ["waiting"]
    assert retention.metrics.retention_runs.value("done") == 1
    clock.advance(3600)
    assert await retention.run_once() is None  # the same UTC day: already done
    clock.advance(DAY)
    assert await retention.run_once() is not None


async def test_a_purge_with_nothing_to_do_is_not_a_warning(clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    with caplog.at_level(logging.INFO, logger="unhooked.retention"):
        await Retention(store, 30, clock=clock).run_once()
        await store.save_sessions([Session("idle", clock() - 40 * DAY, clock() - 40 * DAY)])
        clock.advance(DAY)
        await Retention(store, 30, clock=clock).run_once()
    levels = [(record.levelname, "nothing to purge" in record.getMessage()) for record in caplog.records]
    assert levels == [("INFO", True), ("WARNING", False)]


async def test_only_the_process_that_claims_the_day_purges(clock: Clock) -> None:
    store = MemoryStore()
    await store.record_escalations([escalation("old", clock() - 40 * DAY)])
    await store.acknowledge("old", "sam", clock())
    first, second = Retention(store, 30, clock=clock), Retention(store, 30, clock=clock)
    assert await first.run_once() is not None
    assert await second.run_once() is None


async def test_two_replicas_on_postgresql_purge_a_day_once(pg_url: str, tmp_path: Path) -> None:
    async with PostgresStore(pg_url) as store:
        await store.record_escalations([escalation("old", 1_000_000.0), escalation("unacked", 1_000_000.0)])
        await store.acknowledge("old", "sam", 1_000_100.0)
    settings = Settings(tmp_path / "db", db_url=pg_url, content_dir=REPO, secret="s" * 32, reload_seconds=0)
    async with running_service(settings) as one, running_service(settings) as two:
        runs = [service.engine.metrics.retention_runs for service in (one, two)]
        for _ in range(300):  # both look at start, in the background
            if [e.id for e in await one.store.escalations()] == ["unacked"]:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # time for a second purge, were there one
        assert sorted(run.value("done") for run in runs) == [0, 1]
        assert [run.value("failed") for run in runs] == [0, 0]
        assert await Retention(two.store, 30).run_once() is None  # today's run is claimed for every replica


async def test_the_running_bot_purges_at_start_without_cron(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    async with SqliteStore(path) as store:
        await store.record_escalations([escalation("old", 1_000_000.0), escalation("unacked", 1_000_000.0)])
        await store.acknowledge("old", "sam", 1_000_100.0)
    settings = Settings(db_path=path, content_dir=REPO, secret="s" * 32, reload_seconds=0)
    async with running_service(settings) as service:
        engine, store = service.engine, service.store
        for _ in range(200):  # the purge runs in the background as the bot starts
            if [e.id for e in await store.escalations()] == ["unacked"]:
                break
            await asyncio.sleep(0.01)
        assert [e.id for e in await store.escalations()] == ["unacked"]
        assert engine.metrics.retention_runs.value("done") == 1
