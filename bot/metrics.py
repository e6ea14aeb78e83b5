"""Counters, gauges and latency histograms for operators, rendered in Prometheus' text format; never user data.

Dependency-free and platform-neutral: the engine, the escalator, the session writer and the content reloader
feed the metrics defined in ``Metrics``; an adapter adds its own (``Registry.counter`` and friends) and serves
``Registry.render()``. Label values only ever come from fixed sets or from the content (intent ids, crisis
categories), never from what a person wrote or who they are.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest

from bot import __version__
from bot.errors import DATABASE_FAULTS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The content type of the text exposition format."""

HANDLING_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Seconds: the engine answers a typical message in well under a millisecond; a slow store shows above 0.1."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    pairs = [f'{name}="{_escape(value)}"' for name, value in zip(names, values, strict=True)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


class Metric:
    """One named metric, with a fixed tuple of label names."""

    kind = "untyped"

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help_text
        self.labels = tuple(labels)

    def _key(self, values: Sequence[str]) -> tuple[str, ...]:
        if len(values) != len(self.labels):
            raise ValueError(f"{self.name} takes the labels {self.labels}, got {len(values)} values")
        return tuple(str(value) for value in values)

    def lines(self) -> Iterable[str]:
        """The sample lines of the text format."""
        return ()

    def render(self) -> list[str]:
        """HELP, TYPE and the samples."""
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}", *self.lines()]


class Counter(Metric):
    """A count that only goes up, per combination of label values; safe to count from the crisis screen's thread."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name, help_text, labels)
        self._values: dict[tuple[str, ...], float] = {} if labels else {(): 0.0}
        self._lock = threading.Lock()

    def zero(self, *keys: Sequence[str]) -> Counter:
        """Show these label values at 0 until they are first counted, so ``increase()`` sees the first one."""
        with self._lock:
            for values in keys:
                self._values.setdefault(self._key(values), 0.0)
        return self

    def inc(self, *values: str, amount: float = 1.0) -> None:
        """Add ``amount`` (default 1) for these label values."""
        if amount < 0:
            raise ValueError(f"{self.name} is a counter; it cannot go down")
        key = self._key(values)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, *values: str) -> float:
        """The count for these label values (0 if never counted)."""
        return self._values.get(self._key(values), 0.0)

    def total(self) -> float:
        """The sum over every combination of label values."""
        with self._lock:
            return sum(self._values.values())

    def lines(self) -> Iterable[str]:
        with self._lock:
            values = sorted(self._values.items())
        for key, value in values:
            yield f"{self.name}{_labels(self.labels, key)} {_number(value)}"


Reading = Callable[[], float] | Callable[[], Mapping[tuple[str, ...], float]]
"""What a gauge reads at each rendering: its value, or for a labelled gauge its values by label values."""


class Gauge(Metric):
    """A value that goes up and down: set directly, or read from ``read`` at each rendering."""

    kind = "gauge"

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = (), read: Reading | None = None) -> None:
        super().__init__(name, help_text, labels)
        self.read = read
        self._values: dict[tuple[str, ...], float] = {} if labels else {(): 0.0}

    def set(self, value: float, *values: str) -> None:
        """Set the value for these label values."""
        self._values[self._key(values)] = float(value)

    def _current(self) -> dict[tuple[str, ...], float]:
        if self.read is None:
            return self._values
        read = self.read()
        if not self.labels:
            return {(): float(read)}  # type: ignore[arg-type]
        return {**self._values, **{self._key(key): float(value) for key, value in read.items()}}  # type: ignore[union-attr]

    def value(self, *values: str) -> float:
        """The current value."""
        return self._current().get(self._key(values), 0.0)

    def lines(self) -> Iterable[str]:
        for key, value in sorted(self._current().items()):
            yield f"{self.name}{_labels(self.labels, key)} {_number(value)}"


class Histogram(Metric):
    """Observations counted into fixed buckets (upper bounds, seconds), with their sum and count."""

    kind = "histogram"

    def __init__(self, name: str, help_text: str, buckets: Sequence[float] = HANDLING_BUCKETS) -> None:
        super().__init__(name, help_text)
        if list(buckets) != sorted(set(buckets)) or not buckets:
            raise ValueError(f"{self.name} needs buckets in rising order without repeats")
        self.buckets = tuple(float(bound) for bound in buckets)
        self._counts = [0] * (len(self.buckets) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        """Count one observation."""
        self._counts[bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self) -> Iterable[str]:
        running = 0
        for bound, count in zip((*self.buckets, math.inf), self._counts, strict=True):
            running += count
            yield f'{self.name}_bucket{{le="{_number(bound)}"}} {running}'
        yield f"{self.name}_sum {_number(self.sum)}"
        yield f"{self.name}_count {self.count}"


class Registry:
    """The metrics of one running bot, in the order they were registered."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}
        self._collected: list[CollectorRegistry] = []

    def _add(self, metric: Metric) -> Metric:
        if metric.name in self._metrics:
            raise ValueError(f"a metric named {metric.name} is already registered")
        self._metrics[metric.name] = metric
        return metric

    def counter(self, name: str, help_text: str, labels: Sequence[str] = ()) -> Counter:
        """Register and return a counter."""
        return self._add(Counter(name, help_text, labels))  # type: ignore[return-value]

    def gauge(self, name: str, help_text: str, labels: Sequence[str] = (), read: Reading | None = None) -> Gauge:
        """Register and return a gauge."""
        return self._add(Gauge(name, help_text, labels, read))  # type: ignore[return-value]

    def histogram(self, name: str, help_text: str, buckets: Sequence[float] = HANDLING_BUCKETS) -> Histogram:
        """Register and return a histogram."""
        return self._add(Histogram(name, help_text, buckets))  # type: ignore[return-value]

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def names(self) -> list[str]:
        """Every registered metric's name."""
        return list(self._metrics)

    def include(self, collected: CollectorRegistry) -> None:
        """Render a ``prometheus_client`` registry after these metrics (the process collector's)."""
        self._collected.append(collected)

    def render(self) -> str:
        """Every metric in the text exposition format (``CONTENT_TYPE``)."""
        own = "".join(line + "\n" for metric in self._metrics.values() for line in metric.render())
        return own + "".join(generate_latest(collected).decode() for collected in self._collected)


LEVELS = ("crisis", "imminent")
"""The escalation levels (``models.Level``'s values from crisis up)."""
FALLBACK_REASONS = ("empty", "low_confidence", "ambiguous")
"""Why the matcher found no intent (``Match.reason``)."""
REPLY_KINDS = ("answer", "fallback", "crisis", "check_in", "notice", "command")
"""``models.ReplyKind``'s values, and ``command`` for an adapter's own lines."""
HANDLER_PARTS = ("screen", "crisis_model", "answer", "crisis_bookkeeping", "excerpt")
"""The parts of the engine whose failures are caught so that a reply still goes out."""


class Metrics:
    """The core's metrics: what the engine, escalator, session writer and reloader count.

    Every series with a fixed set of label values is shown at 0 from the start (``Counter.zero``), so an
    alert on ``increase(...)`` fires for the first event after a start too; the engine adds the intents
    and crisis categories of the content it serves.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.registry = registry = Registry()
        started = clock()
        registry.gauge("unhooked_build_info", "Always 1; the version is a label.", ("version",)).set(1, __version__)
        registry.gauge("unhooked_start_time_seconds", "When this process started (Unix time).").set(started)
        self.messages = registry.counter(
            "unhooked_messages_total", "Messages handled by the engine, by channel.", ("channel",)
        )
        self.handling = registry.histogram(
            "unhooked_handling_seconds", "Time the engine took to answer one message, crisis screen to replies."
        )
        self.intents = registry.counter(
            "unhooked_intent_matches_total", "Messages answered from an intent, by intent id.", ("intent",)
        )
        self.fallbacks = registry.counter(
            "unhooked_fallbacks_total", "Messages the bot did not understand, by reason.", ("reason",)
        ).zero(*((reason,) for reason in FALLBACK_REASONS))
        self.concerns = registry.counter(
            "unhooked_concerns_total",
            "Messages that got a gentle check-in (concern level), by category.",
            ("category",),
        )
        self.escalations = registry.counter(
            "unhooked_escalations_total",
            "Crisis and imminent detections recorded for operators, by level and category.",
            ("level", "category"),
        )
        self.escalations_stored = registry.counter(
            "unhooked_escalations_stored_total",
            "Where each escalation record went: database, spool (the database did not take it) or nowhere.",
            ("where",),
        ).zero(("database",), ("spool",), ("nowhere",))
        self.unacked = registry.gauge(
            "unhooked_unacked_escalations",
            "Stored escalations nobody has acknowledged yet, by level (read from the database every 30 s).",
            ("level",),
        )
        self.unacked_oldest = registry.gauge(
            "unhooked_oldest_unacked_escalation_seconds",
            "Age of the oldest unacknowledged escalation, by level; 0 when there is none.",
            ("level",),
        )
        self.alerts = registry.counter(
            "unhooked_alerts_total", "Operator alert attempts, by result (sent, failed).", ("result",)
        ).zero(("sent",), ("failed",))
        self.reminders = registry.counter(
            "unhooked_reminders_total",
            "Reminders of unacknowledged imminent escalations to the operators' chat, by result (sent, failed).",
            ("result",),
        ).zero(("sent",), ("failed",))
        self.alerts_pending = registry.gauge(
            "unhooked_alerts_pending", "Operator alerts owed: recorded escalations whose alert is not delivered yet."
        )
        self.replies = registry.counter(
            "unhooked_replies_sent_total", "Replies delivered to people, by kind.", ("kind",)
        ).zero(*((kind,) for kind in REPLY_KINDS))
        self.handler_errors = registry.counter(
            "unhooked_handler_errors_total",
            "Errors caught while handling a message so that a reply still went out, by part.",
            ("part",),
        ).zero(*((part,) for part in HANDLER_PARTS))
        self.store_errors = registry.counter(
            "unhooked_store_errors_total", "Database operations that failed or timed out, by operation.", ("operation",)
        ).zero(("session_read",), ("session_write",), ("escalation_record",))
        self.database_fault = registry.gauge(
            "unhooked_database_fault",
            "1 while the database is lost or unusable until a restart, by kind: missing, replaced, corrupt, unopened.",
            ("kind",),
        )
        for kind in DATABASE_FAULTS:
            self.database_fault.set(0, kind)
        self.sessions_pending = registry.gauge(
            "unhooked_sessions_pending",
            "Changed sessions not written to the database yet (their replies not delivered, or the write waiting).",
        )
        self.reloads = registry.counter(
            "unhooked_content_reloads_total", "Content reloads, by result (applied, refused).", ("result",)
        ).zero(("applied",), ("refused",))
        self.retention_runs = registry.counter(
            "unhooked_retention_runs_total",
            "Daily purges of what is past retention run by this process, by result (done, failed).",
            ("result",),
        ).zero(("done",), ("failed",))
        self.content_loaded = registry.gauge(
            "unhooked_content_loaded", "1 while content is served, 0 while only crisis replies and notices can be sent."
        )
        self.content_intents = registry.gauge("unhooked_content_intents", "Intents in the content being served.")
        self.pattern_timeouts = registry.counter(
            "unhooked_crisis_pattern_timeouts_total",
            "Crisis-screen rule searches that ran out of their time bound and counted as a match (the rule is logged).",
        )
        self.crisis_model_loaded = registry.gauge(
            "unhooked_crisis_model_loaded",
            "1 while the learned crisis screen runs beside the lexicon, 0 while it cannot.",
        )
        process = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=process)  # process_cpu_seconds_total, process_resident_memory_bytes, ...
        registry.include(process)

    def serving(self, intents: Iterable[str], categories: Iterable[str]) -> None:
        """Show the intents and crisis categories of the content being served at 0 until first counted."""
        self.intents.zero(*((intent,) for intent in intents))
        categories = sorted(set(categories))
        self.concerns.zero(*((category,) for category in categories))
        self.escalations.zero(*((level, category) for level in LEVELS for category in categories))
