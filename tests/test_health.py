"""Health and metrics over HTTP: /healthz says which check fails, /metrics counts, on the bot's one HTTP server."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.adapters.telegram import health as telegram_health
from bot.crisis import MODEL
from bot.engine import Engine
from bot.errors import ConfigError, StoreError
from bot.health import CONTENT, STORE, Faults, Health
from bot.service import Service
from bot.store.memory import MemoryStore
from tests.conftest import SECRET, Clock, shows_id
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import Running, free_port, telegram_bot
from tests.test_metrics import counted, parse

ALICE = 1001


async def get(tg: Running, path: str, method: str = "GET") -> tuple[int, str, str]:
    """(status, content type, body) of a request to the bot's HTTP server."""
    url = f"http://127.0.0.1:{tg.server.port}{path}"
    async with aiohttp.ClientSession() as session, session.request(method, url) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


async def health(tg: Running) -> tuple[int, dict[str, Any]]:
    status, kind, body = await get(tg, "/healthz")
    assert kind.startswith("application/json")
    return status, json.loads(body)


class DownPing(MemoryStore):
    async def ping(self) -> None:
        raise StoreError("could not read the database in /data/unhooked.sqlite3: disk I/O error")


async def test_a_fault_counts_only_once_it_outlasts_its_grace_and_clears_when_the_work_succeeds() -> None:
    clock = Clock()
    faults = Faults(clock)

    async def fine() -> None:
        return None

    checks = Health(faults, ping=fine, content=lambda: {"ok": True}, grace={"telegram": 60.0}, clock=clock)
    faults.fail("telegram", "sending", "sendMessage: server_error")
    ok, body = await checks.report()
    assert ok and body["checks"]["telegram"]["recovering"] == [
        "sending failing for 0 s (1 times): sendMessage: server_error"
    ]
    clock.advance(61)
    faults.fail("telegram", "sending", "sendMessage: timed_out")
    ok, body = await checks.report()
    assert not ok and body["failing"] == ["telegram"]
    assert body["checks"]["telegram"]["problems"] == ["sending failing for 61 s (2 times): sendMessage: timed_out"]
    faults.clear("telegram", "sending")
    assert (await checks.report())[0]


async def test_an_unreadable_store_and_missing_content_fail_their_checks() -> None:
    store = DownPing()
    engine = Engine(store, SECRET, None)
    ok, body = await Service(engine, store).health().report()
    assert not ok and body["failing"] == [STORE, CONTENT]
    assert body["checks"][STORE]["problems"] == [
        "the database cannot be read: could not read the database in /data/unhooked.sqlite3: disk I/O error"
    ]
    assert "no content is loaded" in body["checks"][CONTENT]["problems"][0]
    assert body["checks"]["process"]["ok"] is True
    await engine.aclose()


async def test_polling_with_a_port_serves_health_and_metrics(api: FakeBotApi, tmp_path: Path) -> None:
    async with telegram_bot(api, tmp_path, http_port=free_port()) as tg:
        api.send(ALICE, "why do I miss him")
        api.send(ALICE, "I want to die")
        await tg.settle()
        status, body = await health(tg)
        assert status == 200 and body["status"] == "ok"
        assert set(body["checks"]) == {
            "process",
            STORE,
            CONTENT,
            MODEL,
            telegram_health.TELEGRAM,
            telegram_health.ACCESS,
        }
        assert body["checks"][CONTENT]["intents"] == len(tg.bot.engine.catalog.intents)
        status, kind, text = await get(tg, "/metrics")
        assert status == 200 and kind.startswith("text/plain; version=0.0.4")
        samples = counted(text)
        assert samples["unhooked_messages_total"] == {'{channel="telegram"}': 2.0}
        assert samples["unhooked_intent_matches_total"] == {'{intent="miss_them"}': 1.0}
        assert samples["unhooked_escalations_total"] == {'{level="crisis",category="suicidal"}': 1.0}
        assert samples["unhooked_replies_sent_total"] == {'{kind="answer"}': 1.0, '{kind="crisis"}': 1.0}
        assert samples["unhooked_telegram_updates_total"] == {"": 2.0}
        assert samples["unhooked_telegram_update_seconds"]["_count"] == 2.0
        assert samples["unhooked_alerts_total"] == {'{result="sent"}': 1.0}
        assert parse(text)["unhooked_alerts_pending"] == {"": 0.0}
        served = text + json.dumps(body)
        assert not shows_id(served, ALICE)
        for leak in ("miss him", "want to die", api.token):
            assert leak not in served
        assert (await get(tg, "/healthz", "POST"))[0] == 405
        assert (await get(tg, "/nothing-here"))[0] == 404


async def test_the_adapters_series_start_at_zero_and_handler_errors_are_counted(
    api: FakeBotApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_bot(api, tmp_path, http_port=free_port()) as tg:
        samples = parse((await get(tg, "/metrics"))[2])
        assert samples["unhooked_messages_total"] == {'{channel="telegram"}': 0.0}
        assert samples["unhooked_telegram_errors_total"]['{method="sendMessage",kind="server_error"}'] == 0.0
        assert samples["unhooked_telegram_errors_total"]['{method="getUpdates",kind="network"}'] == 0.0
        assert samples["unhooked_telegram_retries_total"] == {
            '{method="sendMessage"}': 0.0,
            '{method="getUpdates"}': 0.0,
        }
        assert samples["unhooked_store_errors_total"]['{operation="journal_write"}'] == 0.0
        assert samples["unhooked_store_errors_total"]['{operation="journal_mark"}'] == 0.0
        assert samples["unhooked_handler_errors_total"]['{part="telegram"}'] == 0.0

        async def broken(incoming: object) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(tg.bot.engine, "handle", broken)
        api.send(ALICE, "hello")
        await tg.settle()
        assert counted((await get(tg, "/metrics"))[2])["unhooked_handler_errors_total"] == {'{part="telegram"}': 1.0}


async def test_polling_without_a_port_opens_no_server(tg: Running) -> None:
    assert tg.server is None


async def test_webhook_mode_serves_health_beside_the_webhook(api: FakeBotApi, tmp_path: Path) -> None:
    async with telegram_bot(api, tmp_path, webhook=True) as tg:
        api.send(ALICE, "hello")
        await tg.settle()
        assert api.webhook["url"] == f"http://127.0.0.1:{tg.server.port}/telegram"
        status, body = await health(tg)
        assert status == 200 and body["status"] == "ok"
        assert counted((await get(tg, "/metrics"))[2])["unhooked_messages_total"] == {'{channel="telegram"}': 1.0}


async def test_telegram_failing_longer_than_the_grace_fails_health_and_recovers(
    api: FakeBotApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(telegram_health, "LINK_GRACE", 0.0)
    async with telegram_bot(api, tmp_path, http_port=free_port()) as tg:
        api.fail("sendMessage", 502, times=3, chat_id=ALICE)
        api.send(ALICE, "hello")
        await api.wait_for(lambda: len([c for c in api.requests("sendMessage", ALICE) if c.status == 502]) == 3)
        status, body = await health(tg)
        assert status == 503 and body["failing"] == [telegram_health.TELEGRAM]
        assert body["checks"]["telegram"]["problems"][0].startswith("sending failing for")
        assert body["checks"]["telegram"]["problems"][0].endswith("sendMessage: server_error")
        await tg.settle()
        assert (await health(tg))[0] == 200
        samples = counted((await get(tg, "/metrics"))[2])
        assert samples["unhooked_telegram_errors_total"] == {'{method="sendMessage",kind="server_error"}': 3.0}
        assert samples["unhooked_telegram_retries_total"] == {'{method="sendMessage"}': 3.0}


async def test_a_port_in_use_stops_the_bot_with_a_sentence(api: FakeBotApi, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"cannot listen on 127\.0\.0\.1:{port} .*set UNHOOKED_HTTP_PORT"):
            async with telegram_bot(api, tmp_path, http_port=port):
                pass
