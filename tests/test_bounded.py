"""Bounded work per message in the crisis screen: `check` refuses patterns that can backtrack catastrophically,
and a pattern that slips past it runs out of its time bound, counts as a match, and is reported."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot import bounded
from bot.checking import check
from bot.content import read_content
from bot.engine import Engine
from bot.health import Health
from bot.models import ReplyKind
from bot.rules import floor
from bot.store.memory import MemoryStore
from tests.conftest import SECRET, Chat, Clock
from tests.test_rules import line_of

ISSUE = r"\bhe (?:\w+\s?)*\bhits me\b"
"""The pattern of issue 12: 28 s on a 30-character message with Python's own engine."""

ONE_PATTERN = """\
patterns:
  - id: local.hits
    category: partner_danger
    level: crisis
    pattern: {pattern}
    examples:
      - he hits me
"""

ALTERNATIVES = """\
patterns:
  - id: local.hits
    category: partner_danger
    level: crisis
    alternatives: |
      \\bhe hit me\\b
      {pattern}
    examples:
      - he hit me
"""


@pytest.mark.parametrize("template", [ONE_PATTERN, ALTERNATIVES], ids=["pattern", "alternatives"])
def test_check_refuses_the_issues_pattern_at_its_line(mini_content: Callable[..., Path], template: str) -> None:
    text = template.format(pattern=ISSUE)
    root = mini_content({"safety/patterns.yml": text})
    report = check(root)
    needle = f"    pattern: {ISSUE}" if template is ONE_PATTERN else f"      {ISSUE}"
    expected = f"{root}/safety/patterns.yml:{line_of(text, needle)}: error: {bounded.NESTED}"
    assert [str(problem) for problem in report.problems if problem.level == "error"] == [expected]
    assert report.exit_code() == 1 and "millions of ways" in expected
    assert read_content(root)[0] is None  # the content is not served with it (a reload keeps the last good one)


@pytest.mark.parametrize(
    "source",
    [
        ISSUE,
        r"(a+)+b",
        r"(?:\w+x)*",
        r"(\w+\s?){0,6}y",
        r"(?:\w+(?: \w+)? )*",
        r"(?!(?:\w+\s?)*x)a",
        r"(?:.+ )*x",
        r"\bhe (?:x|xx)+y",
        r"\bhe (?:\w|\w\w)*y",
    ],
)
def test_nested_repeats_without_a_delimiter_are_refused(source: str) -> None:
    assert bounded.backtracking(source) == bounded.NESTED


@pytest.mark.parametrize("source", [r"\w+\s?\w+", r".*.*x", r"\bi \w*\b\w+ you"])
def test_two_repeats_in_a_row_over_the_same_letters_are_refused(source: str) -> None:
    assert bounded.backtracking(source) == bounded.ADJACENT


@pytest.mark.parametrize(
    "source",
    [
        r"(?:[^ |]+ ){0,3}x",  # the floor's <G3>: each word ends at a space
        r"(?:\w+ )*x",
        r"(?: \w+)*",
        r"(?:a+b)*",
        r"\w+ \w+",
        r".*x.*",
        r"(?:\w++\s?)*",  # possessive: gives nothing back
        r"(?:really |so )*x",
        r"(?:(?:he|him|her) )*x",
        r"(?:(?:has|has started|started) ){0,3}x",  # a few repetitions of a few lengths: a few ways
    ],
)
def test_repeats_with_one_way_to_split_a_message_pass(source: str) -> None:
    assert bounded.backtracking(source) is None


LAUGHS = r"\bhe said " + "(?:ha |ha ha )" * 25 + r"and left\b"
"""No repeat at all, so `check` passes it, yet 25 choices of one or two words make 2^25 ways to fail."""
LAUGHING = "He said ha ha ha " + "ha " * 60 + "lol and left"
"""Holds every word the rule needs (so the prefilter lets it run) and fails it late; the floor finds nothing."""


@pytest.fixture
def slipped(mini_content: Callable[..., Path]) -> Path:
    """Content whose moderators' file holds ``LAUGHS``, which `check` accepts."""
    text = ONE_PATTERN.replace("local.hits", "local.laughs").replace("he hits me", "he said " + "ha " * 25 + "and left")
    root = mini_content({"safety/patterns.yml": text.format(pattern=LAUGHS)})
    assert check(root).exit_code() == 0
    return root


async def test_a_pattern_that_slips_past_check_runs_out_of_its_bound_and_counts_as_a_match(
    slipped: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    catalog, _ = read_content(slipped)
    assert catalog is not None and [rule.id for rule in catalog.safety_rules] == ["local.laughs"]
    store = MemoryStore()
    engine = Engine(store, SECRET, catalog, clock=clock)
    health = Health(engine.faults, ping=store.ping, content=lambda: {"ok": True})
    try:
        assert engine.screen.detect(LAUGHING.replace("ha ", "ha, ")) is None  # other shapes finish: nothing fires
        with caplog.at_level(logging.ERROR, logger="unhooked.crisis"):
            replies = await Chat(engine).say(LAUGHING)
        assert engine.screen.detect(LAUGHING).rule == "local.laughs"  # type: ignore[union-attr]
        assert replies[0].kind is ReplyKind.CRISIS  # a timeout never makes a message look safe
        assert engine.metrics.pattern_timeouts.value() >= 1
        lines = [record.getMessage() for record in caplog.records]
        assert any("local.laughs" in line and "ran out of its 0.1 s bound" in line for line in lines), lines
        assert not any("ha ha" in line or "lol" in line for line in lines)  # never the message

        # The floor still screens a message on which the slow pattern runs out, and its own rule wins.
        found = engine.screen.detect(LAUGHING + " and i want to kill myself")
        assert found is not None and found.rule in {rule.id for rule in floor()}

        ok, body = await health.report()
        assert not ok and body["failing"] == ["crisis_patterns"]
        (problem,) = body["checks"]["crisis_patterns"]["problems"]
        assert problem.startswith("rule local.laughs failing")
        assert "counted as a match (crisis, partner_danger)" in problem

        engine.screen.use(floor())  # the rules changed (a reload without it): the fault goes
        assert engine.screen.detect(LAUGHING) is None  # the crisis reply above was the slow rule's alone
        ok, body = await health.report()
        assert ok and "crisis_patterns" not in body["checks"]
    finally:
        await engine.aclose()


def test_an_example_that_runs_out_of_the_bound_is_an_error(mini_content: Callable[..., Path]) -> None:
    text = ONE_PATTERN.replace("he hits me", LAUGHING).format(pattern=LAUGHS)
    root = mini_content({"safety/patterns.yml": text})
    problems = [str(problem) for problem in check(root).problems if problem.level == "error"]
    expected = f"{root}/safety/patterns.yml:{line_of(text, '      - ' + LAUGHING)}: error: safety pattern 'local.hits'"
    assert len(problems) == 1 and problems[0].startswith(expected) and "took more than 0.1 s" in problems[0]


def test_a_search_that_ends_within_its_bound_is_not_stopped_by_another_thread_keeping_the_interpreter_busy() -> None:
    pattern = bounded.compile_pattern(r"(?:a|aa)+b")  # backtracks: a few milliseconds on these 21 letters
    text = "a" * 21
    started = time.thread_time()
    assert bounded.search(pattern, text) is False
    assert time.thread_time() - started < bounded.BOUND / 2, "this machine is too slow for the test's pattern"
    stop = threading.Event()

    def busy() -> None:  # the event loop, say, running Python while the crisis screen's thread searches
        while not stop.is_set():
            sum(range(10_000))

    other = threading.Thread(target=busy)
    other.start()
    try:
        found = [bounded.search(pattern, text) for _ in range(10)]
    finally:
        stop.set()
        other.join()
    assert found == [False] * 10  # not None: no search ran out of a bound it did not spend
