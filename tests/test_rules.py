"""The rule compiler: the floor in bot/floor/floor.yml and moderators' safety/patterns.yml, read by one loader."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot import lexicon, rules, screen
from bot.content import read_content
from bot.models import Level, Track
from tests.conftest import REPO

FLOOR_TEXT = lexicon.FLOOR_FILE.read_text("utf-8")


def _forget_the_floor() -> None:
    for cached in (lexicon.floor_data, lexicon.vocabulary, rules.floor_file, screen._vocabulary):
        cached.cache_clear()
    for cached in (screen._unrepeat, screen._correct, screen._rewrite):
        cached.cache_clear()


@pytest.fixture
def floor_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Path]]:
    """Point the screen at a floor file written by the test (the shipped one comes back afterwards)."""
    path = tmp_path / "floor.yml"

    def write(text: str) -> Path:
        path.write_text(text, encoding="utf-8")
        _forget_the_floor()
        return path

    monkeypatch.setattr(lexicon, "FLOOR_FILE", path)
    yield write
    monkeypatch.undo()
    _forget_the_floor()


def line_of(text: str, needle: str) -> int:
    """The line of the last line of ``text`` that reads ``needle``."""
    lines = text.splitlines()
    return len(lines) - lines[::-1].index(needle)


def test_the_shipped_floor_compiles_and_every_example_holds() -> None:
    assert rules.check_floor() == []
    assert len(rules.floor()) >= 75


def test_every_floor_rule_has_an_example_and_a_known_category() -> None:
    entries = rules.floor_file().entries
    assert all(entry.examples for entry in entries)
    assert {entry.rule.category for entry in entries} == set(lexicon.CATEGORIES)


def test_the_floor_is_packaged_inside_the_bot_package() -> None:
    assert lexicon.FLOOR_FILE.is_relative_to(REPO / "bot")


def with_floor(path: Path, *args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m bot ARGS`` in a new process whose floor file is ``path``."""
    script = (
        "import sys; from pathlib import Path; from bot import lexicon; "
        f"lexicon.FLOOR_FILE = Path({str(path)!r}); "
        f"from bot.__main__ import main; sys.exit(main({list(args)!r}))"
    )
    environment = {**os.environ, "UNHOOKED_DB": str(tmp / "bot.sqlite3")}
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=environment,
        timeout=60,
        check=False,
    )


def test_a_floor_that_does_not_compile_stops_the_start_with_a_sentence(
    floor_file: Callable[[str], Path], tmp_path: Path
) -> None:
    path = floor_file(FLOOR_TEXT.replace(r"\bnoose\b", r"\bnoose(\b", 1))
    result = with_floor(path, "chat", tmp=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    error = result.stderr
    line = line_of(path.read_text(), r"      \bnoose(\b")
    assert "the crisis screen's floor" in error and "will not start" in error
    assert f"{path}:{line}: error: the pattern is not a valid regular expression" in error


def test_a_missing_floor_stops_the_start(floor_file: Callable[[str], Path], tmp_path: Path) -> None:
    floor_file("")
    (tmp_path / "floor.yml").unlink()
    with pytest.raises(rules.FloorError, match="does not compile"):
        rules.floor()


def test_check_reports_an_example_the_floor_misses_with_its_line(
    floor_file: Callable[[str], Path], tmp_path: Path
) -> None:
    path = floor_file(FLOOR_TEXT.replace('      - "i tied a noose"', '      - "i tied a knot"', 1))
    result = with_floor(path, "check", tmp=tmp_path)
    assert result.returncode == 1
    line = line_of(path.read_text(), '      - "i tied a knot"')
    expected = f"{path}:{line}: error: the example 'i tied a knot' is not caught by safety pattern 'method.noose'"
    assert expected in result.stdout


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        (
            '      - "i tied a noose"',
            '      - "i tied a noose"\n    non_examples:\n      - "the noose scene in the film"',
            '      - "the noose scene in the film"',
            "the non-example 'the noose scene in the film' is caught by safety pattern 'method.noose'",
        ),
        (r"      \bnoose\b", r"      \bnoose<NOOSE>\b", r"      \bnoose<NOOSE>\b", "unknown macro <NOOSE>"),
        ("  G1: '(?:[^ |]+ )?'", "  G1: '(?:[^ |]+ )?<G2>'", "  G1: '(?:[^ |]+ )?<G2>'", ""),
        ("  G1: '(?:[^ |]+ )?'", "  G1: '(?:[^ |]+ )?'\n  G0: '<G0>'", "  G0: '<G0>'", "the macro G0 uses itself"),
        ("  - id: method.noose", "  - id: method.rope", "  - id: method.rope", "'method.rope' is already used"),
        (
            "    level: crisis\n    alternatives: |\n      \\bnoose",
            "    level: crisis\n    window: concern\n    alternatives: |\n      \\bnoose",
            "    window: concern",
            "must be higher than the rule's level",
        ),
    ],
    ids=["non-example-caught", "unknown-macro", "macro-ok", "macro-cycle", "duplicate-id", "window-lowers"],
)
def test_each_floor_mistake_is_named_with_its_line(
    floor_file: Callable[[str], Path], old: str, new: str, needle: str, message: str
) -> None:
    assert old in FLOOR_TEXT
    path = floor_file(FLOOR_TEXT.replace(old, new, 1))
    found = [str(problem) for problem in rules.check_floor() if problem.level == "error"]
    if not message:
        assert found == []
        return
    line = line_of(path.read_text(), needle)
    assert any(problem.startswith(f"{path}:{line}: error: ") and message in problem for problem in found), found


def test_a_floor_rule_with_no_example_is_reported(floor_file: Callable[[str], Path]) -> None:
    floor_file(FLOOR_TEXT.replace('    examples:\n      - "i tied a noose"\n', "", 1))
    assert any("'method.noose' has no examples" in str(problem) for problem in rules.check_floor())


def test_the_floor_reads_every_rule_field() -> None:
    by_id = {rule.id: rule for rule in rules.floor()}
    assert by_id["method.do_it_soon"].window_level is Level.IMMINENT
    assert by_id["self_harm.spanish"].language == "es"
    assert by_id["partner.suicide_threat"].track is Track.OTHERS
    assert by_id["attempt.took_quantity"].level is Level.IMMINENT


MODERATOR = """\
patterns:
  - id: local.bat
    category: partner_danger
    level: crisis
    alternatives: |
      \\b<HE> <ADV>(?:swung|waved) (?:a|his|her) bat at me\\b
      \\bbat (?:in|on) (?:his|her) hands?\\b
    examples:
      - my ex swung a bat at me
      - he had a bat in his hand
    non_examples:
      - he swung a bat at the ball
"""


def test_moderators_write_rules_the_way_the_floor_does(mini_content: Callable[..., Path]) -> None:
    root = mini_content({"safety/patterns.yml": MODERATOR})
    catalog, problems = read_content(root)
    assert catalog is not None, problems
    (rule,) = catalog.safety_rules
    assert (rule.id, rule.level, rule.track) == ("local.bat", Level.CRISIS, Track.OTHERS)


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        (
            "he swung a bat at the ball",
            "he waved a bat at me",
            "      - he waved a bat at me",
            "the non-example 'he waved a bat at me' is caught",
        ),
        (
            "(?:in|on)",
            "(?:in|on",
            "      \\bbat (?:in|on (?:his|her) hands?\\b",
            "the pattern is not a valid regular expression",
        ),
    ],
    ids=["non-example-fires", "bad-line-among-alternatives"],
)
def test_a_moderators_mistake_is_named_by_its_own_line(
    mini_content: Callable[..., Path], old: str, new: str, needle: str, message: str
) -> None:
    text = MODERATOR.replace(old, new)
    root = mini_content({"safety/patterns.yml": text})
    _, problems = read_content(root)
    expected = f"{root}/safety/patterns.yml:{line_of(text, needle)}: error: {message}"
    assert any(str(problem).startswith(expected) for problem in problems), problems


LISTED = """\
patterns:
  - id: local.bat
    category: partner_danger
    level: crisis
    alternatives:
      - \\b<HE> <ADV>(?:swung|waved) (?:a|his|her) bat at me\\b
      - \\bbat (?:in|on) (?:his|her) hands?\\b
    examples:
      - he had a bat in his hand
"""


def test_alternatives_may_be_a_list_and_a_bad_item_is_named_by_its_line(mini_content: Callable[..., Path]) -> None:
    catalog, problems = read_content(mini_content({"safety/patterns.yml": LISTED}))
    assert catalog is not None and [rule.id for rule in catalog.safety_rules] == ["local.bat"], problems
    text = LISTED.replace("(?:in|on)", "(?:in|on")
    root = mini_content({"safety/patterns.yml": text})
    _, problems = read_content(root)
    line = line_of(text, "      - \\bbat (?:in|on (?:his|her) hands?\\b")
    expected = f"{root}/safety/patterns.yml:{line}: error: the pattern is not a valid regular expression"
    assert any(str(problem).startswith(expected) for problem in problems), problems


def test_macros_expand_inside_a_pattern() -> None:
    rule = rules.compile_rule("local.x", "suicidal", "crisis", pattern=r"\bi <G2>want out\b", macros={"G2": "(?:x )?"})
    assert rule.pattern.pattern == r"\bi (?:x )?want out\b"
    with pytest.raises(rules.RuleError, match=re.escape("unknown macro <G9>")):
        rules.compile_rule("local.x", "suicidal", "crisis", pattern=r"\bi <G9>want out\b", macros={})


def test_the_safety_patterns_schema_names_what_the_compiler_accepts() -> None:
    schema = json.loads((REPO / "schemas" / "safety_patterns.schema.json").read_text("utf-8"))
    fields = schema["properties"]["patterns"]["items"]["properties"]
    assert set(fields) == set(rules.RULE_FIELDS)
    assert fields["category"]["enum"] == list(lexicon.CATEGORIES)
    assert fields["level"]["enum"] == [level.value for level in Level]
    assert fields["track"]["enum"] == [track.value for track in Track]
    assert fields["language"]["enum"] == list(rules.LANGUAGES)
