"""``python -m bot run`` as a real process against the fake Bot API: stops, crashes and bad settings."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.adapters.telegram.outbound import SEND_CONNECTIONS
from bot.content import Catalog
from tests import processes
from tests.conftest import REPO
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import transcripts
from tests.test_cli import run

LINES = ["hello", "thanks", "who are you", "asdfgh qwerty", "help", "bye"]
"""Lines whose replies do not depend on the person's session, so that a transcript is easy to foresee (a crash
no longer moves a session past a reply nobody got: ``tests/test_sessions_after_delivery.py``)."""


def environment(api: FakeBotApi, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        **api.env(),
        "UNHOOKED_DB": str(tmp_path / "data" / "bot.sqlite3"),
        "UNHOOKED_SPOOL_DIR": str(tmp_path / "second-spool"),  # not the machine's /dev/shm
        "UNHOOKED_SECRET": "s" * 32,
        "UNHOOKED_POLL_TIMEOUT": "0.5",
        "UNHOOKED_SENDS_PER_SECOND": "1000",
        "UNHOOKED_RETRY_MAX_DELAY": "0.2",
        "UNHOOKED_LOG_LEVEL": "INFO",
    }


async def start(api: FakeBotApi, tmp_path: Path, name: str, *args: str, **extra: str) -> asyncio.subprocess.Process:
    """``python -m bot run [args]`` against ``api``, logging to ``<name>.log``; ``extra`` adds settings."""
    log = (tmp_path / f"{name}.log").open("wb")
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "run",
            *args,
            cwd=REPO,
            env={**environment(api, tmp_path), **extra},
            stdout=log,
            stderr=log,
        )
    finally:
        log.close()
    processes.STARTED.append(process)  # killed when the test ends, if it fails before stopping it
    return process


async def ended(process: asyncio.subprocess.Process) -> int:
    async with asyncio.timeout(30):
        return await process.wait()


def journal(tmp_path: Path) -> tuple[int, int]:
    """(updates journalled, updates whose text is still kept) in the bot's database."""
    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "bot.sqlite3")) as db:
        return db.execute("SELECT count(*), count(raw) FROM updates").fetchone()


def delivered_to_people(api: FakeBotApi, people: range) -> int:
    return sum(len(api.sent(person)) for person in people)


async def test_a_killed_bot_loses_nothing_and_answers_nothing_twice(
    api: FakeBotApi, tmp_path: Path, catalog: Catalog
) -> None:
    people = range(3001, 3031)
    said = {person: [LINES[(person + turn) % len(LINES)] for turn in range(10)] for person in people}
    expected = await transcripts(catalog, said)
    sender_of = {api.send(person, said[person][turn]): person for turn in range(10) for person in people}
    api.hold("getUpdates", after=2)  # two batches of 100 reach the bot; the request confirming the second waits

    def stuck() -> int:
        """Chats with fetched updates still to answer: each ends up with one sendMessage held."""
        fetched = dict.fromkeys(people, 0)
        for update_id in set(api.handed_out):
            fetched[sender_of[update_id]] += 1
        return sum(len(api.sent(person)) < fetched[person] for person in people)

    first = await start(api, tmp_path, "first")
    await api.wait_for(lambda: delivered_to_people(api, people) >= 60, timeout=30)
    api.hold("sendMessage")  # from now on nothing is sent: the chats stop half-way through their batches
    # Each stuck chat has one sendMessage waiting: at the fake, or in the sender's queue once its connections
    # are all taken. Plus the held getUpdates.
    await api.wait_for(lambda: api.held == min(stuck(), SEND_CONNECTIONS) + 1, timeout=30)
    delivered = delivered_to_people(api, people)
    async with asyncio.timeout(10):  # answered marks are written in batches, moments after the replies
        while journal(tmp_path) != (200, 200 - delivered):
            await asyncio.sleep(0.02)
    first.kill()
    assert await ended(first) == -signal.SIGKILL
    api.abort_held()  # Telegram never processed what was in flight: those sends and the confirmation
    answered_before = delivered_to_people(api, people)
    assert 60 <= answered_before < 200
    assert journal(tmp_path) == (200, 200 - answered_before)  # both batches journalled; the unanswered keep text

    second = await start(api, tmp_path, "second")
    await api.wait_for(lambda: delivered_to_people(api, people) >= 300, timeout=60)
    second.send_signal(signal.SIGTERM)
    assert await ended(second) == 0, (tmp_path / "second.log").read_text()

    for person in people:
        assert [message.text for message in api.sent(person)] == expected[person]
    assert journal(tmp_path) == (300, 0)  # every text gone once answered; the ids stay to deduplicate
    delivered = [call for call in api.requests("sendMessage") if call.status == 200]
    assert len(delivered) == 300
    assert len(api.handed_out) > len(set(api.handed_out)), "Telegram sent the unconfirmed batch again"
    log = (tmp_path / "second.log").read_text()
    assert "answering" in log and "left unanswered by the last run" in log


async def test_sigterm_answers_what_was_fetched_and_the_next_start_answers_nothing_again(
    api: FakeBotApi, tmp_path: Path
) -> None:
    people = range(3101, 3105)
    for turn in range(5):
        for person in people:
            last = api.send(person, LINES[turn])
    api.slow("sendMessage", 0.2, times=1000)
    bot = await start(api, tmp_path, "first")
    await api.wait_for(lambda: api.delivered >= last and bool(api.requests("sendMessage")), timeout=30)
    bot.send_signal(signal.SIGTERM)
    assert await ended(bot) == 0, (tmp_path / "first.log").read_text()
    assert [len(api.sent(person)) for person in people] == [5, 5, 5, 5]
    assert api.confirmed_below > last

    api.faults.clear()
    again = await start(api, tmp_path, "again")
    api.send(3101, "thanks")
    await api.wait_sent(3101, 6, timeout=30)  # an old update coming again would be answered before this one
    again.send_signal(signal.SIGINT)
    assert await ended(again) == 0, (tmp_path / "again.log").read_text()
    assert [len(api.sent(person)) for person in people] == [6, 5, 5, 5]


async def test_a_refused_token_stops_the_bot_with_a_sentence_that_does_not_repeat_it(
    api: FakeBotApi, tmp_path: Path
) -> None:
    env = {**environment(api, tmp_path), "TELEGRAM_BOT_TOKEN": "999999:refused-token-value"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "run", cwd=REPO, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 1
    assert "unhooked: Telegram refused TELEGRAM_BOT_TOKEN" in err.decode()
    assert "refused-token-value" not in err.decode() and "Traceback" not in err.decode()


@pytest.mark.parametrize(
    ("changes", "args", "message"),
    [
        ({"TELEGRAM_BOT_TOKEN": ""}, [], "unhooked: TELEGRAM_BOT_TOKEN is not set; set it to the token @BotFather"),
        ({"TELEGRAM_BOT_TOKEN": "not a token"}, [], "unhooked: TELEGRAM_BOT_TOKEN does not look like a bot token"),
        ({}, ["--webhook"], "unhooked: webhook mode needs UNHOOKED_WEBHOOK_URL"),
        ({"UNHOOKED_ADMIN_IDS": "12,@me"}, [], "unhooked: UNHOOKED_ADMIN_IDS must be numeric Telegram user ids"),
    ],
    ids=["no-token", "bad-token", "webhook-without-url", "bad-admin"],
)
def test_bad_settings_stop_the_bot_with_one_sentence(
    tmp_path: Path, changes: dict[str, str], args: list[str], message: str
) -> None:
    env = {"TELEGRAM_BOT_TOKEN": "123:abc", "UNHOOKED_WEBHOOK_URL": "", **changes}
    result = run("run", *args, env=env, tmp=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith(message), result.stderr


async def test_a_bot_a_test_leaves_running_is_killed_when_the_test_ends(api: FakeBotApi, tmp_path: Path) -> None:
    process = await start(api, tmp_path, "left")
    assert processes.STARTED[-1] is process
    assert processes.kill_left_running() == [process.pid]  # what the autouse fixture does after every test
    assert await ended(process) == -signal.SIGKILL
    assert not processes.STARTED
