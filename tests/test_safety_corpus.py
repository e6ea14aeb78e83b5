"""The regression corpus in tests/safety/: 100% recall on must_catch, silence on must_not_catch.

Every must_catch phrasing is also tried in capitals, with curly apostrophes, with zero-width
characters between its letters, and buried in the middle of a long everyday message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.content import Catalog
from bot.lexicon import CATEGORIES
from bot.models import Level
from bot.rules import floor
from bot.safety import detect
from bot.screen import screen_text

FLOOR = floor()

CORPUS = Path(__file__).parent / "safety"
MUST_CATCH: dict[str, list[dict[str, Any]]] = yaml.safe_load((CORPUS / "must_catch.yaml").read_text("utf-8"))
MUST_NOT: dict[str, list[str]] = yaml.safe_load((CORPUS / "must_not_catch.yaml").read_text("utf-8"))
AMBIGUOUS: list[str] = yaml.safe_load((CORPUS / "ambiguous.yaml").read_text("utf-8"))

BEFORE = " ".join(MUST_NOT["filler"][:1] * 4)
AFTER = " ".join(MUST_NOT["filler"][1:] * 4)


def _id(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


CATCH_CASES = [
    pytest.param(item, id=f"{section}-{number:02d}-{_id(item['text'])}")
    for section, items in MUST_CATCH.items()
    for number, item in enumerate(items, 1)
]
NOT_CASES = [
    pytest.param(text, id=f"{section}-{number:02d}-{_id(text)}")
    for section, items in MUST_NOT.items()
    for number, text in enumerate(items, 1)
]


def variants(text: str) -> dict[str, str]:
    """The ways one phrasing is tried: as written, in capitals, curly, zero-width, buried."""
    found = {
        "as written": text,
        "capitals": text.upper(),
        "zero-width": "\u200b".join(text),
        "buried": f"{BEFORE} {text.rstrip('.')}. {AFTER}",
    }
    if "'" in text:
        found["curly apostrophes"] = text.replace("'", "\u2019")
    if "\u2019" in text:
        found["straight apostrophes"] = text.replace("\u2019", "'")
    return found


@pytest.mark.parametrize("item", CATCH_CASES)
def test_must_catch(item: dict[str, Any]) -> None:
    expected = Level(item["level"])
    misses = []
    for name, text in variants(item["text"]).items():
        found = detect(text)
        if found is None or found.level.rank < expected.rank or found.category != item["category"]:
            got = f"{found.level.value} {found.category} ({found.rule})" if found else "nothing"
            misses.append(f"{name}: got {got}; the screen saw {screen_text(text)[:120]!r}")
    assert not misses, f"expected at least {expected.value} {item['category']}:\n" + "\n".join(misses)


@pytest.mark.parametrize("text", NOT_CASES)
def test_must_not_catch(text: str) -> None:
    for variant in (text, text.upper(), text.replace("'", "\u2019")):
        found = detect(variant)
        assert found is None, f"{variant!r} fired {found.rule} ({found.level.value}); it saw {screen_text(variant)!r}"


@pytest.mark.parametrize("text", AMBIGUOUS, ids=[_id(text) for text in AMBIGUOUS])
def test_ambiguous_phrasings_get_at_least_a_check_in(text: str) -> None:
    found = detect(text)
    assert found is not None, f"{text!r} got no reply at all; it saw {screen_text(text)!r}"


def test_the_corpus_is_as_large_as_promised() -> None:
    catch = [item for items in MUST_CATCH.values() for item in items]
    assert len(catch) >= 200
    assert sum(len(items) for section, items in MUST_NOT.items()) >= 80
    assert len(MUST_NOT["hard_negatives"]) == 36  # every item of research §3.8


def test_every_entry_names_a_real_category_and_level() -> None:
    for items in MUST_CATCH.values():
        for item in items:
            assert set(item) == {"text", "category", "level"}, item
            assert item["category"] in CATEGORIES, item
            Level(item["level"])


def test_every_category_is_covered() -> None:
    covered = {item["category"] for items in MUST_CATCH.values() for item in items}
    assert covered == set(CATEGORIES)


def test_no_phrasing_is_listed_twice() -> None:
    texts = [item["text"].casefold() for items in MUST_CATCH.values() for item in items]
    texts += [text.casefold() for items in MUST_NOT.values() for text in items]
    assert len(texts) == len(set(texts))


def test_no_intent_example_triggers_the_screen(catalog: Catalog) -> None:
    fired = [
        (intent.id, example.text, found.rule)
        for intent in catalog.intents.values()
        for example in intent.examples
        if (found := detect(example.text, FLOOR + catalog.safety_rules)) is not None
    ]
    assert fired == []
