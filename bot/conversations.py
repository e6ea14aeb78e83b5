"""Test sentences (``tests/conversations/``): what people write and the intent each should reach.

One file per intent, ``<intent>.yaml``::

    intent: no_contact
    tests:
      - should i block him everywhere            # a plain sentence
      - text: what is no contact                 # or a sentence with a phrase the reply must contain
        reply_contains: no contact

Two special files sit beside them: ``_out_of_scope.yaml`` (``tests:``, messages the bot should
*not* match) and ``_known_failures.yaml`` (``failures:``, each ``intent``, ``text`` and
``went_to``: sentences that fail today, listed openly so the list can only shrink).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.models import Problem
from bot.yamlfile import FieldReader, YamlList, YamlMap, read_yaml

KNOWN_FAILURES = "_known_failures.yaml"
OUT_OF_SCOPE = "_out_of_scope.yaml"
SENTENCE_FIELDS = ("text", "reply_contains")
FAILURE_FIELDS = ("intent", "text", "went_to")


@dataclass(frozen=True)
class Sentence:
    """One test sentence: what a person writes and the intent it should reach (``None``: no intent)."""

    text: str
    intent: str | None
    path: Path
    line: int
    reply_contains: str | None = None
    """A phrase the first reply must contain, when the file gives one."""

    @property
    def name(self) -> str:
        """A short, stable name: the file's stem and the sentence's line, e.g. ``no_contact:7``."""
        return f"{self.path.stem}:{self.line}"

    @property
    def key(self) -> tuple[str | None, str]:
        """What identifies the sentence in the known-failures list."""
        return (self.intent, self.text)


@dataclass(frozen=True)
class KnownFailure:
    """A sentence listed in ``_known_failures.yaml``: it is expected to fail, going to ``went_to``."""

    intent: str
    text: str
    went_to: str | None
    """The intent it reached when listed; ``None`` when the bot matched nothing."""
    path: Path
    line: int


@dataclass(frozen=True)
class SentenceSet:
    """Every test sentence in one folder, with the out-of-scope messages and the known failures."""

    folder: Path
    sentences: tuple[Sentence, ...] = ()
    out_of_scope: tuple[Sentence, ...] = ()
    known: Mapping[tuple[str | None, str], KnownFailure] = field(default_factory=dict)
    files: Mapping[str, Path] = field(default_factory=dict)
    """The file holding each intent's sentences."""


def _sentence(reader: FieldReader, item: Any, line: int, path: Path, intent: str | None) -> Sentence | None:
    if isinstance(item, str) and item.strip():
        return Sentence(" ".join(item.split()), intent, path, line)
    if isinstance(item, YamlMap):
        reader.fields(item, path, SENTENCE_FIELDS, "a test sentence")
        text = reader.text(item, "text", path, required=True)
        phrase = reader.text(item, "reply_contains", path, required=False)
        return Sentence(" ".join(text.split()), intent, path, line, phrase) if text else None
    if isinstance(item, bool | int | float):
        reader.error(path, line, "YAML reads this entry as a value, not text (yes, no, on, off, numbers): quote it")
    else:
        reader.error(path, line, "each test must be a sentence, or `text:` with `reply_contains:`")
    return None


def _sentences(reader: FieldReader, data: YamlMap, path: Path, intent: str | None) -> list[Sentence]:
    tests = data.get("tests")
    if not isinstance(tests, YamlList) or not tests:
        reader.error(path, data.lines.get("tests", data.line), "`tests:` must be a list of sentences, one per line")
        return []
    found = [_sentence(reader, item, line, path, intent) for item, line in zip(tests, tests.lines, strict=True)]
    seen: dict[str, Sentence] = {}
    for sentence in filter(None, found):
        if sentence.text.casefold() in seen:
            first = seen[sentence.text.casefold()]
            reader.error(path, sentence.line, f"this sentence is already listed on line {first.line}; remove one")
        else:
            seen[sentence.text.casefold()] = sentence
    return list(seen.values())


def _intent_file(reader: FieldReader, data: Any, path: Path) -> list[Sentence]:
    if not isinstance(data, YamlMap):
        reader.error(path, 1, "a test file must be a mapping with `intent:` and `tests:`")
        return []
    reader.fields(data, path, ("intent", "tests"), "a test file")
    intent = reader.text(data, "intent", path, required=True)
    if intent is not None and intent != path.stem:
        reader.error(path, data.lines["intent"], f"the file is named {path.stem!r} but tests {intent!r}")
        return []
    return _sentences(reader, data, path, intent) if intent else []


def _out_of_scope(reader: FieldReader, data: Any, path: Path) -> list[Sentence]:
    if not isinstance(data, YamlMap):
        reader.error(path, 1, "the out-of-scope file must be a mapping with `tests:`")
        return []
    reader.fields(data, path, ("tests",), "the out-of-scope file")
    return _sentences(reader, data, path, None)


def _known(reader: FieldReader, data: Any, path: Path) -> list[KnownFailure]:
    failures = data.get("failures") if isinstance(data, YamlMap) else None
    if not isinstance(failures, YamlList):
        reader.error(path, getattr(data, "line", 1), "the known-failures file must have `failures:` and a list")
        return []
    reader.fields(data, path, ("failures",), "the known-failures file")
    found = []
    for item, line in zip(failures, failures.lines, strict=True):
        if not isinstance(item, YamlMap):
            reader.error(path, line, "each known failure must have `intent:`, `text:` and `went_to:`")
            continue
        reader.fields(item, path, FAILURE_FIELDS, "a known failure")
        intent = reader.text(item, "intent", path, required=True)
        text = reader.text(item, "text", path, required=True)
        if "went_to" not in item:
            reader.error(path, line, "`went_to:` is missing; write the intent it went to, or null for no match")
        went_to = item.get("went_to")
        if went_to is not None and not isinstance(went_to, str):
            reader.error(path, item.lines["went_to"], "`went_to:` must be an intent id, or null for no match")
            went_to = None
        if intent and text:
            found.append(KnownFailure(intent, " ".join(text.split()), went_to, path, line))
    return found


def read_sentences(folder: Path) -> tuple[SentenceSet | None, list[Problem]]:
    """Read every test file in ``folder``; ``None`` when there is no such folder."""
    if not folder.is_dir():
        return None, []
    reader = FieldReader()
    sentences: list[Sentence] = []
    outside: list[Sentence] = []
    known: list[KnownFailure] = []
    files: dict[str, Path] = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        data, problems = read_yaml(path)
        reader.problems.extend(problems)
        if problems:
            continue
        if path.name == KNOWN_FAILURES:
            known = _known(reader, data, path)
        elif path.name == OUT_OF_SCOPE:
            outside = _out_of_scope(reader, data, path)
        elif path.name.startswith("_"):
            reader.error(
                path, 1, f"unknown special file; the ones starting with _ are {KNOWN_FAILURES}, {OUT_OF_SCOPE}"
            )
        else:
            found = _intent_file(reader, data, path)
            sentences += found
            if found:
                files[found[0].intent or ""] = path
    texts = {sentence.key for sentence in sentences}
    listed: dict[tuple[str | None, str], KnownFailure] = {}
    for failure in known:
        key = (failure.intent, failure.text)
        if key in listed:
            reader.error(failure.path, failure.line, f"this failure is already listed on line {listed[key].line}")
        elif key not in texts:
            reader.error(
                failure.path,
                failure.line,
                f"{failure.text!r} is not a test sentence of {failure.intent!r}; remove it from the list",
            )
        else:
            listed[key] = failure
    return SentenceSet(folder, tuple(sentences), tuple(outside), listed, files), reader.problems
