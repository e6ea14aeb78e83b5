"""The update journal and the per-chat lanes, on their own."""

from __future__ import annotations

import asyncio

from telegram import Update

from bot.adapters.telegram_intake import KEEP_IDS_FOR, Journal, Lanes
from bot.store import MemoryStore
from tests.conftest import Clock


def update(update_id: int, chat_id: int) -> Update:
    chat = {"id": chat_id, "type": "private", "first_name": "A"}
    person = {"id": chat_id, "is_bot": False, "first_name": "A"}
    message = {"message_id": update_id, "date": 0, "chat": chat, "from": person, "text": f"text {update_id}"}
    return Update.de_json({"update_id": update_id, "message": message}, None)


async def test_a_journalled_update_is_admitted_once_and_its_id_kept_48_hours(clock: Clock) -> None:
    store = MemoryStore()
    journal = Journal(store, clock)
    assert [u.update_id for u in await journal.admit([update(1, 7), update(2, 7)])] == [1, 2]
    assert await Journal(store, clock).admit([update(1, 7), update(3, 7)]) == [update(3, 7)]
    await journal.answered(update(1, 7), "chat-7", [1, 10])
    assert [u.update_id for u in await Journal(store, clock).unanswered(None)] == [2, 3]
    clock.advance(KEEP_IDS_FOR + 1)
    await journal.purge()
    assert await store.message_ids("chat-7") == []
    assert [u.update_id for u in await Journal(store, clock).admit([update(1, 7)])] == [1]


async def test_lanes_keep_each_chat_in_order_and_serve_chats_at_once() -> None:
    done: list[tuple[int, int]] = []
    both_started = asyncio.Event()
    started: set[int] = set()

    async def handle(item: Update) -> None:
        started.add(item.effective_chat.id)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 1)  # would time out if the chats ran one after the other
        done.append((item.effective_chat.id, item.update_id))

    lanes = Lanes(handle, limit=4)
    for update_id, chat_id in [(1, 7), (2, 8), (3, 7), (4, 8), (5, 7)]:
        lanes.submit(update(update_id, chat_id))
    assert await lanes.drain(grace=5) == 0
    assert [u for chat, u in done if chat == 7] == [1, 3, 5]
    assert [u for chat, u in done if chat == 8] == [2, 4]
