"""The Telegram benchmark: Unhooked end to end through python-telegram-bot, beside a bare PTB echo bot.

Both bots run as their own processes against the same kind of fake Bot API server (``tests/fake_bot_api.py``,
real HTTP on 127.0.0.1) in this process, one after the other and alternating, with the same messages:

- **start-up**: from starting the process to the first reply reaching the server (a message is already waiting);
- **burst**: every message queued at once; throughput is messages divided by the time until the last reply,
  and each message's latency runs from when it was queued to when its (last) reply arrived;
- **paced**: messages at a steady rate well below either bot's capacity, for latency without a queue;
- **memory**: the process's peak resident set (``VmHWM`` in ``/proc/PID/status``), read before it stops;
- **delivery**: every person's replies are compared with what they should be, in order: lost, duplicated and
  reordered replies are counted (for the echo bot, the texts sent; for Unhooked, the transcript of an engine
  set up as the bot is, meaning-based matching included: the bot has the shipped examples' vectors at once).

Unhooked keeps its data in a fresh SQLite file, or with ``db`` in a fresh schema of that PostgreSQL server
(dropped after the run). ``webhook`` runs it in webhook mode: ``replicas`` processes on the one database behind a
round-robin front (``tests/front.py``) that the fake server posts each update to, one at a time, as Telegram does
with one connection; start-up is then to the first reply of any replica, peak memory the largest replica's, and
CPU the replicas' sum.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.engine import percentile
from bench.synthetic import message_mix
from bot.config import default_content_dir
from bot.content import Catalog, load_catalog
from tests.fake_bot_api import FakeBotApi
from tests.front import free_port, round_robin
from tests.pg_schema import pg_schema

OPERATORS = -1001234567890
TARGETS = {"throughput_ratio": 0.4, "peak_rss_mb": 300.0, "startup_seconds": 3.0}
"""Issue 10's: throughput at least 0.4 of the echo bot's, peak memory at most 300 MB, first reply within 3 s."""
FIRST_PERSON = 900_000
WARM_UP_PERSON = 899_999
STARTUP_TIMEOUT = 60.0
SECRET = "benchmark-secret-0123456789abcdef"  # noqa: S105 (made up for the benchmark)
WEBHOOK_SECRET = "benchmark-webhook-secret-0123"  # noqa: S105 (made up for the benchmark)


@dataclass(frozen=True)
class Setup:
    """Where Unhooked keeps its data and how updates reach it."""

    db: str | None = None
    """A PostgreSQL server (each run gets a fresh schema of it); ``None``: a fresh SQLite file."""
    webhook: bool = False
    replicas: int = 1

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError("--replicas must be 1 or more")
        if self.replicas > 1 and not (self.webhook and self.db):
            raise ValueError("--replicas above 1 needs --webhook and --db (one poller per token; one shared database)")

    @property
    def label(self) -> str:
        """How the table names this setup, e.g. ``unhooked postgres webhook x3``."""
        mode = f"webhook x{self.replicas}" if self.webhook else "polling"
        return f"{'postgres' if self.db else 'sqlite'} {mode}"


class TimedApi(FakeBotApi):
    """The fake server, noting when each message to a chat arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: dict[int, list[float]] = defaultdict(list)
        self.replies = 0
        """Messages sent to people (the operators' chat aside)."""

    async def _api_sendMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        result = await super()._api_sendMessage(params)
        self.arrivals[params["chat_id"]].append(time.perf_counter())
        self.replies += params["chat_id"] != OPERATORS
        return result

    def alerted(self) -> int:
        """How many escalations the operators' chat has had an alert for (one alert may name several)."""
        buttons = (button for message in self.sent(OPERATORS) for row in message.buttons for button in row)
        return len({data for button in buttons if (data := button.get("callback_data", "")).startswith("ack:")})

    async def until(
        self, check: Callable[[], bool], timeout: float, processes: list[asyncio.subprocess.Process]
    ) -> None:
        """Wait until ``check()``; raise if a bot process ends or ``timeout`` passes first."""
        deadline = time.perf_counter() + timeout
        while not check():
            for process in processes:
                if process.returncode is not None:
                    raise RuntimeError(f"the bot process ended with status {process.returncode}")
            if time.perf_counter() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s ({self.replies} replies to people so far)")
            await asyncio.sleep(0.005)


@dataclass(frozen=True)
class Plan:
    """The messages of one run, who sends them, and what each person should get back."""

    burst: list[tuple[int, str]]
    paced: list[tuple[int, str]]
    expected: dict[int, list[str]]
    """Per person, the texts of the replies, in order."""
    replies_per_message: dict[int, list[int]]
    """Per person, how many replies each of their messages gets, in order."""
    escalations: int = 0
    """Escalations among the replies: the run also waits for the operators' chat to have an alert for each."""

    @property
    def total(self) -> int:
        """Replies to people, operators' alerts aside."""
        return sum(len(texts) for texts in self.expected.values())


@dataclass
class Run:
    """One bot, one pass of the plan."""

    bot: str
    startup_seconds: float
    burst_seconds: float
    messages_per_second: float
    burst_latency_ms: dict[str, float]
    paced_latency_ms: dict[str, float]
    peak_rss_mb: float
    cpu_seconds: float
    delivery: dict[str, int]
    replica_cpu_seconds: list[float] = field(default_factory=list)
    """Each process's share of ``cpu_seconds`` (one for the echo bot and for polling)."""


@dataclass
class Report:
    """Every run of both bots, and the comparison."""

    messages: int
    users: int
    paced: int
    rate: float
    setup: str
    """Unhooked's database and mode, e.g. ``postgres webhook x3``."""
    runs: list[Run] = field(default_factory=list)

    def of(self, bot: str) -> list[Run]:
        return [run for run in self.runs if run.bot == bot]

    def summary(self) -> dict[str, Any]:
        bots = {}
        for bot in ("echo", "unhooked"):
            runs = self.of(bot)
            if not runs:
                continue
            bots[bot] = {
                "best_messages_per_second": max(r.messages_per_second for r in runs),
                "median_messages_per_second": statistics.median(r.messages_per_second for r in runs),
                "best_startup_seconds": min(r.startup_seconds for r in runs),
                "median_startup_seconds": statistics.median(r.startup_seconds for r in runs),
                "peak_rss_mb": max(r.peak_rss_mb for r in runs),
                "median_cpu_ms_per_message": statistics.median(
                    1000 * r.cpu_seconds / (self.messages + self.paced + 1) for r in runs
                ),
                "median_burst_latency_ms": _median_of(runs, "burst_latency_ms"),
                "median_paced_latency_ms": _median_of(runs, "paced_latency_ms"),
                "delivery_problems": sum(sum(r.delivery.values()) for r in runs),
                "delivery": {kind: sum(r.delivery[kind] for r in runs) for kind in runs[0].delivery},
            }
        verdict: dict[str, Any] = {}
        if len(bots) == 2:
            echo, ours = bots["echo"], bots["unhooked"]
            ratios = [
                mine.messages_per_second / theirs.messages_per_second
                for mine, theirs in zip(self.of("unhooked"), self.of("echo"), strict=False)
            ]
            verdict = {
                "throughput_ratio_median": statistics.median(ratios),
                "throughput_ratio_of_medians": ours["median_messages_per_second"] / echo["median_messages_per_second"],
                "memory_ratio": ours["peak_rss_mb"] / echo["peak_rss_mb"],
                "startup_seconds": ours["median_startup_seconds"],
            }
            verdict["met"] = {
                "throughput": verdict["throughput_ratio_median"] >= TARGETS["throughput_ratio"],
                "memory": ours["peak_rss_mb"] <= TARGETS["peak_rss_mb"],
                "startup": verdict["startup_seconds"] < TARGETS["startup_seconds"],
                "delivery": ours["delivery_problems"] == 0,
            }
        return {
            "messages": self.messages,
            "users": self.users,
            "paced": self.paced,
            "rate": self.rate,
            "setup": self.setup,
            "bots": bots,
            "verdict": verdict,
            "targets": TARGETS,
            "all_runs": [asdict(run) for run in self.runs],
        }


def _median_of(runs: list[Run], name: str) -> dict[str, float]:
    keys = getattr(runs[0], name).keys()
    return {key: round(statistics.median(getattr(run, name)[key] for run in runs), 2) for key in keys}


def person(user: str) -> int:
    """A Telegram user id for a synthetic sender ``user-N``."""
    return FIRST_PERSON + int(user.rsplit("-", 1)[1])


async def plan_for(catalog: Catalog, messages: int, users: int, paced: int, echo: bool) -> Plan:
    """The messages in order, and what each person should get back from the echo bot or from Unhooked."""
    from bot.adapters.telegram.render import render  # python-telegram-bot, like the bots themselves
    from bot.config import Settings
    from bot.engine import Engine
    from bot.meaning import vectors_for
    from bot.models import Incoming
    from bot.store.memory import MemoryStore
    from tests.fake_bot_api import parse_html

    mix = [(person(m.user), m.text) for m in message_mix(catalog, messages + paced, users)]
    expected: dict[int, list[str]] = defaultdict(list)
    counts: dict[int, list[int]] = defaultdict(list)
    escalations = 0
    if echo:
        for who, text in mix:
            expected[who].append(text)
            counts[who].append(1)
    else:
        vectors = vectors_for(Settings.from_env().meaning_folder)  # the bot matches by meaning too, unless off
        reference = Engine(MemoryStore(), SECRET.encode(), catalog, vectors=vectors)
        for who, text in mix:
            outcome = await reference.handle(Incoming(str(who), text, "telegram"))
            texts = [parse_html(message.html) for reply in outcome.replies for message in render(reply)]
            expected[who] += texts
            counts[who].append(len(texts))
            escalations += outcome.escalation is not None
        await reference.aclose()
    return Plan(mix[:messages], mix[messages:], dict(expected), dict(counts), escalations)


def delivery(api: TimedApi, expected: dict[int, list[str]]) -> dict[str, int]:
    """Lost, duplicated and reordered replies, person by person, against what each should have got."""
    problems = Counter(lost=0, duplicated=0, reordered=0)
    for who, wanted in expected.items():
        got = [message.text for message in api.sent(who, include_deleted=True)]
        if got == wanted:
            continue
        missing, surplus = Counter(wanted) - Counter(got), Counter(got) - Counter(wanted)
        problems["lost"] += sum(missing.values())
        problems["duplicated"] += sum(surplus.values())
        if not missing and not surplus:
            problems["reordered"] += 1
    return dict(problems)


def _status(pid: int, key: str) -> float:
    """A ``kB`` figure from ``/proc/PID/status``, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def environment(api: FakeBotApi, bot: str, folder: Path, concurrency: int, db: str | None) -> dict[str, str]:
    """The bot process's environment: the fake server, a fresh database (``db``, else a file), pacing lifted,
    quiet logs."""
    env = {**os.environ, **api.env(), "PYTHONDONTWRITEBYTECODE": "1"}
    if bot == "echo":
        return {**env, "ECHO_CONCURRENCY": str(concurrency)}
    return {
        **env,
        "UNHOOKED_DB": db or str(folder / "data" / "bench.sqlite3"),
        "UNHOOKED_SECRET": SECRET,
        "UNHOOKED_POLL_TIMEOUT": "1",
        "UNHOOKED_SENDS_PER_SECOND": "100000",
        "UNHOOKED_OPERATOR_CHAT_ID": str(OPERATORS),
        "UNHOOKED_MAX_CONCURRENT_CHATS": str(concurrency),
        "UNHOOKED_LOG_LEVEL": "WARNING",
    }


@contextlib.asynccontextmanager
async def fresh_schema(server: str | None) -> AsyncIterator[str | None]:
    """A URL on a new schema of ``server`` for the block, dropped after; ``None`` without a server."""
    if server is None:
        yield None
        return
    async with pg_schema(server, "unhooked_bench") as url:
        yield url


async def _start(
    bot: str, api: FakeBotApi, folder: Path, concurrency: int, db: str | None, webhook: dict[str, str]
) -> asyncio.subprocess.Process:
    """One bot process, its output in ``folder/bot.log``; in webhook mode when ``webhook`` has its settings."""
    command = ["-m", "bench.echo"] if bot == "echo" else ["-m", "bot", "run", *(["--webhook"] if webhook else [])]
    folder.mkdir(parents=True)
    with (folder / "bot.log").open("wb") as log:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            *command,
            cwd=Path(__file__).resolve().parent.parent,
            env={**environment(api, bot, folder, concurrency, db), **webhook},
            stdout=log,
            stderr=log,
        )


async def one_run(bot: str, plan: Plan, rate: float, concurrency: int, folder: Path, setup: Setup) -> Run:
    """Start one bot (or its replicas) against a fresh fake server, run the plan through it, stop it, and measure."""
    replicas = setup.replicas if bot == "unhooked" else 1
    webhook = setup.webhook and bot == "unhooked"
    ports = [free_port() for _ in range(replicas)]
    async with (
        TimedApi() as api,
        round_robin(ports) as front,
        fresh_schema(setup.db if bot == "unhooked" else None) as db,
    ):
        api.group(OPERATORS, "Operators")
        api.send(WARM_UP_PERSON, "hello")
        started = time.perf_counter()
        processes = [
            await _start(
                bot,
                api,
                folder / f"replica{number}",
                concurrency,
                db,
                {
                    "UNHOOKED_WEBHOOK_URL": front,
                    "UNHOOKED_WEBHOOK_SECRET": WEBHOOK_SECRET,
                    "UNHOOKED_HTTP_PORT": str(port),
                }
                if webhook
                else {},
            )
            for number, port in enumerate(ports)
        ]
        try:
            await api.until(lambda: bool(api.arrivals.get(WARM_UP_PERSON)), STARTUP_TIMEOUT, processes)
            startup = api.arrivals[WARM_UP_PERSON][0] - started
            await api.until(lambda: api.replies >= 1, 5, processes)
            baseline = api.replies
            await asyncio.sleep(0.3)
            queued: dict[int, list[float]] = defaultdict(list)
            began = time.perf_counter()
            for who, text in plan.burst:
                api.send(who, text)
                queued[who].append(began)
            burst_total = baseline + _replies_of(plan, len(plan.burst))
            await api.until(lambda: api.replies >= burst_total, 600, processes)
            burst_seconds = max(times[-1] for who, times in api.arrivals.items() if who in queued) - began
            burst_counts = {who: len(times) for who, times in queued.items()}
            for who, text in plan.paced:
                api.send(who, text)
                queued[who].append(time.perf_counter())
                await asyncio.sleep(1 / rate)
            await api.until(lambda: api.replies >= baseline + plan.total, 600, processes)
            await api.until(lambda: api.alerted() >= plan.escalations, 60, processes)
            await asyncio.sleep(0.2)  # anything sent twice would arrive now
            peak = max(_status(process.pid, "VmHWM") for process in processes)
            shares = [round(_cpu_seconds(process.pid), 2) for process in processes]
        except BaseException:
            for process in processes:
                process.kill()
                await process.wait()
            sys.stderr.write((folder / "replica0" / "bot.log").read_text(errors="replace")[-3000:])
            sys.stderr.write(f"so far: {delivery(api, plan.expected)}; {api.alerted()} of {plan.escalations} alerted\n")
            raise
        await asyncio.gather(*(stop(process) for process in processes))
        burst = _window(api, plan, queued, {who: (0, count) for who, count in burst_counts.items()})
        paced = _window(api, plan, queued, {who: (burst_counts.get(who, 0), 1 << 30) for who in queued})
        return Run(
            bot=bot,
            startup_seconds=round(startup, 3),
            burst_seconds=round(burst_seconds, 3),
            messages_per_second=round(len(plan.burst) / burst_seconds, 1),
            burst_latency_ms=burst,
            paced_latency_ms=paced,
            peak_rss_mb=round(peak, 1),
            cpu_seconds=round(sum(shares), 2),
            delivery=delivery(api, plan.expected),
            replica_cpu_seconds=shares,
        )


async def stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, up to 30 s to finish, then SIGKILL."""
    process.send_signal(signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(30):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


def _replies_of(plan: Plan, first_messages: int) -> int:
    """How many replies the first ``first_messages`` messages of the plan get, operators' alerts aside."""
    seen: Counter[int] = Counter()
    total = 0
    for who, _ in plan.burst[:first_messages]:
        total += plan.replies_per_message[who][seen[who]]
        seen[who] += 1
    return total


def _window(
    api: TimedApi, plan: Plan, queued: dict[int, list[float]], windows: dict[int, tuple[int, int]]
) -> dict[str, float]:
    found = []
    for who, times in queued.items():
        first, last = windows.get(who, (0, 0))
        arrivals = api.arrivals.get(who, [])
        done = 0
        for number, replies in enumerate(plan.replies_per_message[who][: len(times)]):
            done += replies
            if first <= number < last and replies and done <= len(arrivals):
                found.append((arrivals[done - 1] - times[number]) * 1000)
    found.sort()
    return {
        "p50": round(percentile(found, 0.50), 2),
        "p90": round(percentile(found, 0.90), 2),
        "p99": round(percentile(found, 0.99), 2),
        "max": round(found[-1], 2) if found else 0.0,
    }


def benchmark(
    messages: int,
    users: int,
    paced: int,
    rate: float,
    runs: int,
    concurrency: int,
    progress: Callable[[str], None],
    setup: Setup = Setup(),
) -> Report:
    """Alternate the echo bot and Unhooked (as ``setup`` says) ``runs`` times each on the same messages."""
    catalog = load_catalog(default_content_dir())
    plans = {bot: asyncio.run(plan_for(catalog, messages, users, paced, bot == "echo")) for bot in ("echo", "unhooked")}
    report = Report(messages, users, paced, rate, setup.label)
    with tempfile.TemporaryDirectory(prefix="unhooked-bench-telegram-") as scratch:
        for number in range(runs):
            for bot in ("echo", "unhooked"):
                folder = Path(scratch) / f"{bot}-{number}"
                run = asyncio.run(one_run(bot, plans[bot], rate, concurrency, folder, setup))
                report.runs.append(run)
                problems = sum(run.delivery.values())
                progress(
                    f"  {bot:<8} run {number + 1}/{runs}: start-up {run.startup_seconds:.2f} s,"
                    f" {run.messages_per_second:.0f} msg/s, burst p50/p99 {run.burst_latency_ms['p50']:.0f}/"
                    f"{run.burst_latency_ms['p99']:.0f} ms, paced p50/p99 {run.paced_latency_ms['p50']:.1f}/"
                    f"{run.paced_latency_ms['p99']:.1f} ms, peak {run.peak_rss_mb:.1f} MB,"
                    f" CPU {run.cpu_seconds:.1f} s, delivery {'ok' if not problems else run.delivery}"
                )
    return report
