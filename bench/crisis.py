"""The crisis-first benchmark: how long a crisis reply takes while the bot works through a backlog.

``python -m bot run`` as its own process, against the fake Bot API server in this process, at the shipped
send pacing (``UNHOOKED_SENDS_PER_SECOND`` as configured, 25 by default). A backlog of ordinary messages is
queued at once; then crisis messages come from other people, one every ``spacing`` seconds, while the backlog
drains. Each crisis message's latency runs from when it was queued to when its crisis reply reached the server.
The operators' chat answers 429 beyond ``operator_limit`` messages a minute, as a Telegram group does.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.engine import percentile
from bench.telegram import OPERATORS, SECRET, TimedApi, stop
from tests.fake_bot_api import ApiError

FIRST_PERSON = 800_000
FIRST_IN_CRISIS = 850_000
BACKLOG_LINES = ("hello", "why do I miss him", "who are you", "thanks", "how do I stop checking his profile")
CRISIS_LINE = "I want to kill myself"
ESCALATION_ID = re.compile(r"Id: [0-9a-f]{32}")


class LimitedApi(TimedApi):
    """The fake server with a Telegram group's limit on the operators' chat: 429 past ``per_minute`` a minute."""

    def __init__(self, per_minute: int) -> None:
        super().__init__()
        self.per_minute = per_minute
        self.operator_sends: list[float] = []
        self.operator_429s = 0

    async def _api_sendMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("chat_id") == OPERATORS:
            now = time.monotonic()
            self.operator_sends = [at for at in self.operator_sends if now - at < 60]
            if len(self.operator_sends) >= self.per_minute:
                self.operator_429s += 1
                wait = int(60 - (now - self.operator_sends[0])) + 1
                raise ApiError(429, f"Too Many Requests: retry after {wait}", {"retry_after": wait})
            self.operator_sends.append(now)
        return await super()._api_sendMessage(params)


@dataclass(frozen=True)
class Result:
    """One run: the crisis replies' latencies and what else went out meanwhile."""

    backlog: int
    crisis: int
    sends_per_second: float
    latency_s: dict[str, float]
    backlog_replies_before_last_crisis_reply: int
    operator_alerts: int
    escalations_told: int
    """Escalations named in the operators' alerts by the time the bot had stopped."""
    operator_429s: int


async def run_once(
    backlog: int, users: int, crisis: int, spacing: float, sends_per_second: float, operator_limit: int, folder: Path
) -> Result:
    """Start the bot, queue the backlog, send the crisis messages while it drains, and time their replies."""
    async with LimitedApi(operator_limit) as api:
        api.group(OPERATORS, "Operators")
        for number in range(backlog):
            api.send(FIRST_PERSON + number % users, BACKLOG_LINES[number % len(BACKLOG_LINES)])
        env = {
            **os.environ,
            **api.env(),
            "UNHOOKED_DB": str(folder / "data" / "bench.sqlite3"),
            "UNHOOKED_SECRET": SECRET,
            "UNHOOKED_POLL_TIMEOUT": "1",
            "UNHOOKED_SENDS_PER_SECOND": str(sends_per_second),
            "UNHOOKED_OPERATOR_CHAT_ID": str(OPERATORS),
            "UNHOOKED_LOG_LEVEL": "WARNING",
        }
        with (folder / "bot.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "run",
                cwd=Path(__file__).resolve().parent.parent,
                env=env,
                stdout=log,
                stderr=log,
            )
        try:
            await api.until(lambda: api.replies > 0, 60, [process])
            queued = {}
            for number in range(crisis):
                who = FIRST_IN_CRISIS + number
                api.send(who, CRISIS_LINE)
                queued[who] = time.perf_counter()
                await asyncio.sleep(spacing)
            await api.until(lambda: all(api.arrivals.get(who) for who in queued), 600, [process])
        finally:
            await stop(process)
        last = max(api.arrivals[who][0] for who in queued)
        latencies = sorted(api.arrivals[who][0] - at for who, at in queued.items())
        others = sum(
            1
            for who, times in api.arrivals.items()
            if FIRST_PERSON <= who < FIRST_IN_CRISIS
            for at in times
            if at <= last
        )
        return Result(
            backlog=backlog,
            crisis=crisis,
            sends_per_second=sends_per_second,
            latency_s={
                "p50": round(percentile(latencies, 0.50), 3),
                "p99": round(percentile(latencies, 0.99), 3),
                "max": round(latencies[-1], 3),
            },
            backlog_replies_before_last_crisis_reply=others,
            operator_alerts=len(api.sent(OPERATORS)),
            escalations_told=sum(len(ESCALATION_ID.findall(message.text)) for message in api.sent(OPERATORS)),
            operator_429s=api.operator_429s,
        )


def benchmark(
    backlog: int, users: int, crisis: int, spacing: float, sends_per_second: float, operator_limit: int
) -> Result:
    """One run in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="unhooked-bench-crisis-") as scratch:
        return asyncio.run(run_once(backlog, users, crisis, spacing, sends_per_second, operator_limit, Path(scratch)))
