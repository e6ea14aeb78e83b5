"""Drop a new set's near-duplicates unread: the rule every development round and training set is filtered by."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from bot.model import corpus
from bot.model.corpus import Item

TRAINED = 90.0
"""A new item this close (rapidfuzz's ratio) to a training item, an earlier round's or its own file's is dropped."""
HELD = 85.0
"""A new item this close to a blind-set message or a sentence in ``tests/conversations/`` is dropped."""


@dataclass
class Filtered:
    """What the filter made of one new file: the items kept and, by reason, how many were dropped."""

    name: str
    kept: list[Item] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        """One line of counts; never a message's text."""
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.dropped.items())) or "none"
        read = len(self.kept) + sum(self.dropped.values())
        return f"{self.name}: {read} read, {len(self.kept)} kept; dropped: {reasons}"


def _folded(items: Iterable[Item]) -> list[str]:
    return [default_process(item.text) for item in items]


def _near(text: str, pool: list[str], cutoff: float) -> bool:
    return process.extractOne(text, pool, scorer=fuzz.ratio, score_cutoff=cutoff) is not None


def earlier_rounds(root: Path, leaving_out: Iterable[str] = ()) -> list[Item]:
    """Every development round and training set waiting in ``safety/corpus/next/``, but the files named."""
    skip = set(leaving_out)
    folder = root / "safety" / "corpus" / "next"
    return [
        item for path in sorted(folder.glob("*.yaml")) if path.name not in skip for item in corpus.labelled(path, root)
    ]


def filter_files(root: Path, paths: list[Path]) -> list[Filtered]:
    """Each new file's items that are not near a training item, an earlier round, a held-out sentence or each other."""
    names = [path.name for path in paths]
    trained = _folded([*corpus.training(root), *earlier_rounds(root, names)])
    held = _folded([*corpus.blind(root), *corpus.conversations(root)])
    results = []
    for path in paths:
        result = Filtered(path.name)
        seen: list[str] = []
        for item in corpus.labelled(path.resolve(), path.resolve().parent):
            text = default_process(item.text)
            if _near(text, trained, TRAINED):
                result.dropped["near a training item or an earlier round"] += 1
            elif _near(text, held, HELD):
                result.dropped["near a blind or conversation sentence"] += 1
            elif _near(text, seen, TRAINED):
                result.dropped["near an earlier item of the same file"] += 1
            else:
                result.kept.append(item)
                seen.append(text)
        results.append(result)
    return results


def write(result: Filtered, folder: Path) -> Path:
    """The kept items as the corpus keeps them: one flow-style ``{label, text}`` item a line."""
    path = folder / result.name
    lines = [f"- {json.dumps({'label': item.label, 'text': item.text}, ensure_ascii=False)}\n" for item in result.kept]
    path.write_text("".join(lines), encoding="utf-8")
    return path
