"""The engine benchmark: per-message latency and throughput on the shipped content and larger synthetic catalogues."""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.synthetic import Message, message_mix, scaled_content
from bot.content import load_catalog
from bot.crisis import CrisisScreen
from bot.engine import Engine
from bot.matcher import Matcher
from bot.meaning import Vectors, index_of
from bot.models import Incoming
from bot.store.sqlite import SqliteStore

SECRET = b"benchmark-secret-0123456789"
TARGETS_MS = {1: 10.0, 100: 10.0}
"""Engine p99 targets per message, by catalogue size factor (issues 10 and 11: at most 10 ms with the model on)."""


def percentile(sorted_values: list[float], share: float) -> float:
    """The value below which ``share`` of the sorted values fall (nearest rank)."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(share * len(sorted_values)) - 1))
    return sorted_values[rank]


@dataclass
class Run:
    """One pass of the message mix through a fresh engine and database."""

    p50_ms: float
    p99_ms: float
    max_ms: float
    messages_per_second: float
    core_p50_ms: float
    core_p99_ms: float
    outcomes: dict[str, int]
    p99_ms_by_kind: dict[str, float] = field(default_factory=dict)
    """p99 per kind of message in the mix (question, button, fallback, crisis, long)."""


@dataclass
class Scale:
    """Every run at one catalogue size, and the best and median of each measure."""

    factor: int
    intents: int
    examples: int
    load_seconds: float
    messages: int
    users: int
    runs: list[Run] = field(default_factory=list)

    def best(self, name: str) -> float:
        values = [getattr(run, name) for run in self.runs]
        return max(values) if name == "messages_per_second" else min(values)

    def median(self, name: str) -> float:
        return statistics.median(getattr(run, name) for run in self.runs)

    def summary(self) -> dict[str, object]:
        measures = ("p50_ms", "p99_ms", "max_ms", "messages_per_second", "core_p50_ms", "core_p99_ms")
        target = TARGETS_MS.get(self.factor)
        return {
            "factor": self.factor,
            "intents": self.intents,
            "examples": self.examples,
            "load_seconds": round(self.load_seconds, 3),
            "messages": self.messages,
            "users": self.users,
            "runs": len(self.runs),
            "best": {name: round(self.best(name), 3) for name in measures},
            "median": {name: round(self.median(name), 3) for name in measures},
            "target_p99_ms": target,
            "target_met": None if target is None else self.best("p99_ms") <= target,
            "outcomes": self.runs[0].outcomes if self.runs else {},
            "best_p99_ms_by_kind": {
                kind: min(run.p99_ms_by_kind[kind] for run in self.runs) for kind in self.runs[0].p99_ms_by_kind
            }
            if self.runs
            else {},
            "all_runs": [asdict(run) for run in self.runs],
        }


def _kind(outcome_reason: str | None, crisis: bool) -> str:
    if crisis:
        return "crisis"
    return "answer" if outcome_reason in ("matched", "chosen") else "fallback"


async def _one_run(
    root: Path, mix: list[Message], warmup: list[Message], folder: Path, number: int, model: Model
) -> Run:
    catalog = load_catalog(root)
    store = SqliteStore(folder / f"bench-{number}.sqlite3")
    await store.open()
    engine = Engine(store, SECRET, catalog, vectors=model.vectors, screen=CrisisScreen(model.folder))
    try:
        for message in warmup:
            engine.delivered(await engine.handle(Incoming(message.user, message.text, "bench", message.topic)))
        await engine.sessions.flush()
        gc.collect()
        gc.freeze()  # as `python -m bot run` does once started: full collections skip the content and indexes
        latencies = []
        by_kind: dict[str, list[float]] = {}
        outcomes: Counter[str] = Counter()
        started = time.perf_counter()
        for message in mix:
            before = time.perf_counter_ns()
            outcome = await engine.handle(Incoming(message.user, message.text, "bench", message.topic))
            engine.delivered(outcome)  # as the terminal does once it printed: the session is written behind
            latencies.append((time.perf_counter_ns() - before) / 1e6)
            by_kind.setdefault(message.kind, []).append(latencies[-1])
            outcomes[_kind(outcome.match.reason if outcome.match else None, outcome.detection is not None)] += 1
        await engine.aclose()
        elapsed = time.perf_counter() - started
    finally:
        gc.unfreeze()
        await store.close()
    matcher = engine.matcher
    assert matcher is not None
    core_latencies = []
    for message in mix:
        before = time.perf_counter_ns()
        engine.screen.detect(message.text)
        matcher.match(message.text)
        core_latencies.append((time.perf_counter_ns() - before) / 1e6)
    latencies.sort()
    core_latencies.sort()
    return Run(
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        max_ms=latencies[-1],
        messages_per_second=len(mix) / elapsed,
        core_p50_ms=percentile(core_latencies, 0.50),
        core_p99_ms=percentile(core_latencies, 0.99),
        outcomes=dict(sorted(outcomes.items())),
        p99_ms_by_kind={kind: round(percentile(sorted(values), 0.99), 3) for kind, values in sorted(by_kind.items())},
    )


@dataclass(frozen=True)
class Model:
    """The learned model the engine runs: its folder (``None``: the shipped one; ``off``) and the examples' vectors."""

    folder: str | None = None
    vectors: Vectors | None = None


def benchmark(
    shipped: Path,
    factors: list[int],
    runs: int,
    messages: int,
    users: int,
    progress=print,
    model: Model | None = None,
) -> list[Scale]:
    """Run the mix ``runs`` times on each catalogue size; ``progress`` gets one line per run.

    The crisis screen runs ``model`` (the shipped one by default), and with its ``vectors`` the
    matcher matches by meaning too; each size's examples are embedded once (in its load time).
    """
    model = model or Model()
    vectors = model.vectors
    results = []
    with tempfile.TemporaryDirectory(prefix="unhooked-bench-") as scratch:
        folder = Path(scratch)
        for factor in factors:
            root = scaled_content(shipped, factor, folder) if factor > 1 else shipped
            started = time.perf_counter()
            catalog = load_catalog(root)
            Matcher(catalog.phrases(), meaning=index_of(catalog.intents.values(), vectors))
            load_seconds = time.perf_counter() - started
            mix = message_mix(catalog, messages, users)
            warmup = [
                Message(f"warm-{n}", m.text, m.topic, m.kind)
                for n, m in enumerate(message_mix(catalog, 300, 50, seed=7))
            ]
            scale = Scale(
                factor,
                len(catalog.intents),
                sum(len(intent.examples) for intent in catalog.intents.values()),
                load_seconds,
                messages,
                users,
            )
            for number in range(runs):
                run = asyncio.run(_one_run(root, mix, warmup, folder, factor * 1000 + number, model))
                scale.runs.append(run)
                progress(
                    f"  x{factor} run {number + 1}/{runs}: p50 {run.p50_ms:.3f} ms, p99 {run.p99_ms:.3f} ms,"
                    f" {run.messages_per_second:.0f} msg/s"
                )
            results.append(scale)
    return results
