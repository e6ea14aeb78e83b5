"""The real bot (PTB Application, our sender, journal and lanes) running in-process against ``FakeBotApi``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bot.adapters.telegram import TelegramBot, run_telegram
from bot.adapters.telegram.render import render
from bot.config import Settings, TelegramSettings
from bot.content import Catalog
from bot.engine import Engine
from bot.http import HttpServer
from bot.models import Incoming
from bot.store import Store
from bot.store.memory import MemoryStore
from tests.conftest import REPO, SECRET
from tests.fake_bot_api import FakeBotApi, parse_html
from tests.front import free_port

OPERATORS = -1001234567890
"""The operators' chat, where escalation alerts go."""
OPERATOR = 5555
ADMIN = 4242
WEBHOOK_SECRET = "webhook-secret-0123456789"  # noqa: S105 (made up for tests)


def settings_for(tmp_path: Path, content_dir: Path = REPO, db_url: str | None = None) -> Settings:
    """Core settings on a fresh SQLite file, or on PostgreSQL at ``db_url`` (the secret and spool stay in data/)."""
    return Settings(db_path=tmp_path / "data" / "bot.sqlite3", content_dir=content_dir, secret="s" * 32, db_url=db_url)


def telegram_for(api: FakeBotApi, **changes: Any) -> TelegramSettings:
    """Telegram settings tuned so tests wait on nothing: short polls, no pacing, short back-off."""
    base = TelegramSettings(
        token=api.token,
        api_base_url=api.base_url,
        operator_chat_id=OPERATORS,
        admin_ids=frozenset({ADMIN}),
        poll_timeout=0.5,
        request_timeout=5.0,
        sends_per_second=1000.0,
        retry_max_delay=0.2,
        shutdown_grace=5.0,
    )
    return dataclasses.replace(base, **changes)


async def transcripts(catalog: Catalog, said: dict[int, list[str]]) -> dict[int, list[str]]:
    """What each person should see on Telegram, in order: their lines through an engine of their own."""
    reference = Engine(MemoryStore(), SECRET, catalog)
    expected = {}
    for person, lines in said.items():
        expected[person] = [
            parse_html(message.html)
            for line in lines
            for reply in (await reference.handle(Incoming(str(person), line, "telegram"))).replies
            for message in render(reply)
        ]
    await reference.aclose()
    return expected


@dataclass
class Running:
    """A bot running in this event loop; stopped when the ``telegram_bot`` block ends."""

    api: FakeBotApi
    bot: TelegramBot
    server: HttpServer | None
    task: asyncio.Task[int]
    stop: asyncio.Event

    @property
    def store(self) -> Store:
        """The store the bot uses (the service hands the bot one store behind every interface)."""
        return cast(Store, self.bot.escalation_log)

    async def answered(self, count: int, timeout: float = 10.0) -> None:
        """Wait until the bot has answered ``count`` updates since it started."""
        async with asyncio.timeout(timeout):
            while self.bot.answered < count:
                if self.task.done():
                    self.task.result()
                await asyncio.sleep(0.01)

    async def settle(self, timeout: float = 10.0) -> None:
        """Wait until the bot has answered every update queued at the fake so far."""
        await self.answered(self.api.enqueued, timeout)


@asynccontextmanager
async def telegram_bot(
    api: FakeBotApi,
    tmp_path: Path,
    *,
    webhook: bool = False,
    store: Store | None = None,
    content_dir: Path = REPO,
    db_url: str | None = None,
    core: dict[str, Any] | None = None,
    **changes: Any,
) -> AsyncIterator[Running]:
    """Run the bot against ``api`` for the duration of the block, then stop it cleanly.

    ``db_url`` puts its data on a PostgreSQL server instead of a SQLite file; ``core`` changes the core settings
    (e.g. ``reload_seconds``), ``changes`` the Telegram settings.
    """
    api.group(OPERATORS, "Operators")
    if webhook:
        port = free_port()
        changes = {
            "webhook_url": f"http://127.0.0.1:{port}/telegram",
            "webhook_secret": WEBHOOK_SECRET,
            "http_port": port,
            **changes,
        }
    stop = asyncio.Event()
    ready: asyncio.Future[tuple[TelegramBot, HttpServer | None]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_telegram(
            dataclasses.replace(settings_for(tmp_path, content_dir, db_url), **(core or {})),
            telegram_for(api, **changes),
            webhook=webhook,
            stop=stop,
            store=store,
            started=lambda bot, server: ready.set_result((bot, server)),
        )
    )
    done, _ = await asyncio.wait({task, ready}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()
    if ready not in done:
        task.cancel()
        raise TimeoutError("the bot did not start within 10 seconds")
    bot, server = ready.result()
    running = Running(api, bot, server, task, stop)
    try:
        yield running
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 15)
