"""Labelled messages for the learned crisis screen: the training corpus, the project's own sets and the blind sets."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from bot.lexicon import CATEGORIES

NONE = "none"
"""The label of a message that is not a crisis."""
LABELS: tuple[str, ...] = (NONE, *CATEGORIES)
"""Every label the model predicts, in the order of its outputs."""


class CorpusError(ValueError):
    """A corpus file is not a list of labelled messages; the message names the file and the item."""


@dataclass(frozen=True)
class Item:
    """One labelled message and where it came from."""

    text: str
    label: str
    source: str
    """The file it was read from, relative to the repository, e.g. ``safety/corpus/young_1.yaml``."""


def _read(path: Path, root: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise CorpusError(f"{path.relative_to(root)}: cannot be read: {error}") from None


def labelled(path: Path, root: Path, *, key: str = "label") -> list[Item]:
    """A file that is a list of ``{text, <key>}`` items (the corpus uses ``label``, the blind sets ``category``)."""
    data = _read(path, root)
    where = str(path.relative_to(root))
    if not isinstance(data, list):
        raise CorpusError(f"{where}: expected a list of {{text, {key}}} items")
    items = []
    for number, entry in enumerate(data, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or entry.get(key) not in LABELS:
            raise CorpusError(f"{where}: item {number} needs `text:` and `{key}:` one of {', '.join(LABELS)}")
        items.append(Item(entry["text"], entry[key], where))
    return items


def _project_sets(root: Path) -> Iterator[Item]:
    """The must-catch and must-not-catch phrases and every intent example (none of which is a crisis)."""
    safety = root / "tests" / "safety"
    must_catch = _read(safety / "must_catch.yaml", root)
    for group in must_catch.values():  # type: ignore[union-attr]
        for entry in group:
            yield Item(entry["text"], entry["category"], "tests/safety/must_catch.yaml")
    must_not = _read(safety / "must_not_catch.yaml", root)
    for group in must_not.values():  # type: ignore[union-attr]
        for text in group:
            yield Item(text, NONE, "tests/safety/must_not_catch.yaml")
    for path in sorted((root / "intents").glob("*.yml")):
        intent = _read(path, root)
        for text in intent.get("examples", ()):  # type: ignore[union-attr]
            yield Item(str(text), NONE, str(path.relative_to(root)))


def training(root: Path) -> list[Item]:
    """Everything the model is trained on: ``safety/corpus/*.yaml`` and the project's own sets, in a fixed order."""
    corpus = [item for path in sorted((root / "safety" / "corpus").glob("*.yaml")) for item in labelled(path, root)]
    return corpus + list(_project_sets(root))


def safety_part(items: Iterable[Item]) -> list[Item]:
    """The items that are not intent examples: the corpus and the must-catch and must-not-catch sets.

    Intent examples (all "not a crisis") change whenever moderators edit content; the model does not have to be
    retrained for that, so the card's ``safety_corpus_sha256`` and the recorded scores cover this part alone.
    """
    return [item for item in items if not item.source.startswith("intents/")]


def blind(root: Path) -> list[Item]:
    """The frozen blind sets in ``tests/safety/blind/``: never trained or tuned on."""
    folder = root / "tests" / "safety" / "blind"
    return [item for path in sorted(folder.glob("*.yaml")) for item in labelled(path, root, key="category")]


def digest(items: Iterable[Item]) -> str:
    """A SHA-256 over the items' texts and labels, recorded beside the model it trained."""
    hashed = hashlib.sha256()
    for item in items:
        hashed.update(f"{item.label}\t{item.text}\n".encode())
    return hashed.hexdigest()


def conversations(root: Path) -> list[Item]:
    """Every sentence in tests/conversations/ (held-out, out-of-scope, known failures): none is a crisis.

    Never trained on; calibration keeps the check-in below 1% of them (``bot.model.train``).
    """
    items = []
    for path in sorted((root / "tests" / "conversations").glob("*.yaml")):
        data = _read(path, root) or {}
        for entry in data.get("tests", data.get("failures", [])):
            text = entry if isinstance(entry, str) else entry.get("text")
            if isinstance(text, str):
                items.append(Item(text, NONE, str(path.relative_to(root))))
    return items
