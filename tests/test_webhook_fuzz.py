"""Bad input at the webhook, generated: malformed updates, any bytes, wrong content types, huge bodies. Every request
gets a clear 4xx or a 200, never a 500, memory stays bounded, and the bot goes on answering afterwards.

Example counts come from the hypothesis profile in conftest.py (HYPOTHESIS_PROFILE=ci runs more).
"""

from __future__ import annotations

import asyncio
import io
import json
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.adapters.telegram.webhook import SECRET_HEADER
from bot.http import MAX_BODY_BYTES
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import WEBHOOK_SECRET, Running, telegram_bot

ALICE = 1001
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
MESSAGE_FIELDS = st.sampled_from(["message_id", "from", "chat", "date", "text", "entities", "caption", "photo"])
UPDATE_LIKE = st.fixed_dictionaries(
    {"update_id": st.one_of(st.integers(), st.text(max_size=5), st.none())},
    optional={
        "message": st.dictionaries(MESSAGE_FIELDS, JSON_VALUES, max_size=6),
        "callback_query": st.dictionaries(st.sampled_from(["id", "from", "data", "message"]), JSON_VALUES),
        "edited_message": JSON_VALUES,
    },
)
BODIES = st.one_of(
    st.binary(max_size=2000),
    JSON_VALUES.map(lambda value: json.dumps(value).encode()),
    UPDATE_LIKE.map(lambda value: json.dumps(value).encode()),
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "",
    ]
)
SECRETS = st.sampled_from([WEBHOOK_SECRET, WEBHOOK_SECRET, "", "wrong-secret-0123456789", WEBHOOK_SECRET + "x"])


@dataclass
class Webhook:
    """A bot in webhook mode on one event loop that outlives the generated examples."""

    runner: asyncio.Runner
    tg: Running
    session: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return self.tg.api.webhook["url"]

    def post(self, body: bytes, content_type: str, secret: str) -> tuple[int, str]:
        headers = {"Content-Type": content_type} if content_type else {}
        if secret:
            headers[SECRET_HEADER] = secret

        async def send() -> tuple[int, str]:
            async with self.session.post(self.url, data=body, headers=headers) as response:
                return response.status, await response.text()

        return self.runner.run(send())


async def _start(stack: AsyncExitStack, folder: Path) -> tuple[Running, aiohttp.ClientSession]:
    api = await stack.enter_async_context(FakeBotApi())
    api.private(ALICE)
    tg = await stack.enter_async_context(telegram_bot(api, folder, webhook=True))
    session = await stack.enter_async_context(aiohttp.ClientSession())
    return tg, session


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    folder = tmp_path_factory.mktemp("webhook-fuzz")
    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        tg, session = runner.run(_start(stack, folder))
        yield Webhook(runner, tg, session)
        runner.run(stack.aclose())


def update(update_id: int, text: str) -> bytes:
    chat = {"id": ALICE, "first_name": "Alice", "type": "private"}
    person = {"id": ALICE, "is_bot": False, "first_name": "Alice"}
    message = {"message_id": update_id, "from": person, "chat": chat, "date": 1_800_000_000, "text": text}
    return json.dumps({"update_id": update_id, "message": message}).encode()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=BODIES, content_type=CONTENT_TYPES, secret=SECRETS)
def test_anything_posted_gets_a_clear_answer_and_never_a_server_error(
    webhook: Webhook, body: bytes, content_type: str, secret: str
) -> None:
    status, text = webhook.post(body, content_type, secret)
    if secret != WEBHOOK_SECRET:
        assert (status, text) == (403, "403 Forbidden: the secret token is missing or wrong\n")
    elif content_type.split(";")[0].strip().lower() != "application/json":
        assert (status, text) == (415, "415 Unsupported Media Type: send the update as application/json\n")
    else:
        assert status in (200, 400), (status, text)
        if status == 400:
            assert text == "400 Bad Request: the body is not a Telegram update\n"
    assert not webhook.tg.task.done(), "the bot stopped"


def test_the_bot_still_answers_after_the_fuzzing(webhook: Webhook) -> None:
    status, _ = webhook.post(update(990_001, "why do I miss him"), "application/json", WEBHOOK_SECRET)
    assert status == 200

    async def answered() -> list[str]:
        await webhook.tg.api.wait_for(
            lambda: any("brain was hooked" in m.text for m in webhook.tg.api.sent(ALICE)), timeout=10
        )
        return [m.text for m in webhook.tg.api.sent(ALICE)]

    assert webhook.runner.run(answered())


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_huge_body_is_refused_before_it_is_read(webhook: Webhook, chunked: bool) -> None:
    huge = b'{"update_id": 1, "message": {"text": "' + b"a" * (5 * MAX_BODY_BYTES) + b'"}}'

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(huge), 65536):
            yield huge[start : start + 65536]

    async def send() -> int | None:
        headers = {"Content-Type": "application/json", SECRET_HEADER: WEBHOOK_SECRET}
        try:
            data = chunks() if chunked else io.BytesIO(huge)
            async with webhook.session.post(webhook.url, data=data, headers=headers) as r:
                return r.status
        except aiohttp.ClientError:
            return None  # the server closed the connection while the client was still sending

    tracemalloc.start()
    try:
        status = webhook.runner.run(send())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status in (400, None)
    assert peak < len(huge) + 2 * MAX_BODY_BYTES, f"the server kept {peak} bytes for one refused request"
    assert webhook.post(update(990_002, "thanks"), "application/json", WEBHOOK_SECRET)[0] == 200


@pytest.mark.parametrize("update_id", ["1", True, -1, 2**63, 2**80, 1.0])
def test_an_update_id_that_is_not_a_whole_number_a_column_can_hold_is_refused(
    webhook: Webhook, update_id: object
) -> None:
    body: dict[str, Any] = json.loads(update(1, "hello"))
    body["update_id"] = update_id
    assert webhook.post(json.dumps(body).encode(), "application/json", WEBHOOK_SECRET)[0] == 400
    assert webhook.post(update(2**63 - 1, "hello"), "application/json", WEBHOOK_SECRET)[0] == 200
