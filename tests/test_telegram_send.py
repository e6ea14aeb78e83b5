"""The sender on its own: crisis requests first, pacing, waiting out 429s, retries and what is never retried."""

from __future__ import annotations

import asyncio
import datetime as dtm

import pytest
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from bot.adapters.telegram.outbound import ALERT, CRISIS, HURRIED, Send, Sender


class Telegram:
    """Stands in for the HTTP call PTB hands the sender: records the order and fails as told."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.order: list[str] = []

    def request(self, name: str):
        async def call() -> dict:
            if self.failures:
                raise self.failures.pop(0)
            self.order.append(name)
            return {"ok": True}

        return call


async def send(sender: Sender, telegram: Telegram, name: str, how: Send | None = None) -> dict:
    return await sender.process_request(telegram.request(name), (), {}, "sendMessage", {}, how)


async def test_after_a_pause_crisis_goes_first_then_alerts_then_the_rest_in_order() -> None:
    sender = Sender(1000.0, max_delay=0.01)
    telegram = Telegram(RetryAfter(dtm.timedelta(seconds=0.1)))
    first = asyncio.create_task(send(sender, telegram, "first"))
    await asyncio.sleep(0.05)  # the first request got its 429: all sending pauses
    waiting = [
        asyncio.create_task(send(sender, telegram, name, how))
        for name, how in [("normal", None), ("alert", ALERT), ("crisis", CRISIS), ("later", None)]
    ]
    await asyncio.gather(first, *waiting)
    assert telegram.order == ["crisis", "alert", "first", "normal", "later"]
    assert sender.retries == 1
    await sender.shutdown()


async def test_what_a_chat_with_a_crisis_waiting_sends_goes_crisis_first() -> None:
    sender = Sender(1000.0, max_delay=0.01)
    telegram = Telegram(RetryAfter(dtm.timedelta(seconds=0.1)))
    first = asyncio.create_task(send(sender, telegram, "first"))
    await asyncio.sleep(0.05)

    async def hurried() -> dict:
        HURRIED.set(True)  # what the intake sets in the lane of a chat with a crisis message waiting
        return await send(sender, telegram, "hurried")

    waiting = [asyncio.create_task(send(sender, telegram, "normal")), asyncio.create_task(hurried())]
    await asyncio.gather(first, *waiting)
    assert telegram.order == ["hurried", "first", "normal"]
    await sender.shutdown()


async def test_a_429_to_an_alert_pauses_alerts_only() -> None:
    sender = Sender(1000.0, max_delay=0.01)
    telegram = Telegram(RetryAfter(dtm.timedelta(seconds=0.3)))
    alert = asyncio.create_task(send(sender, telegram, "alert", ALERT))
    await asyncio.sleep(0.05)  # the alert got its 429
    await asyncio.wait_for(send(sender, telegram, "reply"), timeout=0.2)  # not held by the alert's pause
    second = asyncio.create_task(send(sender, telegram, "second alert", ALERT))
    await asyncio.gather(alert, second)
    assert telegram.order == ["reply", "alert", "second alert"]
    await sender.shutdown()


async def test_pacing_lets_a_burst_through_then_spaces_requests() -> None:
    sender = Sender(10.0)
    telegram = Telegram()
    loop = asyncio.get_running_loop()
    times = []

    async def timed(name: str) -> None:
        await send(sender, telegram, name)
        times.append(loop.time())

    await asyncio.gather(*(timed(str(n)) for n in range(12)))
    assert telegram.order == [str(n) for n in range(12)]
    assert times[11] - times[0] >= 0.15  # ten at once, then one every tenth of a second (a lower bound)
    await sender.shutdown()


async def test_network_errors_are_retried_until_they_go_through() -> None:
    sender = Sender(1000.0, max_delay=0.01)
    telegram = Telegram(TimedOut(), NetworkError("Bad Gateway (502)"), NetworkError("Internal Server Error (500)"))
    assert await send(sender, telegram, "reply") == {"ok": True}
    assert sender.retries == 3


@pytest.mark.parametrize("error", [Forbidden("Forbidden: bot was blocked by the user"), BadRequest("chat not found")])
async def test_refusals_are_raised_at_once(error: Exception) -> None:
    sender = Sender(1000.0, max_delay=0.01)
    telegram = Telegram(error, error)
    with pytest.raises(type(error)):
        await send(sender, telegram, "reply")
    assert sender.retries == 0 and len(telegram.failures) == 1


async def test_alerts_give_up_after_three_tries_for_the_escalator_to_retry_later() -> None:
    sender = Sender(1000.0, max_delay=0.01)
    telegram = Telegram(*(NetworkError("Internal Server Error (500)") for _ in range(5)))
    with pytest.raises(NetworkError):
        await send(sender, telegram, "alert", ALERT)
    assert len(telegram.failures) == 2


async def test_no_more_than_the_pool_is_under_way_and_crisis_takes_the_next_free_connection() -> None:
    sender = Sender(1000.0, connections=2)
    gate = asyncio.Event()
    under_way: list[str] = []
    order: list[str] = []

    def request(name: str):
        async def call() -> dict:
            under_way.append(name)
            assert len(under_way) <= 2, f"{under_way} under way at once"
            await gate.wait()
            under_way.remove(name)
            order.append(name)
            return {"ok": True}

        return call

    def go(name: str, how: Send | None = None) -> asyncio.Task:
        return asyncio.create_task(sender.process_request(request(name), (), {}, "sendMessage", {}, how))

    first = [go("a"), go("b"), go("c")]
    await asyncio.sleep(0.01)
    crisis = go("crisis", CRISIS)
    await asyncio.sleep(0.01)
    assert under_way == ["a", "b"]  # c and the crisis reply wait for a connection
    gate.set()
    await asyncio.gather(*first, crisis)
    assert order.index("crisis") < order.index("c")
    await sender.shutdown()


async def test_a_request_cancelled_while_waiting_gives_its_connection_back() -> None:
    sender = Sender(1000.0, connections=1)
    gate = asyncio.Event()
    telegram = Telegram()

    async def blocking() -> dict:
        await gate.wait()
        return {"ok": True}

    holder = asyncio.create_task(sender.process_request(blocking, (), {}, "sendMessage", {}, None))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(send(sender, telegram, "gave up"))
    await asyncio.sleep(0.01)
    waiting.cancel()
    gate.set()
    await holder
    assert await send(sender, telegram, "next") == {"ok": True}
    assert telegram.order == ["next"]
    await sender.shutdown()
