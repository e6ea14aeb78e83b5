"""Webhook mode: Telegram POSTs real Update JSON with the secret header; the bot journals, then says 200."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

import aiohttp

from bot.errors import StoreError
from bot.store.memory import MemoryStore
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import WEBHOOK_SECRET, Running, telegram_bot

ALICE = 1001


def update(update_id: int, text: str, user: int = ALICE) -> dict:
    person = {"id": user, "is_bot": False, "first_name": "Alice"}
    chat = {"id": user, "first_name": "Alice", "type": "private"}
    return {
        "update_id": update_id,
        "message": {"message_id": update_id, "from": person, "chat": chat, "date": 1_800_000_000, "text": text},
    }


async def post(tg: Running, body: object, headers: dict[str, str] | None = None) -> int:
    tg.api.private(ALICE)
    url = tg.api.webhook["url"]
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers or {}) as response:
        return response.status


async def test_the_webhook_is_set_with_its_secret_and_updates_are_answered(api: FakeBotApi, tmp_path: Path) -> None:
    async with telegram_bot(api, tmp_path, webhook=True) as tg:
        assert tg.api.webhook == {"url": f"http://127.0.0.1:{tg.server.port}/telegram", "secret_token": WEBHOOK_SECRET}
        assert tg.api.requests("deleteWebhook") == []
        tg.api.send(ALICE, "why do I miss him")
        tg.api.send(ALICE, "I want to die")
        await tg.settle()
        first, second = tg.api.sent(ALICE)
        assert "brain was hooked" in first.text and "988" in second.text


async def test_a_request_without_the_right_secret_is_refused(api: FakeBotApi, tmp_path: Path) -> None:
    async with telegram_bot(api, tmp_path, webhook=True) as tg:
        assert await post(tg, update(5001, "hello")) == 403
        assert await post(tg, update(5002, "hello"), {"X-Telegram-Bot-Api-Secret-Token": "wrong"}) == 403
        assert await post(tg, update(5003, "hello"), {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}) == 200
        await tg.answered(1)
        assert len(tg.api.sent(ALICE)) == 1
        assert await tg.store.record_updates([(5001, "{}"), (5002, "{}")], 0.0) == [5001, 5002]


async def test_what_is_not_an_update_is_refused(api: FakeBotApi, tmp_path: Path) -> None:
    secret = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    async with telegram_bot(api, tmp_path, webhook=True) as tg:
        assert await post(tg, ["not", "an", "update"], secret) == 400
        url = tg.api.webhook["url"]
        async with aiohttp.ClientSession() as session:
            async with session.post(
                url, data=b"{not json", headers={**secret, "Content-Type": "application/json"}
            ) as r:
                assert r.status == 400
                assert await r.text() == "400 Bad Request: the body is not a Telegram update\n"
            async with session.post(url, data=b'{"update_id": 1}', headers=secret) as response:
                assert response.status == 415  # aiohttp sends bytes as application/octet-stream
            async with session.get(url, headers=secret) as response:
                assert response.status == 405


class SlowJournal(MemoryStore):
    """A store whose journal writes take a while, and which notes when each one is done."""

    def __init__(self) -> None:
        super().__init__()
        self.journalled: list[int] = []

    async def record_updates(
        self, updates: Sequence[tuple[int, str]], at: float, lanes: Mapping[int, int] | None = None
    ) -> list[int]:
        await asyncio.sleep(0.2)
        fresh = await super().record_updates(updates, at, lanes)
        self.journalled.extend(fresh)
        return fresh


async def test_telegram_gets_its_200_only_once_the_update_is_journalled(api: FakeBotApi, tmp_path: Path) -> None:
    store = SlowJournal()
    async with telegram_bot(api, tmp_path, webhook=True, store=store) as tg:
        status = await post(tg, update(6001, "hello"), {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET})
        assert status == 200
        assert store.journalled == [6001]
        assert await post(tg, update(6001, "hello"), {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}) == 200
        assert await post(tg, update(6002, "thanks"), {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}) == 200
        await tg.answered(2)  # a redelivered 6001 would have been answered before 6002, in the same chat
        assert len(tg.api.sent(ALICE)) == 2 and tg.bot.answered == 2


class BusyJournal(MemoryStore):
    """A store whose journal refuses writes while ``busy``, like a database another process holds locked."""

    busy = True

    async def record_updates(
        self, updates: Sequence[tuple[int, str]], at: float, lanes: Mapping[int, int] | None = None
    ) -> list[int]:
        if self.busy:
            raise StoreError("database is locked")
        return await super().record_updates(updates, at, lanes)


async def test_an_update_the_journal_did_not_take_is_answered_and_refused_so_telegram_sends_it_again(
    api: FakeBotApi, tmp_path: Path
) -> None:
    store, secret = BusyJournal(), {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    async with telegram_bot(api, tmp_path, webhook=True, store=store) as tg:
        assert await post(tg, update(7001, "I want to die"), secret) == 503
        await tg.api.wait_sent(ALICE, 1)  # the crisis reply does not wait for the journal
        store.busy = False
        assert await post(tg, update(7001, "I want to die"), secret) == 200  # Telegram's retry
        assert await store.unanswered_updates() == []
        await asyncio.sleep(0.3)
        assert len(tg.api.sent(ALICE)) == 1  # the retry is not answered again
