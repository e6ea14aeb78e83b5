"""Three ``python -m bot run --webhook`` replicas on one PostgreSQL behind a round-robin front, one SIGKILLed at 40%.

The fake Bot API POSTs 5,000 updates from 500 people to the front, which hands each to the next replica that
takes the connection (as a load balancer does). Every message is answered exactly once, in order per person,
except the documented crash window (``bot/adapters/telegram/replicas.py``): an update whose reply the killed
replica had sent and whose mark had not reached the database is answered once more, from its first reply, by the
replica that takes the chat next; at most one update per chat the killed replica was answering
(``UNHOOKED_MAX_CONCURRENT_CHATS``, 32). Marked ``slow`` like the other process tests (about a minute).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import signal
import time
from collections import Counter
from pathlib import Path

import asyncpg
import pytest

from bot.content import Catalog
from bot.engine import Engine
from bot.store.memory import MemoryStore
from tests.fake_bot_api import FakeBotApi
from tests.front import free_port, round_robin
from tests.telegram_harness import OPERATORS, WEBHOOK_SECRET
from tests.test_reliability import FAST, SECRET, crash_mix, delivered, expect, until
from tests.test_telegram_process import ended, start

pytestmark = pytest.mark.slow

REPLICAS = 3
MOST_CHATS_AT_ONCE = 32
"""``UNHOOKED_MAX_CONCURRENT_CHATS``: at most this many chats are caught half-way by a kill."""


def begun_again(got: list[str], replies: list[str], counts: list[int]) -> tuple[int, int] | None:
    """Which update's replies ``got`` begins again, and how many it repeats: ``(-1, 0)`` for none, ``None`` if
    ``got`` is not ``replies`` with at most one update's replies begun again (a reply lost, or out of order)."""
    if got == replies:
        return -1, 0
    first = next((n for n, (a, b) in enumerate(zip(got, replies, strict=False)) if a != b), len(replies))
    starts = list(itertools.accumulate([0, *counts[:-1]]))
    for update, (begin, count) in enumerate(zip(starts, counts, strict=True)):
        if begin < first <= begin + count and got == replies[:first] + replies[begin:]:
            return update, first - begin
    return None


async def test_three_replicas_one_killed_answer_every_message_once_in_order(
    api: FakeBotApi, tmp_path: Path, catalog: Catalog, pg_url: str
) -> None:
    said = crash_mix()
    expected = await expect(catalog, said)
    people = list(expected.replies)
    total = sum(len(replies) for replies in expected.replies.values())
    api.group(OPERATORS, "Operators")
    ports = [free_port() for _ in range(REPLICAS)]
    async with round_robin(ports) as front:
        settings = {
            **FAST,
            "UNHOOKED_DB": pg_url,
            "UNHOOKED_WEBHOOK_URL": front,
            "UNHOOKED_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "UNHOOKED_OPERATOR_CHAT_ID": str(OPERATORS),
        }

        async def replica(number: int, name: str) -> asyncio.subprocess.Process:
            return await start(api, tmp_path, name, "--webhook", UNHOOKED_HTTP_PORT=str(ports[number]), **settings)

        replicas = [await replica(n, f"replica{n}") for n in range(REPLICAS)]
        began = time.perf_counter()
        for person, text in said:
            api.send(person, text)
        await until(lambda: sum(api.delivered_to[p] for p in people) >= total * 2 // 5, 120, replicas[0])
        replicas[0].kill()
        assert await ended(replicas[0]) == -signal.SIGKILL
        killed_at = time.perf_counter() - began
        at_kill = sum(api.delivered_to[p] for p in people)
        assert total // 3 < at_kill < total * 9 // 10, "the kill was not in the middle of the load"
        await asyncio.sleep(1.0)
        replicas[0] = await replica(0, "replica0-again")

        database = await asyncpg.connect(pg_url)
        try:

            async def settled() -> bool:
                return await database.fetchval("SELECT count(raw) FROM updates") == 0 and (
                    await database.fetchval("SELECT count(*) FROM updates") == len(said)
                )

            async with asyncio.timeout(120):
                while not await settled() or sum(api.delivered_to[p] for p in people) < total:
                    if any(process.returncode is not None for process in replicas):
                        raise AssertionError("a replica exited: " + (tmp_path / "replica1.log").read_text()[-2000:])
                    await asyncio.sleep(0.1)
            finished = time.perf_counter() - began
            await asyncio.sleep(1.0)  # anything sent twice would have arrived by now
            for process in replicas:
                process.send_signal(signal.SIGTERM)
            for number, process in enumerate(replicas):
                assert await ended(process) == 0, (tmp_path / f"replica{number}.log").read_text()[-3000:]
            stored = await database.fetch("SELECT id, user_key, alerted_at FROM escalations")
        finally:
            await database.close()

    repeated: dict[int, tuple[int, int]] = {}
    for person in people:
        again = begun_again(delivered(api, person), expected.replies[person], expected.counts[person])
        assert again is not None, f"{person}: a reply lost, out of order, or repeated outside the crash window"
        if again[1]:
            repeated[person] = again
    assert len(repeated) <= MOST_CHATS_AT_ONCE, "more chats were caught half-way than one replica answers at once"

    crisis = {p for p, text in said if text == "I want to die"}
    assert all(any("988" in text for text in delivered(api, p)) for p in crisis), "a crisis reply was not sent"
    keys = {Engine(MemoryStore(), SECRET).user_key("telegram", str(p)): p for p in crisis}
    records = Counter(row["user_key"] for row in stored)
    assert set(records) == set(keys), "an escalation was lost, or made for someone not in crisis"
    last_repeated = {p for p, (update, _) in repeated.items() if update == len(expected.counts[p]) - 1}
    for key, count in records.items():
        # The crisis message is the person's last: recorded twice only if that very update was answered again.
        assert count == 1 or (count == 2 and keys[key] in last_repeated), (keys[key], count)
    alerts = [data for message in api.sent(OPERATORS) for data in message.callbacks if data.startswith("ack:")]
    assert len(alerts) == len(set(alerts)), "an escalation was alerted twice"
    alerted = {row["id"] for row in stored if row["alerted_at"] is not None}
    assert {data.removeprefix("ack:") for data in alerts} <= {row["id"] for row in stored}
    # Alerts the killed replica had not sent are owed, sent by a replica's retry after OWED_AFTER seconds.
    assert len(alerted) >= len(stored) - MOST_CHATS_AT_ONCE

    logging.getLogger("tests").warning(
        "%d replicas, %d messages from %d people: killed one at %.1fs (%d of %d replies out), all answered at "
        "%.1fs; %d chats caught half-way, %d replies sent twice; %d escalations recorded, %d alerted",
        REPLICAS,
        len(said),
        len(people),
        killed_at,
        at_kill,
        total,
        finished,
        len(repeated),
        sum(count for _, count in repeated.values()),
        len(stored),
        len(alerted),
    )
