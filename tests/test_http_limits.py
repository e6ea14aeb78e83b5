"""The bot's HTTP server bounds what one client can hold: raw sockets against the real webhook bot on 127.0.0.1.

A slow head or a body that never ends is closed after its limit, connections beyond the cap get a 503 and
are closed, and a flood of bad requests writes a few log lines; all the while a real update is answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot import http
from bot.config import RESERVED_FILES, HttpLimits, TelegramSettings
from bot.errors import ConfigError
from bot.logs import Throttle
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import WEBHOOK_SECRET, Running, telegram_bot
from tests.test_telegram_webhook import ALICE, post, update

SECRET = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
QUICK = HttpLimits(header_timeout=0.5, body_timeout=0.5, max_connections=8)


@contextlib.asynccontextmanager
async def connection(tg: Running) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", tg.server.port)  # type: ignore[union-attr]
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """What the server sent before it closed the connection (waits at most 20 s for it to close)."""
    try:
        return await asyncio.wait_for(reader.read(), timeout=20)
    except ConnectionResetError:
        return b""


async def until(check: Callable[[], bool]) -> None:
    """Wait (at most 10 s) until ``check()`` holds."""
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.01)


async def answered(tg: Running, update_id: int) -> None:
    """A real update through the webhook gets its 200 and its reply."""
    before = len(tg.api.sent(ALICE))
    assert await post(tg, update(update_id, "why do I miss him"), SECRET) == 200
    await tg.api.wait_for(lambda: len(tg.api.sent(ALICE)) > before, timeout=10)


def head(length: int) -> bytes:
    return (
        f"POST /telegram HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"X-Telegram-Bot-Api-Secret-Token: {WEBHOOK_SECRET}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


async def test_a_slow_head_and_a_body_that_never_ends_are_closed_while_updates_are_answered(
    api: FakeBotApi, tmp_path: Path
) -> None:
    async with telegram_bot(api, tmp_path, webhook=True, http_limits=QUICK) as tg:
        async with connection(tg) as (slow_reader, slow_writer), connection(tg) as (body_reader, body_writer):

            async def trickle() -> None:  # slowloris: a byte of the head every 0.05 s, forever
                for byte in head(100) * 100:
                    slow_writer.write(bytes([byte]))
                    await asyncio.sleep(0.05)

            trickling = asyncio.create_task(trickle())
            body_writer.write(head(1000) + b'{"update_id": 7001, "mess')  # and never the rest
            await body_writer.drain()
            await answered(tg, 7002)  # served meanwhile
            try:
                assert await closed_by_server(slow_reader) == b""
                assert await closed_by_server(body_reader) == b""
            finally:
                trickling.cancel()
        await answered(tg, 7003)
        assert tg.server is not None and tg.server.connections() <= 1
        assert await tg.store.record_updates([(7001, "{}")], 0.0) == [7001]  # the unfinished update was never taken


async def test_connections_beyond_the_cap_get_a_503_and_are_closed_and_the_server_still_serves(
    api: FakeBotApi, tmp_path: Path
) -> None:
    limits = HttpLimits(header_timeout=60, body_timeout=60, max_connections=8)
    async with telegram_bot(api, tmp_path, webhook=True, http_limits=limits) as tg:
        server = tg.server
        assert server is not None
        async with contextlib.AsyncExitStack() as idle:
            for _ in range(limits.max_connections):  # each holds a place and sends nothing
                await idle.enter_async_context(connection(tg))
            await until(lambda: server.connections() == limits.max_connections)
            for _ in range(3):
                async with connection(tg) as (reader, _writer):
                    answer = await closed_by_server(reader)
                    assert answer == http.REFUSAL and answer.startswith(b"HTTP/1.1 503 ")
            assert server.connections() == limits.max_connections
        await until(lambda: server.connections() == 0)
        await answered(tg, 7101)
        metrics = tg.bot.engine.metrics.registry.render()
        assert "unhooked_http_connections_refused_total 3" in metrics


THROTTLED = set(http.THROTTLED_LOGGERS)


async def test_a_flood_of_bad_requests_writes_a_few_log_lines(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kinds = {
        b"wrong secret": head(2).replace(WEBHOOK_SECRET.encode(), b"w" * len(WEBHOOK_SECRET)) + b"{}",
        b"not an update": head(2) + b"[]",
        b"malformed": b"POST /telegram HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"not json": head(2).replace(b"application/json", b"text/plain") + b"{}",
    }
    flood = 100
    async with telegram_bot(api, tmp_path, webhook=True, http_limits=QUICK) as tg:
        caplog.set_level(logging.INFO)
        started = time.monotonic()
        for _ in range(flood):
            for request in kinds.values():
                async with connection(tg) as (reader, writer):
                    writer.write(request)
                    await closed_by_server(reader) if request == kinds[b"malformed"] else await reader.readline()
        elapsed = time.monotonic() - started
        await answered(tg, 7201)
    lines = [record for record in caplog.records if record.name in THROTTLED and record.levelno >= logging.INFO]
    windows = 1 + int(elapsed // http.LOG_EVERY)
    assert 1 <= len(lines) <= len(kinds) * windows + 2, [record.getMessage() for record in lines]
    assert len(kinds) * flood > 50 * len(lines)  # 400 bad requests, a handful of lines


def test_the_throttle_lets_one_line_of_a_kind_through_per_window_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = Throttle(10.0, clock=lambda: now[0])
    logger = logging.getLogger("unhooked.test.throttle")
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    keep = Keep()
    logger.addHandler(keep)
    logger.propagate = False
    detach = throttle.attach([logger.name])
    try:
        for second in range(25):
            now[0] = float(second)
            logger.warning("refused a request from %s", f"10.0.0.{second}")
            logger.warning("another kind")
    finally:
        detach()
        logger.removeHandler(keep)
        logger.propagate = True
    assert records == [
        "refused a request from 10.0.0.0",
        "another kind",
        "refused a request from 10.0.0.10 (9 more like it in the 10 s before were not logged)",
        "another kind (9 more like it in the 10 s before were not logged)",
        "refused a request from 10.0.0.20 (9 more like it in the 10 s before were not logged)",
        "another kind (9 more like it in the 10 s before were not logged)",
    ]
    logger.warning("after detaching, every line")
    assert throttle not in logger.filters


TOKEN = {"TELEGRAM_BOT_TOKEN": "123456:ABCdef_ghi-jkl"}


def test_the_limits_have_defaults_and_are_read_from_the_environment() -> None:
    assert TelegramSettings.from_env(TOKEN).http_limits == HttpLimits(10.0, 10.0, 100)
    env = {
        **TOKEN,
        "UNHOOKED_HTTP_HEADER_TIMEOUT": "5",
        "UNHOOKED_HTTP_BODY_TIMEOUT": "2.5",
        "UNHOOKED_HTTP_MAX_CONNECTIONS": "50",
    }
    assert TelegramSettings.from_env(env).http_limits == HttpLimits(5.0, 2.5, 50)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("UNHOOKED_HTTP_HEADER_TIMEOUT", "soon", "UNHOOKED_HTTP_HEADER_TIMEOUT must be a number, e.g. "),
        ("UNHOOKED_HTTP_BODY_TIMEOUT", "0", "UNHOOKED_HTTP_BODY_TIMEOUT must be greater than zero"),
        ("UNHOOKED_HTTP_MAX_CONNECTIONS", "1.5", "UNHOOKED_HTTP_MAX_CONNECTIONS must be a whole number"),
        ("UNHOOKED_HTTP_MAX_CONNECTIONS", "100000000", "but this process may open only"),
    ],
)
def test_a_wrong_limit_stops_the_start_with_a_sentence(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        TelegramSettings.from_env({**TOKEN, name: value})
    if "may open only" in message:
        assert f"keeps {RESERVED_FILES} for itself" in str(raised.value) and "LimitNOFILE=" in str(raised.value)
