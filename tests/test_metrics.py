"""Metrics: the registry renders valid Prometheus text, and the engine, escalator and reloader count what they do."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.content import Catalog
from bot.engine import Engine
from bot.health import Faults
from bot.metrics import Metrics, Registry
from bot.reload import reload_content
from bot.store.memory import MemoryStore
from tests.conftest import REPO, SECRET, Chat

SAMPLE = re.compile(r'^([a-z_]+)(\{(?:[a-z_]+="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+]+|\+Inf|NaN)$')


def parse(text: str) -> dict[str, dict[str, float]]:
    """The samples of a text exposition, by metric family and label set; fails on any malformed line."""
    assert text.endswith("\n")
    families: dict[str, dict[str, float]] = {}
    declared: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name not in declared, f"{name} declared twice"
            declared[name] = kind
            families[name] = {}
            continue
        found = SAMPLE.match(line)
        assert found, f"not a sample line: {line!r}"
        name, labels, value = found.group(1), found.group(2) or "", found.group(3)
        family = next(f for f in declared if name == f or name.startswith(f + "_"))
        families[family][name[len(family) :] + labels] = float(value)
    return families


def counted(text: str) -> dict[str, dict[str, float]]:
    """The samples of a text exposition that are not 0: what was counted, without the series shown at 0."""
    return {family: {key: value for key, value in found.items() if value} for family, found in parse(text).items()}


def test_counters_gauges_and_histograms_render_as_prometheus_text() -> None:
    registry = Registry()
    hits = registry.counter("demo_hits_total", "Hits.", ("kind",))
    level = registry.gauge("demo_level", "A level.")
    live = registry.gauge("demo_live", "Read when rendered.", read=lambda: 7)
    took = registry.histogram("demo_seconds", "Durations.", (0.1, 1.0))
    hits.inc("a")
    hits.inc("a", amount=2)
    hits.inc('say "hi"\\\n')
    level.set(3.5)
    for value in (0.05, 0.1, 0.5, 3.0):
        took.observe(value)
    samples = parse(registry.render())
    assert samples["demo_hits_total"] == {'{kind="a"}': 3.0, '{kind="say \\"hi\\"\\\\\\n"}': 1.0}
    assert samples["demo_level"] == {"": 3.5}
    assert samples["demo_live"] == {"": 7.0}
    assert samples["demo_seconds"] == {
        '_bucket{le="0.1"}': 2.0,
        '_bucket{le="1"}': 3.0,
        '_bucket{le="+Inf"}': 4.0,
        "_sum": 3.65,
        "_count": 4.0,
    }
    assert live.value() == 7 and hits.value("a") == 3 and hits.total() == 4


def test_the_registry_refuses_mistakes() -> None:
    registry = Registry()
    counter = registry.counter("demo_total", "A count.", ("kind",))
    with pytest.raises(ValueError, match="already registered"):
        registry.counter("demo_total", "Again.")
    with pytest.raises(ValueError, match="takes the labels"):
        counter.inc()
    with pytest.raises(ValueError, match="cannot go down"):
        counter.inc("a", amount=-1)
    with pytest.raises(ValueError, match="rising order"):
        registry.histogram("demo_seconds", "Durations.", (1.0, 0.5))


def test_a_counter_loses_no_increment_from_several_threads() -> None:
    counter = Registry().counter("demo_total", "A count.", ("kind",))
    each = 100_000
    was = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can, so a race would show
    try:
        workers = [threading.Thread(target=lambda: [counter.inc("a") for _ in range(each)]) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(was)
    assert counter.value("a") == 4 * each


async def test_the_engine_counts_messages_intents_fallbacks_concerns_and_escalations(
    engine: Engine, chat: Chat
) -> None:
    await chat.say("why do I miss him if it was so bad")
    await chat.say("asdfgh qwerty")
    await chat.as_user("bob").say("I can't do this anymore")
    await chat.as_user("carol").say("I want to die")
    metrics = engine.metrics
    assert metrics.messages.value("test") == 4
    assert metrics.intents.value("miss_them") == 1
    assert metrics.fallbacks.total() == 2  # the check-in's message matched no intent either
    assert metrics.concerns.total() == 1
    assert metrics.escalations.value("crisis", "suicidal") == 1
    assert metrics.escalations_stored.value("database") == 1
    assert metrics.handling.count == 4 and metrics.handling.sum > 0
    samples = parse(metrics.registry.render())
    assert samples["unhooked_handling_seconds"]['_bucket{le="+Inf"}'] == 4
    assert samples["unhooked_content_loaded"] == {"": 1.0}


async def test_no_metric_carries_a_user_id_or_message_text(catalog: Catalog) -> None:
    engine = Engine(MemoryStore(), SECRET, catalog)
    for user, text in [
        ("survivor-8675309", "why do I miss him quokka"),
        ("survivor-8675309", "I want to die axolotl"),
        ("other-5551234", "narwhal narwhal"),
    ]:
        await Chat(engine, user).say(text)
    rendered = engine.metrics.registry.render()
    await engine.aclose()
    for leak in ("8675309", "5551234", "quokka", "axolotl", "narwhal", engine.user_key("test", "survivor-8675309")):
        assert leak not in rendered


async def test_reloads_are_counted_and_content_loaded_follows(
    mini_content: Callable[..., Path], tmp_path: Path
) -> None:
    root = mini_content()
    engine = Engine(MemoryStore(), SECRET, None)
    assert engine.metrics.content_loaded.value() == 0
    assert reload_content(engine, root).applied
    (root / "intents" / "hello.yml").write_text("id: [broken\n")
    assert not reload_content(engine, root).applied
    metrics = engine.metrics
    assert (metrics.reloads.value("applied"), metrics.reloads.value("refused")) == (1, 1)
    assert metrics.content_loaded.value() == 1 and metrics.content_intents.value() == 2
    await engine.aclose()


def test_every_metric_is_named_in_the_readme() -> None:
    from bot.adapters.telegram.health import TelegramMetrics  # the adapter's, on the same registry

    metrics = Metrics()
    TelegramMetrics(metrics, Faults())
    readme = (REPO / "README.md").read_text()
    names = metrics.registry.names()
    assert len(names) > 20 and [name for name in names if f"| `{name}` |" not in readme] == []


def test_every_known_series_is_shown_at_zero_before_its_first_event(catalog: Catalog) -> None:
    engine = Engine(MemoryStore(), SECRET, catalog)
    samples = parse(engine.metrics.registry.render())
    assert samples["unhooked_escalations_stored_total"] == {
        '{where="database"}': 0.0,
        '{where="nowhere"}': 0.0,
        '{where="spool"}': 0.0,
    }
    assert samples["unhooked_alerts_total"] == {'{result="failed"}': 0.0, '{result="sent"}': 0.0}
    assert samples["unhooked_content_reloads_total"] == {'{result="applied"}': 0.0, '{result="refused"}': 0.0}
    assert samples["unhooked_fallbacks_total"]['{reason="ambiguous"}'] == 0.0
    assert samples["unhooked_replies_sent_total"]['{kind="crisis"}'] == 0.0
    assert samples["unhooked_handler_errors_total"]['{part="screen"}'] == 0.0
    assert samples["unhooked_intent_matches_total"].keys() == {f'{{intent="{i}"}}' for i in catalog.intents}
    assert samples["unhooked_escalations_total"]['{level="imminent",category="suicidal"}'] == 0.0
    assert samples["unhooked_escalations_total"]['{level="crisis",category="screen_failed"}'] == 0.0
    assert samples["unhooked_concerns_total"]['{category="hopelessness"}'] == 0.0


def test_the_process_collector_adds_cpu_memory_and_file_descriptors() -> None:
    samples = parse(Metrics().registry.render())
    assert samples["process_cpu_seconds_total"][""] > 0
    assert samples["process_resident_memory_bytes"][""] > 1_000_000
    assert samples["process_open_fds"][""] >= 3


async def test_unacknowledged_escalations_are_shown_by_level_and_age(clock: Callable[[], float]) -> None:
    from bot.escalation import Escalator
    from bot.models import Escalation, Level

    store = MemoryStore()
    escalator = Escalator(store, clock=clock)
    now = clock()
    old = Escalation("e1", now - 600, "k", Level.IMMINENT, "method", "r", "test", ())
    new = Escalation("e2", now - 60, "k", Level.IMMINENT, "method", "r", "test", ())
    done = Escalation("e3", now - 900, "k", Level.CRISIS, "suicidal", "r", "test", ())
    await store.record_escalations([old, new, done])
    await store.acknowledge("e3", "sam", now)
    assert [e.id for e in await escalator.refresh_unacked()] == ["e1", "e2"]
    samples = parse(escalator.metrics.registry.render())
    assert samples["unhooked_unacked_escalations"] == {'{level="crisis"}': 0.0, '{level="imminent"}': 2.0}
    assert samples["unhooked_oldest_unacked_escalation_seconds"] == {
        '{level="crisis"}': 0.0,
        '{level="imminent"}': 600.0,
    }


async def test_a_caught_handler_error_is_counted_by_part(
    engine: Engine, chat: Chat, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot import safety

    def broken(*args: object) -> None:
        raise RuntimeError("a bug in the screen")

    monkeypatch.setattr(safety, "detect", broken)
    replies = await chat.say("hello")
    assert replies[0].kind.value == "crisis"
    assert engine.metrics.handler_errors.value("screen") == 1
    assert engine.metrics.handler_errors.value("answer") == 0
