"""A person's session is written with their update's answered mark, after the reply went: ``python -m bot run``
killed after the engine answered but before the reply reached Telegram (held at the fake, or failing with 500s)
is started again, and each person gets the passage they never saw, not the one after it.

Before, the engine's session reached the database (written behind, within 50 ms) while the reply still waited
to be sent: the restart answered the update again from a session that already counted the passage as seen, and
the person skipped it. The daily counters are written behind by that same writer, so once the count of messages
is on disk the old code had written those sessions too: that is the moment these tests look at the database and
then kill the bot.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import pytest

from bot.content import Catalog
from bot.engine import Engine
from bot.store.memory import MemoryStore
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import transcripts
from tests.test_reliability import SECRET, database, until
from tests.test_telegram_process import ended, journal, start

PEOPLE = range(6001, 6021)
QUESTION = "why do I miss him"
"""Asked three times, it gets the topic's three passages in turn: a skipped one shows."""


def counted_messages(tmp_path: Path) -> int:
    with contextlib.closing(database(tmp_path)) as db:
        return db.execute("SELECT coalesce(sum(value), 0) FROM daily_counts WHERE name = 'messages'").fetchone()[0]


def turns_on_disk(tmp_path: Path) -> dict[str, int]:
    with contextlib.closing(database(tmp_path)) as db:
        return dict(db.execute("SELECT user_key, turns FROM sessions").fetchall())


@pytest.mark.parametrize("fault", ["held", "failing"])
async def test_a_bot_killed_before_its_replies_went_out_sends_the_passages_nobody_saw(
    api: FakeBotApi, tmp_path: Path, catalog: Catalog, fault: str
) -> None:
    expected = await transcripts(catalog, {person: [QUESTION] * 3 for person in PEOPLE})
    assert all(len(set(replies)) == 3 for replies in expected.values()), "three different passages, in order"
    keys = {Engine(MemoryStore(), SECRET).user_key("telegram", str(person)) for person in PEOPLE}

    first = await start(api, tmp_path, "first")
    for person in PEOPLE:
        api.send(person, QUESTION)
    await until(lambda: all(len(api.sent(person)) == 1 for person in PEOPLE), 30, first)
    await until(lambda: turns_on_disk(tmp_path) == dict.fromkeys(keys, 1), 10, first)
    if fault == "held":
        api.hold("sendMessage")  # the replies never reach Telegram: the kill comes first
    else:
        for person in PEOPLE:
            api.fail("sendMessage", 500, times=10**6, chat_id=person)  # retried until the kill
    for person in PEOPLE:
        api.send(person, QUESTION)
    await until(lambda: counted_messages(tmp_path) == 2 * len(PEOPLE), 30, first)  # every one answered
    assert turns_on_disk(tmp_path) == dict.fromkeys(keys, 1), "a session was written before its reply went out"
    assert journal(tmp_path) == (2 * len(PEOPLE), len(PEOPLE))  # the second questions wait, unanswered
    first.kill()
    assert await ended(first) == -signal.SIGKILL
    api.abort_held()
    api.faults.clear()
    assert all(len(api.sent(person)) == 1 for person in PEOPLE)  # nothing of the second round reached anyone

    second = await start(api, tmp_path, "second")
    await until(lambda: all(len(api.sent(person)) == 2 for person in PEOPLE), 30, second)
    for person in PEOPLE:
        api.send(person, QUESTION)
    await until(lambda: all(len(api.sent(person)) == 3 for person in PEOPLE), 30, second)
    second.send_signal(signal.SIGTERM)
    assert await ended(second) == 0, (tmp_path / "second.log").read_text()[-3000:]

    # Each person read the three passages in order: none skipped, and none twice (README allows one repeat per
    # chat, for a reply that reached Telegram just before a kill; here none had).
    assert {person: [m.text for m in api.sent(person)] for person in PEOPLE} == expected
    assert turns_on_disk(tmp_path) == dict.fromkeys(keys, 3)
    assert journal(tmp_path) == (3 * len(PEOPLE), 0)
