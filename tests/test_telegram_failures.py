"""When Telegram, the network, the store or a handler fails: nothing silently dropped, crisis replies first."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from bot.content import Catalog
from bot.engine import APOLOGY
from bot.errors import StoreError
from bot.models import Incoming
from bot.sessions import day_of
from bot.store.memory import MemoryStore
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import OPERATORS, Running, telegram_bot, transcripts

ALICE, BOB, CAROL = 1001, 1002, 1003


def statuses(tg: Running, method: str, chat_id: int | None = None) -> list[int]:
    return [call.status for call in tg.api.requests(method, chat_id)]


async def test_a_429_is_waited_out_as_told_and_the_reply_delivered(tg: Running) -> None:
    tg.api.fail("sendMessage", 429, retry_after=1, chat_id=ALICE)
    tg.api.send(ALICE, "hello")
    await tg.settle()
    assert statuses(tg, "sendMessage", ALICE) == [429, 200]
    assert len(tg.api.sent(ALICE)) == 1


async def test_after_a_429_crisis_replies_go_out_first(tg: Running) -> None:
    tg.api.fail("sendMessage", 429, retry_after=1, chat_id=ALICE)
    tg.api.send(ALICE, "hello")
    await tg.api.wait_for(lambda: statuses(tg, "sendMessage", ALICE) == [429])
    tg.api.send(BOB, "why do I miss him")
    tg.api.send(CAROL, "I want to die")
    await tg.settle()
    delivered = [call.params["chat_id"] for call in tg.api.calls if call.method == "sendMessage" and call.status == 200]
    assert delivered[0] == CAROL
    assert sorted(delivered) == sorted([ALICE, BOB, CAROL, OPERATORS])


async def test_server_errors_and_dropped_connections_are_retried_until_delivered(tg: Running) -> None:
    tg.api.fail("sendMessage", 500, chat_id=ALICE)
    tg.api.fail("sendMessage", 502, chat_id=ALICE)
    tg.api.disconnect("sendMessage", chat_id=ALICE)
    tg.api.send(ALICE, "hello")
    await tg.settle()
    assert statuses(tg, "sendMessage", ALICE) == [500, 502, 500, 200]
    assert len(tg.api.sent(ALICE)) == 1


async def test_polling_never_stops_for_server_errors_or_dropped_connections(tg: Running) -> None:
    tg.api.fail("getUpdates", 500, times=2)
    tg.api.fail("getUpdates", 502)
    tg.api.disconnect("getUpdates")
    await tg.api.wait_for(lambda: all(fault.times == 0 for fault in tg.api.faults))
    tg.api.send(ALICE, "hello")
    await tg.settle()
    assert {500, 502} <= set(statuses(tg, "getUpdates"))
    assert len(tg.api.sent(ALICE)) == 1


async def test_a_person_who_blocked_the_bot_is_recorded_and_not_retried(tg: Running) -> None:
    tg.api.block(ALICE)
    tg.api.send(ALICE, "hello")
    tg.api.send(ALICE, "why do I miss him")
    tg.api.send(BOB, "hello")
    await tg.settle()
    assert statuses(tg, "sendMessage", ALICE) == [403, 403]
    assert len(tg.api.sent(BOB)) == 1
    await tg.bot.engine.sessions.flush()
    assert (await tg.store.counts(day_of(time.time())))["blocked"] == 2
    assert await tg.store.unanswered_updates() == []


async def test_a_handler_error_is_logged_without_text_and_the_person_gets_an_apology(
    tg: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(incoming: Incoming) -> None:
        raise RuntimeError(f"could not handle {incoming.text!r}")

    monkeypatch.setattr(tg.bot.engine, "handle", broken)
    tg.api.send(ALICE, "my private words")
    await tg.settle()
    [reply] = tg.api.sent(ALICE)
    assert reply.text == APOLOGY
    [record] = [r for r in caplog.records if "in a handler" in r.getMessage()]
    assert "RuntimeError in a handler" in record.getMessage()
    assert "in on_text" in record.getMessage() and "bot/adapters/telegram/" in record.getMessage()
    assert not any("private words" in r.getMessage() + (r.exc_text or "") for r in caplog.records)


async def test_an_alert_that_cannot_be_sent_stays_owed_and_the_crisis_reply_does_not_wait(tg: Running) -> None:
    tg.api.fail("sendMessage", 500, chat_id=OPERATORS, times=1000)
    tg.api.send(ALICE, "I want to die")
    await tg.settle()
    [reply] = tg.api.sent(ALICE)
    assert "988" in reply.text
    [owed] = await tg.store.unalerted()
    assert owed.alerted_at is None
    tg.api.faults.clear()
    async with asyncio.timeout(10):
        while not tg.api.sent(OPERATORS):  # what the escalator's retry loop does every 30 seconds
            await tg.bot.engine.escalator.deliver_owed()
            await asyncio.sleep(0.05)
    assert "Escalation: CRISIS" in tg.api.sent(OPERATORS)[0].text
    await tg.api.wait_for(lambda: True)
    async with asyncio.timeout(5):
        while await tg.store.unalerted():
            await asyncio.sleep(0.01)


class DownStore(MemoryStore):
    """A database that refuses everything, like a full disk or a corrupt file."""


async def _refuse(self: DownStore, *args: object, **kwargs: object) -> None:
    raise StoreError("disk I/O error")


for _name in (
    "load_session", "save_sessions", "forget", "add_counts", "counts", "record_escalations", "escalations",
    "acknowledge", "mark_alerted", "unalerted", "record_updates", "answer_updates", "unanswered_updates",
    "purge_updates", "message_ids", "drop_message_ids", "purge_message_ids", "tell_group_once",
):  # fmt: skip
    setattr(DownStore, _name, _refuse)


async def test_with_the_store_down_crisis_replies_and_answers_still_go_out(api: FakeBotApi, tmp_path: Path) -> None:
    async with telegram_bot(api, tmp_path, store=DownStore()) as tg:
        tg.api.send(ALICE, "I want to die")
        tg.api.send(BOB, "why do I miss him")
        tg.api.send(BOB, "hi", chat_id=-100555)
        await tg.settle()
        assert "988" in tg.api.sent(ALICE)[0].text
        assert "brain was hooked" in tg.api.sent(BOB)[0].text
        assert len(tg.api.sent(-100555)) == 1


async def test_500_messages_from_50_people_are_each_answered_once_and_in_order(
    api: FakeBotApi, tmp_path: Path, catalog: Catalog
) -> None:
    texts = [
        "hello",
        "why do I miss him",
        "tell me more",
        "what is a trauma bond",
        "should I go back",
        "tell me more",
        "how do I break a trauma bond",
        "asdfgh qwerty",
        "why do I miss her",
        "thanks",
    ]
    people = range(2001, 2051)
    said = {person: [texts[(person + turn) % len(texts)] for turn in range(10)] for person in people}
    expected = await transcripts(catalog, said)

    async with telegram_bot(api, tmp_path) as tg:
        started = time.perf_counter()
        for turn in range(10):
            for person in people:
                tg.api.send(person, said[person][turn])
        await tg.settle(timeout=120)
        elapsed = time.perf_counter() - started
    logging.getLogger("tests").warning("500 messages from 50 people answered in %.2fs", elapsed)
    for person in people:
        assert [message.text for message in tg.api.sent(person)] == expected[person]
    sends = [call for call in tg.api.requests("sendMessage") if call.params["chat_id"] in said]
    assert len(sends) == sum(len(replies) for replies in expected.values())


async def test_an_update_that_cannot_be_read_is_skipped_and_polling_goes_on(
    tg: Running, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tg.api.enqueue({"message": {"message_id": "not a number", "chat": "not a chat", "text": "my words"}})
    tg.api.send(ALICE, "hello")
    await tg.api.wait_sent(ALICE, 1)
    await tg.api.wait_for(lambda: tg.api.confirmed_below > broken)
    assert tg.api.handed_out.count(broken) == 1  # confirmed with its batch, not fetched again and again
    [record] = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert record.getMessage().startswith(f"update {broken} from Telegram cannot be read")
    assert "my words" not in record.getMessage()
