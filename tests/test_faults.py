"""Faults while the bot runs on Telegram: the database locked by another process, read-only or full, the content
folder removed, Telegram timing out or asking to wait. The bot keeps answering, crisis replies go first, and
the fault shows in /healthz, in /metrics and in the logs."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import aiosqlite
import pytest

from bot import spool as spool_module
from bot.adapters.telegram import health as telegram_health
from bot.models import Incoming
from bot.service import running_service
from bot.store.sqlite import SqliteStore
from tests.conftest import REPO
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import Running, free_port, settings_for, telegram_bot
from tests.test_metrics import counted

ALICE, BOB, CAROL, DAVE = 1001, 1002, 1003, 1004
CONTENT_FOLDERS = ("intents", "responses", "source", "policy", "safety")
LOCKER = (
    "import sqlite3, sys\n"
    "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "db.execute('BEGIN EXCLUSIVE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.readline()\n"
    "db.rollback()\n"
)
"""Another process that holds the database's write lock until told to let go."""


def _port(bot: Running | int) -> int:
    """The port of a bot's HTTP server: one running in this process, or a ``python -m bot run``'s setting."""
    return bot if isinstance(bot, int) else bot.server.port


async def health(bot: Running | int) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{_port(bot)}/healthz") as response,
    ):
        return response.status, json.loads(await response.text())


async def metrics(bot: Running | int) -> dict[str, dict[str, float]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{_port(bot)}/metrics") as response,
    ):
        return counted(await response.text())


async def health_becomes(bot: Running | int, status: int, timeout: float = 15.0) -> dict[str, Any]:
    """Poll /healthz until it answers ``status``; return its body."""
    async with asyncio.timeout(timeout):
        while True:
            found, body = await health(bot)
            if found == status:
                return body
            await asyncio.sleep(0.05)


def first_delivered(api: FakeBotApi, people: tuple[int, ...]) -> int:
    """Which of ``people`` got the first successfully sent message."""
    return next(
        c.params["chat_id"] for c in api.requests("sendMessage") if c.status == 200 and c.params["chat_id"] in people
    )


def logged(caplog: pytest.LogCaptureFixture, level: int = logging.ERROR) -> str:
    return "\n".join(record.getMessage() for record in caplog.records if record.levelno >= level)


async def test_a_database_locked_by_another_process(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with telegram_bot(api, tmp_path, http_port=free_port()) as tg:
        api.send(ALICE, "hello")
        await tg.settle()
        locker = await asyncio.create_subprocess_exec(
            sys.executable, "-c", LOCKER, str(tg.store.path), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert await locker.stdout.readline() == b"locked\n"
        try:
            api.send(BOB, "why do I miss him")
            api.send(CAROL, "I want to die")
            api.send(BOB, "tell me more")
            await api.wait_sent(CAROL, 1, timeout=15)
            assert "988" in api.sent(CAROL)[0].text
            assert first_delivered(api, (BOB, CAROL)) == CAROL, "the crisis reply waited behind an ordinary one"
            body = await health_becomes(tg, 503)
            assert body["failing"] == ["store"]
            assert any("no answer within" in line for line in body["checks"]["store"]["problems"])
        finally:
            locker.stdin.write(b"\n")
            await locker.wait()
        await tg.settle(timeout=60)
        assert len(api.sent(BOB)) == 2  # answered, late
        await tg.bot.engine.escalator.replay_spool()  # what the escalator does every 30 seconds
        [recorded] = await tg.store.escalations()
        assert recorded.category == "suicidal"
        api.send(DAVE, "hello")
        await tg.settle()
        await health_becomes(tg, 200)
        assert (await metrics(tg))["unhooked_store_errors_total"]
    assert "session read failed, starting afresh: no answer within" in logged(caplog, logging.WARNING)
    assert "database did not take escalation" in logged(caplog)


class ReadOnlyStore(SqliteStore):
    """The bot's database file opened read-only through a SQLite URI, as a read-only mount would make it."""

    async def open(self) -> None:
        self._db = await aiosqlite.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
        await self._db.execute("PRAGMA busy_timeout=1000")


async def test_a_read_only_database(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = settings_for(tmp_path).db_path
    async with SqliteStore(path):
        pass  # the file exists, migrated, as after an earlier run
    monkeypatch.setattr("bot.service.open_store", lambda database: ReadOnlyStore(database.path))
    async with telegram_bot(api, tmp_path, http_port=free_port()) as tg:
        api.send(BOB, "why do I miss him")
        api.send(CAROL, "I want to die")
        await tg.settle()
        assert "brain was hooked" in api.sent(BOB)[0].text
        assert "988" in api.sent(CAROL)[0].text
        body = await health_becomes(tg, 503)
        assert any("readonly database" in line for line in body["checks"]["store"]["problems"])
        spooled = (path.parent / "escalations.spool.jsonl").read_text()
        assert '"category": "suicidal"' in spooled  # not lost: it waits in the spool for a writable database
        assert (await metrics(tg))["unhooked_escalations_stored_total"] == {'{where="spool"}': 1.0}
    assert "readonly database" in logged(caplog)


class FullDisk(SimpleNamespace):
    """``os`` as the spool sees it, with a disk that has no space left."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def write(descriptor: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@asynccontextmanager
async def full_transaction(self: SqliteStore, *, forced: bool = False) -> AsyncIterator[None]:
    """Every write transaction fails as SQLite fails on a full disk (SQLITE_FULL); reads go on."""
    raise sqlite3.OperationalError("database or disk is full")
    yield


async def test_a_full_disk(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_bot(api, tmp_path, http_port=free_port()) as tg:
        api.send(ALICE, "hello")
        await tg.settle()
        monkeypatch.setattr(SqliteStore, "_transaction", full_transaction)
        monkeypatch.setattr(spool_module, "os", FullDisk())
        for number in range(20):
            api.send(BOB + 10 * number, f"why do I miss him {number}")
        api.send(CAROL, "I want to die")
        await tg.settle(timeout=30)
        assert "988" in api.sent(CAROL)[0].text
        assert all("brain was hooked" in api.sent(BOB + 10 * number)[0].text for number in range(20))
        body = await health_becomes(tg, 503)
        assert body["failing"] == ["store"]
        assert all("database or disk is full" in line for line in body["checks"]["store"]["problems"])
        assert (await metrics(tg))["unhooked_escalations_stored_total"] == {'{where="nowhere"}': 1.0}
        monkeypatch.undo()
    errors = logged(caplog)
    assert "database or disk is full" in errors and "No space left on device" in errors
    escalation_lines = [r.getMessage() for r in caplog.records if '"event": "escalation"' in r.getMessage()]
    assert len(escalation_lines) == 1, "the log line is what is left of an escalation stored nowhere"


def copy_content(into: Path) -> Path:
    for folder in CONTENT_FOLDERS:
        shutil.copytree(REPO / folder, into / folder)
    return into


async def test_the_content_folder_removed_while_running(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    content = copy_content(tmp_path / "content")
    async with telegram_bot(
        api, tmp_path, content_dir=content, core={"reload_seconds": 0.1}, http_port=free_port()
    ) as tg:
        shutil.rmtree(content)
        body = await health_becomes(tg, 503)
        assert body["failing"] == ["content"]
        [problem] = body["checks"]["content"]["problems"]
        assert "the last reload was refused, the previous content keeps serving" in problem
        api.send(BOB, "why do I miss him")
        api.send(CAROL, "I want to die")
        await tg.settle()
        assert "brain was hooked" in api.sent(BOB)[0].text  # the last good content
        assert "988" in api.sent(CAROL)[0].text
        assert (await metrics(tg))["unhooked_content_reloads_total"]['{result="refused"}'] >= 1
        copy_content(content)
        await health_becomes(tg, 200)
    assert "content reload refused" in logged(caplog)


async def test_telegram_timing_out_and_asking_to_wait(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(telegram_health, "LINK_GRACE", 0.0)
    async with telegram_bot(api, tmp_path, http_port=free_port(), request_timeout=0.3) as tg:
        api.slow("sendMessage", 1.0, times=2, chat_id=ALICE)
        api.send(ALICE, "hello")
        body = await health_becomes(tg, 503)
        assert body["checks"]["telegram"]["problems"][0].endswith("sendMessage: timed_out")
        await tg.settle()
        await asyncio.sleep(1.0)  # the timed-out requests Telegram still processed arrive too
        # Telegram (the fake) processed both timed-out requests too: the reply arrives three times. The bot
        # cannot know, and prefers a repeat to a loss (README: "When a reply can arrive twice").
        assert [m.text for m in api.sent(ALICE)] == [api.sent(ALICE)[0].text] * 3
        await health_becomes(tg, 200)

        api.fail("sendMessage", 429, retry_after=1, chat_id=BOB)
        api.send(BOB, "why do I miss him")
        await api.wait_for(lambda: [c.status for c in api.requests("sendMessage", BOB)] == [429], timeout=10)
        api.send(DAVE, "hello")
        api.send(CAROL, "I want to die")  # all sending is paused for Telegram's 429
        await tg.settle(timeout=30)
        paused = next(n for n, c in enumerate(api.calls) if c.status == 429)
        after = [c.params["chat_id"] for c in api.calls[paused:] if c.method == "sendMessage" and c.status == 200]
        assert after[0] == CAROL and set(after[:4]) >= {BOB, CAROL, DAVE}
        errors = (await metrics(tg))["unhooked_telegram_errors_total"]
        assert errors['{method="sendMessage",kind="timed_out"}'] == 2
        assert errors['{method="sendMessage",kind="retry_after"}'] == 1
    warnings = logged(caplog, logging.WARNING)
    assert "sendMessage failed (TimedOut)" in warnings and "Telegram asked to wait" in warnings


async def test_crisis_replies_go_out_with_no_database_at_all(tmp_path: Path) -> None:
    """The terminal path: a database folder that cannot be created still gives crisis replies."""
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("in the way")
    settings = dataclasses.replace(settings_for(tmp_path), db_path=blocked / "bot.sqlite3")
    async with running_service(settings) as service:
        engine = service.engine
        outcome = await engine.handle(Incoming("1", "I want to die", "test"))
        assert "988" in outcome.replies[0].text
        faults = engine.faults.of("store")
        assert sorted(faults) == ["database", "unstored escalations"]
        assert "the database could not be opened at start" in faults["database"].detail
        assert "1 escalations stored nowhere" in faults["unstored escalations"].detail  # no folder for a spool either
        assert not service.store.durable  # a stand-in in memory: sessions and the journal until the stop
