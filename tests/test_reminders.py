"""Reminders on Telegram: an imminent escalation nobody acknowledges is re-alerted to the operators' chat, boundedly."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from bot.escalation import Escalator, Reminders
from bot.models import Escalation, Level
from bot.store import run_once
from bot.store.memory import MemoryStore
from bot.store.postgres import PostgresStore
from tests.conftest import Clock, shows_id
from tests.fake_bot_api import FakeBotApi
from tests.records import escalation
from tests.telegram_harness import OPERATOR, OPERATORS, Running

ALICE, BOB, CAROL = 1001, 1002, 1003
INTERVAL = 15 * 60.0
"""The default of UNHOOKED_REALERT_MINUTES, in seconds."""


async def escalated(tg: Running, person: int, text: str, level: Level) -> Escalation:
    """A person writes ``text``; return its escalation once the operators' alert for it is delivered and marked."""
    before = {e.id for e in await tg.store.escalations()}
    tg.api.send(person, text)
    await tg.settle()
    async with asyncio.timeout(10):
        while True:
            new = [e for e in await tg.store.escalations() if e.id not in before and e.alerted_at is not None]
            if new:
                [found] = new
                assert found.level is level
                return found
            await asyncio.sleep(0.01)


def reminders_to_operators(api: FakeBotApi) -> list[str]:
    return [m.text for m in api.sent(OPERATORS) if m.text.startswith("Reminder ")]


async def test_an_unacknowledged_imminent_escalation_is_reminded_each_interval_at_most_three_times(
    tg: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await escalated(tg, ALICE, "I'm going to kill myself tonight", Level.IMMINENT)
    carol = await escalated(tg, CAROL, "I'm going to kill myself tonight", Level.IMMINENT)
    await escalated(tg, BOB, "I want to die", Level.CRISIS)  # crisis, not imminent: no reminders
    escalator = tg.bot.engine.escalator
    clock = Clock(time.time())
    monkeypatch.setattr(escalator, "_clock", clock)
    assert await escalator.remind() == 0  # not an interval old yet

    clock.advance(INTERVAL + 1)
    assert await escalator.remind() == 2
    await tg.api.wait_for(lambda: len(reminders_to_operators(tg.api)) == 2)
    first = reminders_to_operators(tg.api)
    assert all(text.startswith("Reminder 1 of 3: not acknowledged yet\nEscalation: IMMINENT") for text in first)
    assert not any(shows_id(text, ALICE) or "tonight" in text for text in first)
    assert await escalator.remind() == 0  # once per interval
    assert await tg.store.unacked_reminders() == {alice.id: [clock.now], carol.id: [clock.now]}

    [carols] = [m for m in tg.api.sent(OPERATORS) if m.text.startswith("Reminder 1") and carol.id in m.text]
    tg.api.tap(OPERATOR, carols, f"ack:{carol.id}")
    await tg.settle()
    for number in (2, 3):
        clock.advance(INTERVAL)
        assert await escalator.remind() == 1  # Carol's acknowledgement stops hers
        await tg.api.wait_for(
            lambda n=number: any(t.startswith(f"Reminder {n} of 3") for t in reminders_to_operators(tg.api))
        )
    clock.advance(INTERVAL * 4)
    assert await escalator.remind() == 0  # bounded: three reminders at most
    assert len(reminders_to_operators(tg.api)) == 3  # Alice's three; Carol's one became its acknowledgement
    assert f"Acknowledged by telegram:{OPERATOR}" in carols.text and carols.callbacks == []
    assert list(await tg.store.unacked_reminders()) == [alice.id]
    assert len((await tg.store.unacked_reminders())[alice.id]) == 3
    assert tg.bot.engine.metrics.reminders.value("sent") == 4


class Remembered:
    """Reminders as an operators' chat would get them: (escalation id, number, of)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, int]] = []

    async def __call__(self, escalation: Escalation, number: int, of: int) -> None:
        self.sent.append((escalation.id, number, of))


async def alerted(escalation: Escalation) -> None:
    """An alert that always gets through."""


async def test_the_retry_loop_sends_the_reminders_that_are_due() -> None:
    store, clock, remembered = MemoryStore(), Clock(), Remembered()
    escalator = Escalator(store, alerter=alerted, clock=clock, reminders=Reminders(remembered, 60.0, 2))
    due = escalation("a", at=clock.now - 61, level=Level.IMMINENT, alerted_at=clock.now - 60)
    await store.record_escalations([due, escalation("b", at=clock.now - 61, alerted_at=clock.now - 60)])
    looping = asyncio.create_task(escalator.retry_forever(every=0.01))
    try:
        async with asyncio.timeout(5):
            while not remembered.sent:
                await asyncio.sleep(0.01)
    finally:
        looping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await looping
    assert remembered.sent == [("a", 1, 2)]


async def test_a_retry_step_that_raises_is_logged_and_the_others_still_run_every_round(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store, clock, remembered = MemoryStore(), Clock(), Remembered()
    escalator = Escalator(store, alerter=alerted, clock=clock, reminders=Reminders(remembered, 60.0, 3))
    await store.record_escalations(
        [escalation("a", at=clock.now - 61, level=Level.IMMINENT, alerted_at=clock.now - 60)]
    )
    replays = 0

    async def broken_replay() -> int:
        nonlocal replays
        replays += 1
        raise ValueError("a bug in the spool reader")

    monkeypatch.setattr(escalator, "replay_spool", broken_replay)
    looping = asyncio.create_task(escalator.retry_forever(every=0.01))
    try:
        async with asyncio.timeout(5):
            while len(remembered.sent) < 2:  # a second reminder: the loop outlived the failing step
                clock.advance(61)
                await asyncio.sleep(0.02)
    finally:
        looping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await looping
    assert replays >= 2
    assert "spool-replay failed; it runs again in 0.01 s" in caplog.text and "a bug in the spool reader" in caplog.text


async def test_replicas_on_one_postgresql_send_each_reminder_once(pg_url: str) -> None:
    clock = Clock()
    stores = [PostgresStore(pg_url) for _ in range(3)]
    for store in stores:
        await store.open()
    try:
        due = escalation("a", at=clock.now - 61, level=Level.IMMINENT, alerted_at=clock.now - 60)
        await stores[0].record_escalations([due])
        remembered = Remembered()
        escalators = [
            Escalator(store, alerter=alerted, clock=clock, locks=store.locks, reminders=Reminders(remembered, 60.0, 3))
            for store in stores
        ]
        await asyncio.gather(*(run_once(e.locks, "reminders", e.remind) for e in escalators))
        assert remembered.sent == [("a", 1, 3)]
        assert await stores[2].unacked_reminders() == {"a": [clock.now]}
    finally:
        for store in stores:
            await store.close()
