"""The evaluation core shared by ``python -m bot eval`` and the accuracy gate in the test suite.

Every test sentence goes through the real engine (crisis screen first, then the matcher), each as
a new person, so a reply is the first passage of the intent reached.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from bot.content import Catalog
from bot.conversations import KnownFailure, Sentence, SentenceSet
from bot.engine import Engine
from bot.matcher import Candidate, Matcher, MatcherSettings, tokens_of
from bot.meaning import MeaningIndex, Vectors
from bot.models import Incoming
from bot.normalize import fold
from bot.store.memory import MemoryStore

MIN_ACCURACY = 0.92
"""The gate: at least this share of all test sentences must pass."""
MIN_INTENT_ACCURACY = 0.75
"""The gate: and at least this share of each intent's sentences."""
THRESHOLDS = (60.0, 65.0, 68.0, 70.0, 72.0, 75.0, 80.0, 85.0)
"""Thresholds the sweep tries, besides the one in use."""
MARGINS = (0.0, 2.0, 4.0, 6.0, 8.0)
"""Margins the sweep tries, besides the one in use."""
MEANING = ((0.2, 0.7), (0.25, 0.7), (0.3, 0.65), (0.3, 0.7), (0.3, 0.75), (0.35, 0.7), (0.4, 0.7), (0.3, 1.0))
"""With meaning-based matching on, the (share, similarity counted 100) pairs the sweep tries too."""
NO_MATCH = "(no match)"


@dataclass(frozen=True)
class Result:
    """What the engine made of one test sentence."""

    sentence: Sentence
    intent: str | None
    score: float
    reason: str
    crisis: str | None
    """The crisis rule that fired, if any: a test sentence must never trigger one."""
    replies: tuple[str, ...] = ()

    @property
    def got(self) -> str:
        """The intent reached, or ``(no match)``."""
        return self.intent or NO_MATCH

    @property
    def problem(self) -> str | None:
        """Why the sentence fails, naming file, sentence, expected and actual intent; ``None`` if it passes."""
        s = self.sentence
        where = f"{s.path}:{s.line}: {s.text!r}"
        if self.crisis is not None:
            return (
                f"{where} triggers the crisis screen (rule {self.crisis}); test sentences never contain crisis"
                " language: reword it, or move it to the crisis tests in tests/safety/"
            )
        expected = s.intent or NO_MATCH
        if self.intent != s.intent:
            return f"{where} should reach {expected} but went to {self.got} (score {self.score:.1f}, {self.reason})"
        if s.reply_contains and not any(fold(s.reply_contains) in fold(reply) for reply in self.replies):
            first = self.replies[0][:80] if self.replies else ""
            return f"{where} reached {expected}, but no reply contains {s.reply_contains!r}; the reply starts {first!r}"
        return None

    @property
    def passed(self) -> bool:
        """Whether the sentence reached its intent (and reply phrase) without tripping the crisis screen."""
        return self.problem is None


def known_failure_problem(result: Result, failure: KnownFailure) -> str | None:
    """Why a listed known failure is listed wrongly now, or ``None`` while it still fails as listed."""
    where = f"{failure.path}:{failure.line}: {failure.text!r}"
    if result.crisis is not None:
        return f"{where} triggers the crisis screen; crisis language is never a known failure: {result.problem}"
    if result.passed:
        return f"{where} now passes: remove it from the known failures, so the list only shrinks"
    if result.intent != failure.went_to:
        listed = failure.went_to or "null"
        return f"{where} now goes to {result.got}, not {listed} as listed: update its `went_to:`"
    return None


@dataclass(frozen=True)
class IntentScore:
    """How one intent fares: recall over its sentences, precision over everything sent to it."""

    intent: str
    sentences: int
    passed: int
    predicted: int
    """How many sentences (any intent, and out-of-scope ones) the engine sent to this intent."""
    correct: int
    fallbacks: int

    @property
    def recall(self) -> float:
        """The share of this intent's sentences that passed: its accuracy."""
        return self.passed / self.sentences if self.sentences else 0.0

    @property
    def precision(self) -> float:
        """The share of the sentences sent here that belonged here (1.0 when none were)."""
        return self.correct / self.predicted if self.predicted else 1.0


@dataclass(frozen=True)
class SweepRow:
    """Accuracy and fallback rate at one threshold and margin."""

    threshold: float
    margin: float
    accuracy: float
    fallback_rate: float
    false_match_rate: float
    meaning: str = "-"
    """With meaning-based matching on: the meaning scorer's share and the similarity that counts 100 (``0.4/0.9``)."""


def _rate(count: int, total: int) -> float:
    return count / total if total else 0.0


@dataclass(frozen=True)
class Evaluation:
    """The results of one run over the test sentences, and what they add up to."""

    results: tuple[Result, ...]
    out_of_scope: tuple[Result, ...]
    known: dict[tuple[str | None, str], KnownFailure] = field(default_factory=dict)
    settings: MatcherSettings = field(default_factory=MatcherSettings)
    overlap: int = 0
    """How many test sentences read exactly like an example once normalised (they test little)."""
    meaning: bool = False
    """Whether meaning-based matching was on."""

    def __repr__(self) -> str:
        return f"<Evaluation of {len(self.results)} sentences: accuracy {self.accuracy:.1%}>"

    @property
    def accuracy(self) -> float:
        """The share of test sentences that pass."""
        return _rate(sum(r.passed for r in self.results), len(self.results))

    @property
    def fallback_rate(self) -> float:
        """The share of test sentences that matched no intent."""
        return _rate(sum(r.intent is None and r.crisis is None for r in self.results), len(self.results))

    @property
    def false_match_rate(self) -> float:
        """The share of out-of-scope messages that matched an intent anyway."""
        return _rate(sum(r.intent is not None for r in self.out_of_scope), len(self.out_of_scope))

    def intents(self) -> list[IntentScore]:
        """Each tested intent's scores, worst accuracy first."""
        names = sorted({r.sentence.intent for r in self.results if r.sentence.intent})
        everything = self.results + self.out_of_scope
        scores = [
            IntentScore(
                intent=name,
                sentences=sum(r.sentence.intent == name for r in self.results),
                passed=sum(r.sentence.intent == name and r.passed for r in self.results),
                predicted=sum(r.intent == name for r in everything),
                correct=sum(r.intent == name and r.sentence.intent == name for r in everything),
                fallbacks=sum(r.sentence.intent == name and r.intent is None for r in self.results),
            )
            for name in names
        ]
        return sorted(scores, key=lambda s: (s.recall, s.intent))

    def confused(self, limit: int = 10) -> list[tuple[str, str, list[str]]]:
        """The most common (expected, went to) pairs between two intents, with their sentences."""
        pairs: dict[tuple[str, str], list[str]] = {}
        for r in self.results:
            if r.intent is not None and r.intent != r.sentence.intent:
                pairs.setdefault((r.sentence.intent or NO_MATCH, r.intent), []).append(r.sentence.text)
        ranked = sorted(pairs.items(), key=lambda item: (-len(item[1]), item[0]))
        return [(expected, got, texts) for (expected, got), texts in ranked[:limit]]

    def gate(self, overall: float = MIN_ACCURACY, per_intent: float = MIN_INTENT_ACCURACY) -> list[str]:
        """Why the accuracy gate fails (empty when it passes)."""
        failures = []
        if self.accuracy < overall:
            failures.append(f"overall accuracy is {self.accuracy:.1%}, below {overall:.0%}")
        failures += [
            f"{s.intent} is at {s.recall:.1%} ({s.passed}/{s.sentences}), below {per_intent:.0%}"
            for s in self.intents()
            if s.recall < per_intent
        ]
        return failures

    def known_problems(self) -> list[str]:
        """Listed known failures that are listed wrongly now (they pass, or fail differently)."""
        by_key = {r.sentence.key: r for r in self.results}
        found = (known_failure_problem(by_key[key], failure) for key, failure in self.known.items())
        return [problem for problem in found if problem]

    def unlisted(self) -> list[Result]:
        """Failing sentences that are not on the known-failures list."""
        return [r for r in self.results if not r.passed and r.sentence.key not in self.known]


async def run_sentences(
    catalog: Catalog, sentences: Iterable[Sentence], vectors: Vectors | None = None
) -> list[Result]:
    """Send each sentence through a real engine over ``catalog``, each as a new person."""
    engine = Engine(MemoryStore(), secrets.token_bytes(32), catalog, vectors=vectors)
    results = []
    try:
        for number, sentence in enumerate(sentences):
            outcome = await engine.handle(Incoming(f"eval-{number}", sentence.text, "eval"))
            match, detection = outcome.match, outcome.detection
            results.append(
                Result(
                    sentence,
                    match.intent if match else None,
                    match.score if match else 0.0,
                    match.reason if match else "crisis",
                    detection.rule if detection and match is None else None,
                    tuple(reply.text for reply in outcome.replies),
                )
            )
    finally:
        await engine.aclose()
    return results


async def evaluate(catalog: Catalog, sentences: SentenceSet, vectors: Vectors | None = None) -> Evaluation:
    """Run every test sentence and out-of-scope message through the engine (by meaning too, given ``vectors``)."""
    results = await run_sentences(catalog, [*sentences.sentences, *sentences.out_of_scope], vectors)
    examples = {" ".join(tokens_of(e.text)) for i in catalog.intents.values() for e in i.examples}
    count = len(sentences.sentences)
    return Evaluation(
        results=tuple(results[:count]),
        out_of_scope=tuple(results[count:]),
        known=dict(sentences.known),
        meaning=vectors is not None,
        overlap=sum(" ".join(tokens_of(s.text)) in examples for s in sentences.sentences),
    )


def sweep(
    catalog: Catalog,
    evaluation: Evaluation,
    thresholds: Sequence[float] = THRESHOLDS,
    margins: Sequence[float] = MARGINS,
    meaning: MeaningIndex | None = None,
) -> list[SweepRow]:
    """Accuracy, fallback and false-match rates at other thresholds (current margin) and margins (current threshold).

    Only the intent counts here (not ``reply_contains``), and a sentence that tripped the crisis
    screen counts as wrong at every setting, as it does in the evaluation.
    """
    current = evaluation.settings
    settings = [replace(current, threshold=t) for t in sorted({*thresholds, current.threshold})]
    settings += [replace(current, margin=m) for m in sorted({*margins, current.margin}) if m != current.margin]
    if meaning is not None:
        meaning = meaning.remembering()
        now = current.meaning
        settings += [
            replace(current, meaning=replace(now, weight=weight, full=full))
            for weight, full in MEANING
            if (weight, full) != (now.weight, now.full)
        ]
    texts = [r.sentence.text for r in (*evaluation.results, *evaluation.out_of_scope) if not r.crisis]
    readings: dict[object, dict[str, tuple[list[Candidate], list[Candidate]] | None]] = {}
    rows = []
    for setting in settings:
        matcher = Matcher(catalog.phrases(), setting, meaning)
        if setting.meaning not in readings:  # the threshold and margin leave a reading as it is: read once
            readings[setting.meaning] = {text: matcher.reading(text) for text in dict.fromkeys(texts)}
        read = readings[setting.meaning]

        def reached(result: Result, matcher: Matcher = matcher, read: dict = read) -> str | None:
            reading = None if result.crisis else read[result.sentence.text]
            return None if reading is None else matcher.choose(*reading).intent

        got = [(reached(r), r) for r in evaluation.results]
        wrong = [reached(r) for r in evaluation.out_of_scope]
        rows.append(
            SweepRow(
                setting.threshold,
                setting.margin,
                _rate(sum(intent == r.sentence.intent and not r.crisis for intent, r in got), len(got)),
                _rate(sum(intent is None and not r.crisis for intent, r in got), len(got)),
                _rate(sum(intent is not None for intent in wrong), len(wrong)),
                f"{setting.meaning.weight:g}/{setting.meaning.full:g}" if meaning is not None else "-",
            )
        )
    return rows


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A plain text table with aligned columns; numbers are right-aligned."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in cells[1:]) and len(cells) > 1 for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True))

    lines = [line(cells[0]), line(["-" * w for w in widths]), *map(line, cells[1:])]
    return "".join(text.rstrip() + "\n" for text in lines)


def _is_number(text: str) -> bool:
    return text.rstrip("%").replace(".", "", 1).isdigit()


def intent_table(evaluation: Evaluation) -> str:
    """Per-intent accuracy (recall), precision and fallbacks, worst first."""
    return table(
        ["intent", "sentences", "passed", "accuracy", "precision", "fallbacks"],
        [
            (s.intent, s.sentences, s.passed, f"{s.recall:.0%}", f"{s.precision:.0%}", s.fallbacks)
            for s in evaluation.intents()
        ],
    )


def report(evaluation: Evaluation, rows: Sequence[SweepRow]) -> str:
    """The evaluation as plain tables for people."""
    e, s = evaluation, evaluation.settings
    in_use = f"{s.meaning.weight:g}/{s.meaning.full:g}" if e.meaning else "-"
    total = len(e.results)
    out = [
        f"{total} test sentences, {len(e.out_of_scope)} out-of-scope messages"
        f" (threshold {s.threshold:g}, margin {s.margin:g}; meaning-based matching {'on' if e.meaning else 'off'})",
        f"accuracy         {e.accuracy:6.1%}   ({sum(r.passed for r in e.results)} of {total} reach their intent)",
        f"fallback rate    {e.fallback_rate:6.1%}   (test sentences that matched nothing)",
        f"false-match rate {e.false_match_rate:6.1%}   (out-of-scope messages that matched an intent)",
        f"overlap          {e.overlap:6d}   (test sentences that read exactly like an example)",
        "",
        "Per intent (accuracy = recall; precision counts out-of-scope messages sent to the intent):",
        intent_table(e),
        "Most confused (expected -> went to):",
        table(
            ["expected", "went to", "count", "for example"],
            [(a, b, len(texts), texts[0][:60]) for a, b, texts in e.confused()],
        ),
        "Threshold, margin and meaning sweep (intent only; meaning: its share / the similarity that counts 100):",
        table(
            ["threshold", "margin", "meaning", "accuracy", "fallbacks", "false matches", "in use"],
            [
                (
                    f"{r.threshold:g}",
                    f"{r.margin:g}",
                    r.meaning,
                    f"{r.accuracy:.1%}",
                    f"{r.fallback_rate:.1%}",
                    f"{r.false_match_rate:.1%}",
                    "*" if (r.threshold, r.margin, r.meaning) == (s.threshold, s.margin, in_use) else "",
                )
                for r in rows
            ],
        ),
    ]
    matched = [r for r in e.out_of_scope if r.intent is not None]
    if matched:
        out.append("Out-of-scope messages that matched:")
        out.append(
            table(["message", "went to", "score"], [(r.sentence.text, r.got, f"{r.score:.1f}") for r in matched])
        )
    gate = e.gate()
    out.append(
        f"Gate (at least {MIN_ACCURACY:.0%} overall and {MIN_INTENT_ACCURACY:.0%} per intent): "
        + ("passes" if not gate else "FAILS")
    )
    out += [f"  {reason}" for reason in gate]
    listed = e.known_problems()
    unlisted = e.unlisted()
    out.append(
        f"Known failures: {len(e.known)} listed, {len(listed)} listed wrongly now,"
        f" {len(unlisted)} failing but not listed"
    )
    out += [f"  {problem}" for problem in listed]
    out += [f"  not listed: {r.problem}" for r in unlisted]
    return "\n".join(out) + "\n"


def as_json(evaluation: Evaluation, rows: Sequence[SweepRow], extra: dict[str, object] | None = None) -> str:
    """The evaluation as one JSON document (with ``extra``'s keys added)."""
    e = evaluation
    document = {
        "settings": {"threshold": e.settings.threshold, "margin": e.settings.margin},
        "sentences": len(e.results),
        "accuracy": round(e.accuracy, 4),
        "fallback_rate": round(e.fallback_rate, 4),
        "out_of_scope": {
            "messages": len(e.out_of_scope),
            "false_match_rate": round(e.false_match_rate, 4),
            "matched": [
                {"text": r.sentence.text, "intent": r.intent, "score": r.score}
                for r in e.out_of_scope
                if r.intent is not None
            ],
        },
        "overlap": e.overlap,
        "intents": [
            {
                "intent": s.intent,
                "sentences": s.sentences,
                "passed": s.passed,
                "recall": round(s.recall, 4),
                "precision": round(s.precision, 4),
                "fallbacks": s.fallbacks,
            }
            for s in e.intents()
        ],
        "confused": [
            {"expected": a, "got": b, "count": len(texts), "sentences": texts} for a, b, texts in e.confused()
        ],
        "sweep": [
            {
                "threshold": r.threshold,
                "margin": r.margin,
                "meaning": r.meaning,
                "accuracy": round(r.accuracy, 4),
                "fallback_rate": round(r.fallback_rate, 4),
                "false_match_rate": round(r.false_match_rate, 4),
            }
            for r in rows
        ],
        "gate": {"passed": not e.gate(), "failures": e.gate()},
        "known_failures": {
            "listed": len(e.known),
            "listed_wrongly": e.known_problems(),
            "unlisted": [r.problem for r in e.unlisted()],
        },
        "failures": [
            {
                "file": str(r.sentence.path),
                "line": r.sentence.line,
                "text": r.sentence.text,
                "expected": r.sentence.intent,
                "got": r.intent,
                "score": r.score,
                "crisis": r.crisis,
            }
            for r in e.results
            if not r.passed
        ],
        "meaning": e.meaning,
        **(extra or {}),
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


KNOWN_HEADER = """\
# yaml-language-server: $schema=../../schemas/known_failures.schema.json
# Test sentences that fail today, listed openly. Each runs expecting failure; when one starts
# passing (or goes to another intent than `went_to`), the test suite fails until the list is
# updated, so the list only shrinks. `went_to: null` means the bot matched no intent.
# Crisis language is never listed here: a test sentence must not trigger the crisis screen.
# Rewrite it from the current results with: python -m bot eval --update-known-failures
"""


def known_failures_yaml(evaluation: Evaluation) -> tuple[str, int]:
    """The known-failures file for the sentences failing now, and how many it lists.

    A sentence that trips the crisis screen is never listed: it keeps failing until it is reworded.
    """
    failing = [r for r in evaluation.results if not r.passed and r.crisis is None]
    lines = [KNOWN_HEADER + "failures:" + ("" if failing else " []")]
    for r in failing:
        lines += [
            f"  - intent: {r.sentence.intent}",
            f"    text: {json.dumps(r.sentence.text, ensure_ascii=False)}",
            f"    went_to: {r.intent or 'null'}",
        ]
    return "\n".join(lines) + "\n", len(failing)
