"""Replicas in webhook mode on one PostgreSQL database: a chat answered in order across them, once; polling alone."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import pytest

from bot.adapters.telegram import run_telegram
from bot.adapters.telegram.replicas import STALE_AFTER
from bot.content import Catalog
from bot.errors import ConfigError
from bot.store.postgres import PostgresStore
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import WEBHOOK_SECRET, Running, settings_for, telegram_bot, telegram_for, transcripts
from tests.test_telegram_webhook import ALICE, update

LINES = ["hello", "thanks", "who are you", "help", "I want to die", "bye"]


async def post(replica: Running, body: object) -> int:
    url = f"http://127.0.0.1:{replica.server.port}/telegram"
    headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as response:
        return response.status


async def test_a_chat_whose_messages_reach_two_replicas_is_answered_in_order_once(
    api: FakeBotApi, tmp_path: Path, pg_url: str, catalog: Catalog
) -> None:
    said = [LINES[turn % len(LINES)] for turn in range(12)]
    expected = (await transcripts(catalog, {ALICE: said}))[ALICE]
    api.private(ALICE)
    api.slow("sendMessage", 0.05, times=1000)  # a replica is still answering one when the next reaches the other
    async with (
        telegram_bot(api, tmp_path / "a", webhook=True, store=PostgresStore(pg_url)) as one,
        telegram_bot(api, tmp_path / "b", webhook=True, store=PostgresStore(pg_url)) as two,
    ):
        for turn, text in enumerate(said):
            assert await post((one, two)[turn % 2], update(9000 + turn, text)) == 200
        assert await post(two, update(9000, said[0])) == 200  # Telegram sending one again, to the other replica
        await api.wait_for(lambda: len(api.sent(ALICE)) >= len(expected), timeout=30)
        await asyncio.sleep(0.3)
        assert [message.text for message in api.sent(ALICE)] == expected
        assert one.bot.answered + two.bot.answered == len(said)
        assert await one.store.unanswered_updates() == []
        assert len(await one.store.escalations()) == said.count("I want to die")


async def test_a_crisis_message_to_a_replica_takes_its_chat_ahead_of_the_backlog(
    api: FakeBotApi, tmp_path: Path, pg_url: str
) -> None:
    backlog, late = range(5001, 5081), 7001
    for person in (*backlog, late):
        api.private(person)
    api.slow("sendMessage", 0.05, times=1000)  # the backlog is still being answered when the crisis arrives
    async with telegram_bot(
        api, tmp_path, webhook=True, store=PostgresStore(pg_url), max_concurrent_chats=2
    ) as replica:
        for number, person in enumerate(backlog):
            assert await post(replica, update(9200 + number, "hello", person)) == 200
        waiting = len(backlog) - sum(1 for person in backlog if api.sent(person))
        before = len(api.requests("sendMessage"))
        assert await post(replica, update(9300, "I want to die", late)) == 200
        await api.wait_for(lambda: all(api.sent(person) for person in (*backlog, late)), timeout=60)
    assert waiting > 20, "the backlog should still be waiting when the crisis message comes"
    after = [call.params["chat_id"] for call in api.requests("sendMessage")[before:] if call.status == 200]
    assert "988" in api.sent(late)[0].text
    ahead = after.index(late)  # replies already under way when it came may go first
    assert ahead < 5, f"{ahead} of the {waiting} waiting chats were answered before the crisis message"


async def test_a_chat_left_waiting_by_a_replica_that_died_is_answered_by_another(
    api: FakeBotApi, tmp_path: Path, pg_url: str
) -> None:
    api.private(ALICE)
    async with telegram_bot(api, tmp_path, webhook=True, store=PostgresStore(pg_url)) as replica:
        # What a replica killed before answering leaves: journalled, with its chat, and nobody holding the chat.
        rows = [(9100 + n, json.dumps(update(9100 + n, text))) for n, text in enumerate(["hello", "I want to die"])]
        await replica.store.record_updates(rows, time.time() - STALE_AFTER, dict.fromkeys((9100, 9101), ALICE))
        sent = await api.wait_sent(ALICE, 2, timeout=10)
        assert "988" in sent[-1].text
        async with asyncio.timeout(5):  # the last mark lands moments after the reply
            while await replica.store.unanswered_updates():
                await asyncio.sleep(0.05)


async def test_polling_beside_another_replica_is_refused_with_a_sentence_that_says_why(
    api: FakeBotApi, tmp_path: Path, pg_url: str
) -> None:
    async with telegram_bot(api, tmp_path / "a", store=PostgresStore(pg_url)):
        for webhook, reason in ((False, "Telegram lets one process poll a bot's token"), (True, "polls Telegram")):
            telegram = telegram_for(api, webhook_url="http://127.0.0.1:1/telegram", webhook_secret=WEBHOOK_SECRET)
            with pytest.raises(ConfigError, match=reason):
                await run_telegram(settings_for(tmp_path / "b"), telegram, webhook=webhook, store=PostgresStore(pg_url))
