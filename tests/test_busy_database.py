"""The journal survives a busy database: another process holds SQLite's write lock while updates arrive and the
bot is killed. Nothing the journal did not take is confirmed to Telegram, so Telegram sends it again."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from tests.fake_bot_api import FakeBotApi
from tests.test_faults import LOCKER
from tests.test_telegram_process import ended, start

PEOPLE = range(9001, 9041)
IN_CRISIS = range(9041, 9046)


@contextlib.contextmanager
def write_lock(database: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the database's write lock until the block ends."""
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(database)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        yield locker
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            locker.communicate("\n", timeout=10)


@contextlib.asynccontextmanager
async def running(api: FakeBotApi, tmp_path: Path, name: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """The bot as a process, once it has answered a first message (so its database exists)."""
    process = await start(api, tmp_path, name)
    try:
        api.send(1, "hello")
        await api.wait_sent(1, len(api.sent(1)) + 1, timeout=30)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def unanswered(tmp_path: Path) -> int:
    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "bot.sqlite3")) as db:
        return db.execute("SELECT count(*) FROM updates WHERE raw IS NOT NULL").fetchone()[0]


async def test_a_batch_the_locked_journal_did_not_take_is_not_confirmed_and_survives_a_kill(
    api: FakeBotApi, tmp_path: Path
) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    async with running(api, tmp_path, "first") as first:
        with write_lock(database):
            api.hold("sendMessage")  # the replies do not reach Telegram before the kill
            ids = [api.send(person, "hello") for person in PEOPLE]
            ids += [api.send(person, "I want to die") for person in IN_CRISIS]
            await api.wait_for(lambda: set(ids) <= set(api.handed_out), timeout=30)
            polls = len(api.requests("getUpdates"))
            await api.wait_for(lambda: len(api.requests("getUpdates")) >= polls + 3, timeout=30)
            assert api.confirmed_below <= min(ids), "an update the journal did not take was confirmed"
            first.kill()
            assert await ended(first) == -signal.SIGKILL
        api.abort_held()
    assert unanswered(tmp_path) == 0  # the journal never took them: only Telegram still has them
    async with running(api, tmp_path, "second") as second:
        await api.wait_for(lambda: all(api.sent(person) for person in (*PEOPLE, *IN_CRISIS)), timeout=60)
        second.send_signal(signal.SIGTERM)
        assert await ended(second) == 0
    lost = [person for person in (*PEOPLE, *IN_CRISIS) if not api.sent(person)]
    crisis = [person for person in IN_CRISIS if any("988" in message.text for message in api.sent(person))]
    twice = sum(len(api.sent(person)) - 1 for person in PEOPLE)
    assert (lost, len(crisis), twice) == ([], 5, 0)  # 0 of 45 lost, 5 of 5 crisis replies, none twice
    assert unanswered(tmp_path) == 0


async def test_with_the_lock_held_and_no_kill_each_update_is_answered_once_and_journalled_after(
    api: FakeBotApi, tmp_path: Path
) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    async with running(api, tmp_path, "only") as bot:
        with write_lock(database):
            ids = [api.send(person, "hello") for person in PEOPLE]
            ids += [api.send(person, "I want to die") for person in IN_CRISIS]
            await api.wait_for(lambda: all(api.sent(person) for person in (*PEOPLE, *IN_CRISIS)), timeout=30)
            await asyncio.sleep(6)  # longer than SQLite's busy timeout: the journal's writes fail and retry
            assert api.confirmed_below <= min(ids)
        await api.wait_for(lambda: api.confirmed_below > max(ids), timeout=30)  # confirmed once journalled
        bot.send_signal(signal.SIGTERM)
        assert await ended(bot) == 0
    assert [len(api.sent(person)) for person in (*PEOPLE, *IN_CRISIS)] == [1] * 45  # none twice
    assert unanswered(tmp_path) == 0
    with contextlib.closing(sqlite3.connect(database)) as db:
        assert db.execute("SELECT count(*) FROM updates WHERE update_id >= ?", (min(ids),)).fetchone()[0] == 45
