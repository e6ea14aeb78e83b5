"""The update journal and the per-chat lanes, on their own."""

from __future__ import annotations

import asyncio

import pytest
from telegram import Update

from bot.adapters.telegram import inbound as intake
from bot.adapters.telegram.inbound import KEEP_IDS_FOR, Journal, Lanes
from bot.errors import StoreError
from bot.health import STORE, Faults
from bot.models import Session
from bot.store.memory import MemoryStore
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
    await journal.aclose()


class CountingStore(MemoryStore):
    """Counts the transactions that mark updates answered, and can be made to hold them."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[int]] = []
        self.go_on = asyncio.Event()
        self.go_on.set()

    async def answer_updates(self, answered, at):
        await self.go_on.wait()
        self.batches.append([done.update_id for done in answered])
        await super().answer_updates(answered, at)


async def test_marks_queued_while_one_batch_is_written_go_together_in_the_next(clock: Clock) -> None:
    store = CountingStore()
    journal = Journal(store, clock)
    await journal.admit([update(n, n) for n in range(1, 8)])
    store.go_on.clear()
    first = asyncio.create_task(journal.answered(update(1, 1), None, []))
    await asyncio.sleep(0.01)  # the writer took the first mark and waits on the store
    others = [asyncio.create_task(journal.answered(update(n, n), None, [])) for n in range(2, 8)]
    await asyncio.sleep(0.01)
    assert journal.pending_marks == 6 and not first.done()
    store.go_on.set()
    await asyncio.gather(first, *others)  # each returns once its mark is written
    assert store.batches == [[1], [2, 3, 4, 5, 6, 7]]
    await journal.aclose()
    assert await store.unanswered_updates() == []


class FailingMarks(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.refusals = 2

    async def answer_updates(self, answered, at):
        if self.refusals:
            self.refusals -= 1
            raise StoreError("disk I/O error")
        await super().answer_updates(answered, at)


async def test_marks_the_store_refused_are_written_when_it_takes_them_again(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intake, "MARK_RETRY_DELAYS", (0.01,))
    store = FailingMarks()
    faults = Faults()
    journal = Journal(store, clock, faults=faults)
    await journal.admit([update(1, 1), update(2, 2)])
    monkeypatch.setattr(intake, "MARK_WAIT", 0.001)  # the chat waits this long for a mark, then goes on
    await journal.answered(update(1, 1), "k", [9])
    await asyncio.sleep(0.005)
    assert list(faults.of(STORE)) == ["update journal"]
    await journal.answered(update(2, 2), None, [])
    async with asyncio.timeout(5):
        while await store.unanswered_updates():
            await asyncio.sleep(0.01)
    assert await store.message_ids("k") == [9]
    assert faults.of(STORE) == {}
    await journal.aclose()


async def test_an_answered_mark_writes_the_session_its_answer_left_and_says_so(clock: Clock) -> None:
    store, saved = MemoryStore(), []
    journal = Journal(store, clock, on_saved=saved.extend)
    await journal.admit([update(1, 7), update(2, 7)])
    left = Session(user_key="k7", first_seen=1.0, last_seen=1.0, turns=1)
    await journal.answered(update(1, 7), "k7", [1], left)
    assert await store.load_session("k7") == left and saved == [left]
    await journal.answered(update(2, 7), "k7", [2])  # a command: nothing of the session changed
    assert saved == [left] and [u for u, _ in await store.unanswered_updates()] == []
    await journal.aclose()


async def test_a_forgotten_persons_session_is_not_written_with_a_mark_still_queued(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intake, "MARK_WAIT", 0.001)
    store = CountingStore()
    journal = Journal(store, clock)
    await journal.admit([update(1, 7), update(2, 8)])
    store.go_on.clear()
    await journal.answered(update(1, 7), "k7", [], Session(user_key="k7", first_seen=1.0, last_seen=1.0))
    await asyncio.sleep(0.01)  # the writer took this mark and waits on the store
    await journal.answered(update(2, 8), "k8", [], Session(user_key="k8", first_seen=1.0, last_seen=1.0))
    forgetting = asyncio.create_task(journal.forget("k8"))
    await asyncio.sleep(0.01)
    assert not forgetting.done()  # it waits for the batch under way
    store.go_on.set()
    await forgetting
    await journal.flush()
    assert await store.load_session("k8") is None and await store.load_session("k7") is not None
    assert await store.unanswered_updates() == []  # the mark itself is written
    await journal.aclose()


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
