"""``python -m bot safety eval``: recall and false alarms of the whole crisis screen, blind sets beside tuned ones."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.crisis import CrisisScreen
from bot.lexicon import CATEGORIES
from bot.model import corpus
from bot.model.corpus import NONE, Item
from bot.models import Level

LEVELS = tuple(level.value for level in Level)


@dataclass
class Tally:
    """What the screen made of one set: detections by expected category and the level each reached."""

    name: str
    about: str
    caught: Counter[str] = field(default_factory=Counter)
    crisis: Counter[str] = field(default_factory=Counter)
    """How many reached crisis level or above, by expected category."""
    total: Counter[str] = field(default_factory=Counter)
    levels: Counter[str] = field(default_factory=Counter)
    misses: list[Item] = field(default_factory=list)

    def add(self, item: Item, level: str | None) -> None:
        """Count one message the screen gave ``level`` (``None``: nothing)."""
        self.total[item.label] += 1
        if level is not None:
            self.caught[item.label] += 1
            self.levels[level] += 1
            if level != Level.CONCERN.value:
                self.crisis[item.label] += 1
        if (level is None) != (item.label == NONE):
            self.misses.append(item)

    def share(self, labels: Iterable[str], of: Counter[str] | None = None) -> float | None:
        """The share of messages with these labels that the screen caught (``of``: reached crisis)."""
        labels = list(labels)
        total = sum(self.total[label] for label in labels)
        hit = sum((self.caught if of is None else of)[label] for label in labels)
        return hit / total if total else None

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON, per category."""
        crisis_labels = [label for label in self.total if label != NONE]
        return {
            "set": self.name,
            "about": self.about,
            "crisis_messages": sum(self.total[label] for label in crisis_labels),
            "recall": self.share(crisis_labels),
            "recall_at_crisis_level": self.share(crisis_labels, self.crisis),
            "negatives": self.total[NONE],
            "false_alarms": self.share([NONE]),
            "false_alarms_at_crisis_level": self.share([NONE], self.crisis),
            "by_category": {
                label: {"messages": self.total[label], "caught": self.caught[label], "at_crisis": self.crisis[label]}
                for label in (*CATEGORIES, NONE)
                if self.total[label]
            },
            "levels": dict(self.levels),
            "misses": [{"text": item.text, "category": item.label, "file": item.source} for item in self.misses],
        }


def sets(root: Path) -> list[tuple[str, str, list[Item]]]:
    """The sets the report covers, blind first: (name, provenance, items)."""
    tuned = [item for item in corpus.training(root) if item.source.startswith("tests/safety/")]
    return [
        (
            "blind",
            "tests/safety/blind/: written apart from the rules, frozen, never trained or tuned on",
            corpus.blind(root),
        ),
        ("tuned", "tests/safety/must_catch.yaml and must_not_catch.yaml: written with the rules, trained on", tuned),
        (
            "conversations",
            "tests/conversations/: people's questions to the bot; none is a crisis",
            corpus.conversations(root),
        ),
    ]


def evaluate(screen: CrisisScreen, root: Path) -> list[Tally]:
    """Run the screen over every set."""
    tallies = []
    for name, about, items in sets(root):
        tally = Tally(name, about)
        for item in items:
            found = screen.detect(item.text)
            tally.add(item, found.level.value if found else None)
        tallies.append(tally)
    return tallies


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def report(tallies: list[Tally], model_state: str, *, misses: bool = True) -> str:
    """The figures as a table per set, with the misses listed under each."""
    lines = [f"learned screen: {model_state}", ""]
    for tally in tallies:
        figures = tally.as_dict()
        lines.append(f"== {tally.name}: {tally.about}")
        if figures["crisis_messages"]:
            lines.append(
                f"recall {_percent(figures['recall'])} of {figures['crisis_messages']} crisis messages "  # type: ignore[arg-type]
                f"({_percent(figures['recall_at_crisis_level'])} at crisis level or above)"  # type: ignore[arg-type]
            )
        if figures["negatives"]:
            lines.append(
                f"false alarms {_percent(figures['false_alarms'])} of {figures['negatives']} non-crisis messages "  # type: ignore[arg-type]
                f"({_percent(figures['false_alarms_at_crisis_level'])} at crisis level or above)"  # type: ignore[arg-type]
            )
        by_level = ", ".join(f"{level} {tally.levels[level]}" for level in LEVELS)
        lines.append(f"detections by level: {by_level}")
        if figures["crisis_messages"]:
            lines.append(f"  {'category':<24} {'caught':>12} {'at crisis':>10}")
            for label in CATEGORIES:
                if tally.total[label]:
                    caught = f"{tally.caught[label]}/{tally.total[label]}"
                    lines.append(f"  {label:<24} {caught:>12} {tally.crisis[label]:>10}")
        if misses and tally.misses:
            lines.append("  misses:")
            wrong = defaultdict(list)
            for item in tally.misses:
                wrong[item.label].append(item)
            for label, items in sorted(wrong.items()):
                lines += [f"    [{label}] {item.text}" for item in items]
        lines.append("")
    return "\n".join(lines)


def as_json(tallies: list[Tally], model_state: str) -> str:
    """The figures as one JSON document."""
    return json.dumps(
        {"model": model_state, "sets": [tally.as_dict() for tally in tallies]}, ensure_ascii=False, indent=2
    )
