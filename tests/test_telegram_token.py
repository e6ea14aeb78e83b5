"""Telegram failures that are not the network: a token revoked while crisis replies are in flight, and a second
instance on the same token. Nothing is lost, one instance answers, and health says what is wrong."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp

from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import free_port, telegram_bot
from tests.test_telegram_process import ended, journal, start

IN_CRISIS = (8001, 8002, 8003)
CALM = (8011, 8012, 8013)


async def healthz(port: int) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/healthz") as response:
        return response.status, json.loads(await response.text())


async def failing(port: int, check: str, timeout: float = 15.0) -> list[str]:
    """Poll /healthz until ``check`` fails; return its problems."""
    async with asyncio.timeout(timeout):
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                status, body = await healthz(port)
                if status == 503 and not body["checks"].get(check, {"ok": True})["ok"]:
                    return body["checks"][check]["problems"]
            await asyncio.sleep(0.1)


async def test_a_token_revoked_with_crisis_replies_in_flight_loses_none_of_them(
    api: FakeBotApi, tmp_path: Path
) -> None:
    for person in IN_CRISIS:
        api.send(person, "I want to die")
    for person in CALM:
        api.send(person, "hello")
    api.hold("sendMessage")  # the replies reach Telegram only after the token is revoked
    port = free_port()
    first = await start(api, tmp_path, "first", UNHOOKED_HTTP_PORT=str(port))
    try:
        await api.wait_for(lambda: api.held >= 1, timeout=30)
        api.revoke()
        api.release()
        problems = await failing(port, "token")
        assert "refused TELEGRAM_BOT_TOKEN" in problems[0] and "restart" in problems[0]
        confirmed = api.confirmed_below
        await asyncio.sleep(1.0)  # a bot still polling would confirm (or be refused) meanwhile
        assert first.returncode is None, "the bot stays up, unhealthy, until it is stopped"
    finally:
        first.send_signal(signal.SIGTERM)
        assert await ended(first) == 0
    log = (tmp_path / "first.log").read_text()
    assert "CRITICAL" in log and "refused TELEGRAM_BOT_TOKEN" in log and api.token not in log
    assert api.confirmed_below == confirmed
    assert journal(tmp_path) == (6, 6), "every update waits in the journal, text and all"
    assert all(api.sent(person) == [] for person in (*IN_CRISIS, *CALM))

    second = await start(api, tmp_path, "second")  # the operator set the new token and restarted
    try:
        await api.wait_for(lambda: all(api.sent(person) for person in (*IN_CRISIS, *CALM)), timeout=30)
        async with asyncio.timeout(10):
            while journal(tmp_path) != (6, 0):
                await asyncio.sleep(0.05)
    finally:
        second.send_signal(signal.SIGTERM)
        assert await ended(second) == 0
    crisis_replies = [message for person in IN_CRISIS for message in api.sent(person)]
    assert len(crisis_replies) == 3 and all("988" in message.text for message in crisis_replies)  # 3 of 3
    assert [len(api.sent(person)) for person in CALM] == [1, 1, 1]


def answered_ids(folder: Path) -> set[int]:
    with contextlib.closing(sqlite3.connect(folder / "data" / "bot.sqlite3")) as db:
        return {row[0] for row in db.execute("SELECT update_id FROM updates WHERE answered_at IS NOT NULL")}


async def test_a_second_instance_on_the_token_is_reported_and_only_one_answers(api: FakeBotApi, tmp_path: Path) -> None:
    people = range(8101, 8121)
    ports = free_port(), free_port()
    async with telegram_bot(api, tmp_path / "a", http_port=ports[0]) as one:
        for person in people:
            api.send(person, "hello")
        await one.settle()
        async with telegram_bot(api, tmp_path / "b", http_port=ports[1]) as two:
            problems = await asyncio.wait_for(next_failing(ports, "token"), 15)
            assert "409 Conflict: another process polls with this token" in problems
            for turn in range(5):
                for person in people:
                    api.send(person, ("thanks", "who are you", "bye", "help", "hello")[turn])
            async with asyncio.timeout(20):
                while one.bot.answered + two.bot.answered < 120:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # a second answer to any of them would come now
            statuses = [(await healthz(port))[0] for port in ports]
    first, second = answered_ids(tmp_path / "a"), answered_ids(tmp_path / "b")
    assert len(first | second) == 120 and first & second == set(), "each update answered by one instance only"
    assert sorted(statuses) == [200, 503], "the paused instance reports it, the one answering stays healthy"
    assert sum(len(api.sent(person)) for person in people) == sum(
        1 for call in api.requests("sendMessage") if call.status == 200 and call.params["chat_id"] in people
    )


async def next_failing(ports: tuple[int, int], check: str) -> str:
    """The first problem either instance's /healthz reports under ``check``."""
    while True:
        for port in ports:
            status, body = await healthz(port)
            if status == 503 and not body["checks"].get(check, {"ok": True})["ok"]:
                return body["checks"][check]["problems"][0]
        await asyncio.sleep(0.1)


async def test_a_webhook_set_elsewhere_while_polling_is_reported(api: FakeBotApi, tmp_path: Path) -> None:
    port = free_port()
    async with telegram_bot(api, tmp_path, http_port=port) as tg:
        api.webhook = {"url": "https://elsewhere.example/hook"}  # another instance, in webhook mode
        problems = await failing(port, "token")
        assert "409 Conflict" in problems[0] and "set a webhook" in problems[0]
        assert tg.task.done() is False
