"""Escalations are recorded before the crisis turn ends (database, else spool) and alerted in the background."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.config import Settings
from bot.content import Catalog
from bot.engine import Engine
from bot.errors import StoreError
from bot.escalation import Escalator, log_line
from bot.models import Escalation, Incoming, Level
from bot.service import running_service
from bot.spool import Spool, Spools
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore
from tests.conftest import REPO, SECRET, Chat


class RefusingStore(MemoryStore):
    """A store that refuses escalation writes, like a locked or read-only database."""

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        raise StoreError("attempt to write a readonly database")


class Alerts:
    """An alerter that records what it was given, and can be told to fail."""

    def __init__(self) -> None:
        self.sent: list[Escalation] = []
        self.failing = False

    async def __call__(self, escalations: Sequence[Escalation]) -> None:
        if self.failing:
            raise ConnectionError("operators' chat unreachable")
        self.sent.extend(escalations)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_crisis_is_stored_before_the_turn_returns(catalog: Catalog, clock) -> None:
    store = MemoryStore()
    engine = Engine(store, SECRET, catalog, clock=clock)
    chat = Chat(engine, user="7")
    replies = await chat.say("i want to kill myself")
    stored = await store.escalations()
    assert stored == [chat.last.escalation]
    escalation = stored[0]
    assert escalation.level is Level.CRISIS and escalation.channel == "test"
    assert escalation.user_key == engine.user_key("test", "7") and escalation.at == clock.now
    assert escalation.resources == ("lifeline", "outside_us")
    assert escalation.excerpt is None
    assert "988" in replies[0].text
    await engine.aclose()


async def test_a_crisis_in_spanish_records_the_spanish_line_it_showed(catalog: Catalog, clock) -> None:
    store = MemoryStore()
    engine = Engine(store, SECRET, catalog, clock=clock)
    replies = await Chat(engine, user="8").say("ya no puedo más, quiero morir")
    (escalation,) = await store.escalations()
    assert escalation.resources == ("lifeline", "lifeline_es", "outside_us")
    assert "marca 2" in replies[0].text
    await engine.aclose()


async def test_an_everyday_message_records_nothing(chat: Chat) -> None:
    await chat.say("what is a trauma bond")
    assert await chat.engine.escalator.store.escalations() == []


async def test_when_the_database_refuses_the_escalation_goes_to_the_spool(catalog: Catalog, clock, tmp_path) -> None:
    spool = Spools([tmp_path / "spool.jsonl"])
    store = RefusingStore()
    engine = Engine(store, SECRET, catalog, clock=clock, escalator=Escalator(store, spool, clock=clock))
    outcome_replies = await Chat(engine).say("he choked me last night")
    assert "911" in outcome_replies[0].text
    spooled = spool.read()
    assert len(spooled) == 1 and spooled[0].category == "partner_danger"
    assert spooled[0].resources[0] == "emergency"
    await engine.aclose()


async def test_the_spool_is_replayed_into_the_database_at_the_next_start(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "bot.sqlite3", content_dir=REPO, secret="s" * 20)
    async with running_service(settings) as service:
        engine = service.engine
        locker = sqlite3.connect(settings.db_path)
        locker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock: the database is unwritable
        try:
            outcome = await engine.handle(Incoming("9", "i want to end my life", "test"))
        finally:
            locker.rollback()
            locker.close()
    assert outcome.replies[0].kind.value == "crisis"
    assert [e.id for e in Spool(settings.spool_path).read()] == [outcome.escalation.id]
    async with running_service(settings):
        pass
    assert not settings.spool_path.exists()
    async with SqliteStore(settings.db_path) as store:
        assert [e.id for e in await store.escalations()] == [outcome.escalation.id]


async def test_replaying_twice_does_not_duplicate(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    record = Escalation("e1", 1.0, "k", Level.CRISIS, "suicidal", "r", "test", ("lifeline",))
    spool.append(record)
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.record_escalations([record])
        assert await spool.replay(store) == 1
        assert len(await store.escalations()) == 1


async def test_a_torn_spool_line_is_skipped_and_the_rest_kept(tmp_path: Path, caplog) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(Escalation("e1", 1.0, "k", Level.CRISIS, "suicidal", "r", "test", ("lifeline",)))
    with spool.path.open("a") as handle:
        handle.write('{"id": "e2", "at": 2.0, "user_k')
    with caplog.at_level(logging.ERROR):
        assert [e.id for e in spool.read()] == ["e1"]
    assert "spool.jsonl:2 is not an escalation record" in caplog.text


async def test_alerts_are_delivered_and_marked(catalog: Catalog, clock) -> None:
    alerts, store = Alerts(), MemoryStore()
    engine = Engine(store, SECRET, catalog, clock=clock, escalator=Escalator(store, alerter=alerts, clock=clock))
    await Chat(engine).say("kms")
    await settle()
    assert len(alerts.sent) == 1
    assert (await store.escalations())[0].alerted_at == clock.now
    await engine.aclose()


async def test_a_failed_alert_stays_owed_and_is_retried(catalog: Catalog, clock) -> None:
    alerts, store = Alerts(), MemoryStore()
    escalator = Escalator(store, alerter=alerts, clock=clock)
    engine = Engine(store, SECRET, catalog, clock=clock, escalator=escalator)
    alerts.failing = True
    replies = await Chat(engine).say("i want to kill myself")
    await settle()
    assert replies[0].kind.value == "crisis"
    assert [e.alerted_at for e in await store.unalerted()] == [None]
    alerts.failing = False
    assert await escalator.deliver_owed() == 1
    assert await store.unalerted() == [] and len(alerts.sent) == 1
    await engine.aclose()


async def test_a_slow_alert_never_delays_the_crisis_reply(catalog: Catalog, clock) -> None:
    release = asyncio.Event()

    async def slow(escalations: Sequence[Escalation]) -> None:
        await release.wait()

    store = MemoryStore()
    engine = Engine(store, SECRET, catalog, clock=clock, escalator=Escalator(store, alerter=slow, clock=clock))
    replies = await asyncio.wait_for(Chat(engine).say("i want to kill myself"), timeout=5)
    assert replies[0].kind.value == "crisis"
    release.set()
    await engine.aclose()


async def test_the_log_line_is_json_without_text_or_excerpt() -> None:
    record = Escalation("e1", 1.0, "k" * 32, Level.IMMINENT, "attempt", "r", "telegram", ("emergency",), "secret words")
    line = json.loads(log_line(record))
    assert line["event"] == "escalation" and line["level"] == "imminent"
    assert "excerpt" not in line and "secret words" not in log_line(record)


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_operators_see_the_escalation_log_line(
    store_kind: str, catalog: Catalog, clock, tmp_path, caplog
) -> None:
    store = MemoryStore() if store_kind == "memory" else SqliteStore(tmp_path / "db.sqlite3")
    async with store:
        engine = Engine(store, SECRET, catalog, clock=clock)
        with caplog.at_level(logging.WARNING, logger="unhooked.escalations"):
            await Chat(engine, user="123456789").say("I want to kill myself tonight")
        await engine.aclose()
    assert '"event": "escalation"' in caplog.text
    assert "myself tonight" not in caplog.text and "123456789" not in caplog.text


def record(escalation_id: str) -> Escalation:
    return Escalation(escalation_id, 1.0, "k", Level.CRISIS, "suicidal", "r", "test", ("lifeline",))


async def test_a_record_after_a_torn_line_keeps_a_line_of_its_own(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(record("e1"))
    with spool.path.open("a") as handle:
        handle.write('{"id": "torn", "at": 2.0, "use')  # the process died mid-write
    spool.append(record("e3"))
    assert [e.id for e in spool.read()] == ["e1", "e3"]


async def test_a_replay_the_database_refuses_keeps_everything_for_the_next_one(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(record("e1"))
    with pytest.raises(StoreError):
        await spool.replay(RefusingStore())
    assert spool.claimed.exists() and [e.id for e in spool.read()] == ["e1"]
    spool.append(record("e2"))  # the bot keeps spooling meanwhile, into a fresh file
    store = MemoryStore()
    assert await spool.replay(store) == 2
    assert [e.id for e in await store.escalations()] == ["e1", "e2"]
    assert spool.read() == [] and not spool.claimed.exists() and not spool.path.exists()


async def test_appends_during_a_replay_go_to_a_fresh_spool(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(record("e1"))

    class SlowStore(MemoryStore):
        async def record_escalations(self, escalations: list[Escalation]) -> None:
            # another process appends while this replay holds the file it took
            writer = threading.Thread(target=Spool(spool.path).append, args=(record("e2"),))
            writer.start()
            writer.join(timeout=5)
            await super().record_escalations(escalations)

    store = SlowStore()
    assert await spool.replay(store) == 1
    assert [e.id for e in await store.escalations()] == ["e1"]
    assert [e.id for e in spool.read()] == ["e2"]  # waiting for the next replay


async def test_an_append_that_opened_the_file_a_replay_took_writes_to_the_fresh_one(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(record("e1"))
    descriptor = os.open(spool.path, os.O_RDWR | os.O_APPEND)  # opened just before the replay's rename
    try:
        os.replace(spool.path, spool.claimed)
        assert not spool._still_the_spool(descriptor)  # so append reopens the path instead of writing here
    finally:
        os.close(descriptor)
    spool.append(record("e2"))
    assert [e.id for e in Spool(spool.claimed).read()] == ["e1"]
    assert [e.id for e in spool.read()] == ["e1", "e2"]
