"""Beside the tuned figures of ``python -m bot eval``: the blind set's figures, and where meaning and fuzzy disagree.

The blind set (``tests/understanding_blind/``) was written by people who never saw the examples
and frozen before the meaning-based matcher was tuned. Only its aggregate figures are ever shown:
never which message went where, so that nobody tunes to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.content import Catalog, read_yaml
from bot.conversations import Sentence
from bot.evaluate import Evaluation, Result, report, run_sentences, sweep, table
from bot.evaluate import as_json as evaluate_json
from bot.matcher import Matcher
from bot.meaning import MeaningIndex, Vectors, index_of

BLIND_DIR = Path("tests") / "understanding_blind"
"""The blind set, relative to the content root."""
KINDS = ("short", "texting", "long", "out_of_scope")
"""The blind set's files: three kinds of questions, and messages no topic answers."""
PROVENANCE = (
    "written by helpers who never saw the examples, the tuned sentences or the matcher, and frozen"
    " before the meaning-based matcher was built or tuned; never tuned on (its README.md says more)"
)


@dataclass(frozen=True)
class BlindFigure:
    """How one file of the blind set fares: counts only."""

    kind: str
    messages: int
    right: int
    """Reached the intent it names (for out-of-scope messages: fell back honestly)."""
    fallbacks: int
    crises: int

    @property
    def share(self) -> float:
        """The share that was right."""
        return self.right / self.messages if self.messages else 0.0


def read_blind(folder: Path) -> dict[str, list[Sentence]]:
    """Each blind file's messages as sentences (``intent: null`` means the honest fallback is right)."""
    found: dict[str, list[Sentence]] = {}
    for kind in KINDS:
        path = folder / f"{kind}.yaml"
        data, problems = read_yaml(path)
        if problems or not isinstance(data, list):
            continue
        found[kind] = [
            Sentence(str(item["text"]), item.get("intent"), path, line)
            for item, line in zip(data, data.lines, strict=True)
            if isinstance(item, dict) and item.get("text")
        ]
    return found


async def blind_figures(catalog: Catalog, folder: Path, vectors: Vectors | None = None) -> list[BlindFigure]:
    """The blind set through the real engine, counted per file; empty when there is no blind set."""
    figures = []
    for kind, sentences in read_blind(folder).items():
        results = await run_sentences(catalog, sentences, vectors)
        figures.append(
            BlindFigure(
                kind,
                len(results),
                sum(r.intent == r.sentence.intent and r.crisis is None for r in results),
                sum(r.intent is None and r.crisis is None for r in results),
                sum(r.crisis is not None for r in results),
            )
        )
    return figures


def blind_report(figures: Sequence[BlindFigure], folder: Path) -> str:
    """The blind figures as a table, with where they come from."""
    if not figures:
        return f"Blind set: none found in {folder}.\n"
    total = sum(f.messages for f in figures)
    rows = [
        (
            f.kind,
            f.messages,
            f"{f.share:.1%}",
            "fell back" if f.kind == "out_of_scope" else "right topic",
            f.fallbacks,
            f.crises,
        )
        for f in figures
    ]
    head = f"Blind set ({folder}, {total} messages, {PROVENANCE}); figures only:\n"
    return head + table(["file", "messages", "share", "of what", "fallbacks", "crisis replies"], rows)


def blind_json(figures: Sequence[BlindFigure], folder: Path) -> dict[str, object]:
    """The blind figures for ``eval --json``."""
    return {
        "folder": str(folder),
        "provenance": PROVENANCE,
        "files": {
            f.kind: {
                "messages": f.messages,
                "right": f.right,
                "share": round(f.share, 4),
                "fallbacks": f.fallbacks,
                "crisis_replies": f.crises,
            }
            for f in figures
        },
    }


@dataclass(frozen=True)
class Disagreement:
    """One intent's tuned sentences where the fuzzy scorers' best intent and the nearest example's differ."""

    intent: str
    sentences: int
    disagree: int
    meaning_right: int
    """Of those, how many the meaning scorer had right (the fuzzy scorers wrong): worth an example in new words."""
    fuzzy_right: int
    """Of those, how many the fuzzy scorers had right (the meaning scorer wrong)."""
    texts: tuple[str, ...]


def disagreements(catalog: Catalog, results: Sequence[Result], index: MeaningIndex) -> list[Disagreement]:
    """Per intent, the tuned sentences on which the meaning scorer alone and the fuzzy scorers alone part ways."""
    fuzzy = Matcher(catalog.phrases())
    texts = [r.sentence.text for r in results]
    vectors = index.embed(texts) if texts else []
    by_intent: dict[str, list[tuple[str, str | None, str | None]]] = {}
    for result, vector in zip(results, vectors, strict=True):
        ranked = fuzzy.rank(result.sentence.text)
        nearest = index.nearest(vector)
        fuzzy_top = ranked[0].intent if ranked else None
        meaning_top = max(nearest, key=lambda intent: nearest[intent].similarity) if nearest else None
        by_intent.setdefault(result.sentence.intent or "", []).append((result.sentence.text, fuzzy_top, meaning_top))
    found = []
    for intent, rows in sorted(by_intent.items()):
        split = [(text, f, m) for text, f, m in rows if f != m]
        found.append(
            Disagreement(
                intent,
                len(rows),
                len(split),
                sum(m == intent for _, _, m in split),
                sum(f == intent for _, f, _ in split),
                tuple(text for text, _, _ in split),
            )
        )
    return sorted(found, key=lambda d: (-d.disagree, d.intent))


def disagreement_json(found: Sequence[Disagreement]) -> list[dict[str, object]]:
    """Where meaning and fuzzy disagree, for ``eval --json``, with the tuned sentences themselves."""
    return [
        {
            "intent": d.intent,
            "sentences": d.sentences,
            "disagree": d.disagree,
            "meaning_right": d.meaning_right,
            "fuzzy_right": d.fuzzy_right,
            "texts": list(d.texts),
        }
        for d in found
        if d.disagree
    ]


def disagreement_report(found: Sequence[Disagreement]) -> str:
    """Where meaning and fuzzy disagree, per intent, most first."""
    rows = [(d.intent, d.sentences, d.disagree, d.meaning_right, d.fuzzy_right) for d in found if d.disagree]
    head = (
        "Where the meaning scorer alone and the fuzzy scorers alone pick different intents (tuned sentences; each"
        " is a place where an example in the person's own words would help; `--json` lists them):\n"
    )
    return head + table(["intent", "sentences", "disagree", "meaning right", "fuzzy right"], rows)


def full_report(
    catalog: Catalog, result: Evaluation, vectors: Vectors | None, blind: Path | None, *, as_json: bool
) -> str:
    """What ``python -m bot eval`` prints: the tuned figures and sweep, the blind figures, and the disagreements.

    ``blind`` is the blind set's folder (default: ``BLIND_DIR`` under the content root).
    """
    blind_dir = blind or catalog.root / BLIND_DIR
    index = index_of(catalog.intents.values(), vectors)
    rows = sweep(catalog, result, meaning=index)
    figures = asyncio.run(blind_figures(catalog, blind_dir, vectors))
    split = disagreements(catalog, result.results, index) if index else []
    if as_json:
        extra = {"blind": blind_json(figures, blind_dir), "disagreements": disagreement_json(split)}
        return evaluate_json(result, rows, extra)
    text = report(result, rows) + blind_report(figures, blind_dir)
    return text + disagreement_report(split) if index is not None else text
