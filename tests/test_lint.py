"""The content checks: each kind of problem, found on a tiny content tree with its file, line and level."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.content import load_catalog
from bot.lint import LONG_PASSAGE, MAX_MESSAGE, check_content, lint
from bot.matcher import Matcher, MatcherSettings
from bot.meaning import vectors_for
from tests.conftest import MINI_CONTENT, REPO

Mini = Callable[..., Path]

MISS = MINI_CONTENT["intents/miss.yml"]
HELLO = MINI_CONTENT["intents/hello.yml"]
COLLIDING = HELLO.replace("  - good morning", "  - I keep missing her every night\n  - good")
"""hello with an example of miss's wording: held out, it goes to miss."""
QUOTES = MINI_CONTENT["responses/miss.yml"]
POLICY = MINI_CONTENT["policy/banned_advice.yml"]


def found(root: Path, tests_dir: Path | None = None) -> list[str]:
    return [str(problem) for problem in lint(load_catalog(root), root, tests_dir)]


def test_the_tiny_tree_is_clean(mini_content: Mini) -> None:
    assert found(mini_content()) == []


def test_the_shipped_content_has_no_errors() -> None:
    catalog, problems = check_content(REPO)
    assert catalog is not None, [str(p) for p in problems if p.level == "error"]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {
                "responses/chat.yml": MINI_CONTENT["responses/chat.yml"]
                + "  - id: spare\n    source: bot\n    text: Hm.\n"
            },
            "responses/chat.yml:6: warning: no intent uses passage 'spare'",
        ),
        (
            {"intents/miss.yml": MISS.replace("  - I keep", "  - Why do I miss her so much?\n  - I keep")},
            "intents/miss.yml:5: error: example 'Why do I miss her so much?' is the same as"
            " 'why do I miss him so much' of this intent (",
        ),
        (
            {"intents/hello.yml": HELLO.replace("  - good morning", "  - I keep missing my ex every day\n  - good")},
            "intents/miss.yml:5: error: example 'I keep missing her every day' is the same as"
            " 'I keep missing my ex every day' of intent 'hello' (",
        ),
        (
            {"intents/hello.yml": HELLO.replace("responses:", "keywords:\n  - Miss him\nresponses:")},
            "intents/miss.yml:7: error: keyword 'miss them' is already a keyword of 'hello' (",
        ),
        (
            {"intents/hello.yml": COLLIDING},
            "intents/hello.yml:5: warning: example 'I keep missing her every night' of 'hello', held out, goes to",
        ),
        (
            {"tests/conversations/miss.yaml": None},
            "intents/miss.yml:1: warning: intent 'miss' has no test sentences; add ",
        ),
        (
            {"tests/conversations/gone.yaml": "intent: gone\ntests:\n  - where did it go\n"},
            "tests/conversations/gone.yaml:1: error: 'gone' is not an intent; rename or remove this test file",
        ),
        (
            {
                "tests/conversations/_known_failures.yaml": (
                    "failures:\n  - intent: hello\n    text: hello there friend\n    went_to: farewell\n"
                )
            },
            "tests/conversations/_known_failures.yaml:2: error: 'farewell' is not an intent",
        ),
        (
            {"responses/miss.yml": QUOTES.replace("not proof you should", "not a sign you should")},
            "responses/miss.yml:2: error: passage 'miss.proof' is not verbatim from the article:"
            ' it follows the article up to "…Missing someone is not ", then reads "a sign you should go back.…"'
            ' where the article reads "proof you should go back. It is proof yo…"',
        ),
        (
            {"responses/miss.yml": QUOTES.replace("Missing someone", "Longing for someone")},
            "responses/miss.yml:2: error: passage 'miss.proof' is not verbatim from the article:"
            ' its words from "Longing for someone',
        ),
        (
            {"responses/miss.yml": QUOTES.replace("section: First Heading", "section: The Beginning")},
            "responses/miss.yml:2: error: passage 'miss.proof' names section 'The Beginning', which is not a"
            " heading of the article; the headings are: 'Introduction', 'First Heading', 'Second Heading'",
        ),
        (
            {"responses/miss.yml": QUOTES.replace("section: First Heading", "section: Second Heading")},
            "responses/miss.yml:2: error: passage 'miss.proof' says section 'Second Heading',"
            " but its text is under 'First Heading'",
        ),
        (
            {"responses/chat.yml": MINI_CONTENT["responses/chat.yml"].replace("What is", "What " * 200 + "is")},
            f"responses/chat.yml:2: warning: passage 'hello.reply' has 1023 characters, a wall of text on a phone;"
            f" keep passages under {LONG_PASSAGE}",
        ),
        (
            {"responses/chat.yml": MINI_CONTENT["responses/chat.yml"].replace("What is", "What " * 900 + "is")},
            f"responses/chat.yml:2: error: passage 'hello.reply' has 4523 characters; one message holds at most"
            f" {MAX_MESSAGE}",
        ),
        (
            {
                "responses/chat.yml": MINI_CONTENT["responses/chat.yml"].replace(
                    "What is", "Give him another chance. Is"
                )
            },
            "responses/chat.yml:2: error: passage 'hello.reply' contains 'give them another chance', advice the bot"
            " must never give: relationship advice with an abusive partner (",
        ),
        (
            {"intents/hello.yml": HELLO.replace("title: Say hello", "title: Couples Therapy?")},
            "intents/hello.yml:1: error: the title of 'hello' contains 'couples therapy'",
        ),
        (
            {"policy/banned_advice.yml": None},
            "policy/banned_advice.yml:1: error: the banned-advice list is missing",
        ),
        (
            {"policy/banned_advice.yml": POLICY + "      - Couples  therapy\n"},
            "policy/banned_advice.yml:6: error: 'Couples  therapy' is already banned on line 4",
        ),
        (
            {"policy/banned_advice.yml": POLICY.replace("    phrases:", "    phrase:")},
            "policy/banned_advice.yml:3: error: unknown field 'phrase' in a rule",
        ),
        (
            {"policy/banned_advice.yml": "rules: []\n"},
            "policy/banned_advice.yml:1: error: the banned-advice list must have `rules:`",
        ),
        (
            {"responses/chat.yml": MINI_CONTENT["responses/chat.yml"].replace("What is", "Call 1-800-799-7233. Is")},
            "responses/chat.yml:4: error: the hotline number '1-800-799-7233' is typed here; hotline facts live in"
            " bot/resources.py",
        ),
        (
            {"intents/miss.yml": MISS + "# text 988 if you need to\n"},
            "intents/miss.yml:11: error: the hotline number '988' is typed here",
        ),
        (
            {"source/article.yml": MINI_CONTENT["source/article.yml"] + "author: someone\n"},
            "source/article.yml:3: error: unknown field 'author' in the article file",
        ),
        (
            {"source/article.yml": 'title: "A test article"\nfile: missing.txt\n'},
            "source/article.yml:2: error: the article 'missing.txt' cannot be read as UTF-8 text",
        ),
        (
            {"tests/conversations/hello.yaml": "intent: hello\ntests:\n  - hi\n  - yes\n"},
            "tests/conversations/hello.yaml:4: error: YAML reads this entry as a value, not text",
        ),
        (
            {
                "tests/conversations/_known_failures.yaml": (
                    "failures:\n  - intent: hello\n    text: never written\n    went_to: null\n"
                )
            },
            "tests/conversations/_known_failures.yaml:2: error: 'never written' is not a test sentence of 'hello'",
        ),
    ],
    ids=[
        "unused-passage",
        "duplicate-example-within",
        "duplicate-example-across",
        "duplicate-keyword-across",
        "near-collision",
        "no-test-sentences",
        "test-file-for-unknown-intent",
        "known-failure-unknown-intent",
        "not-verbatim",
        "not-verbatim-from-the-start",
        "section-not-a-heading",
        "text-under-another-heading",
        "long-passage",
        "too-long-to-send",
        "banned-advice-in-passage",
        "banned-advice-in-title",
        "banned-list-missing",
        "banned-list-duplicate",
        "banned-list-unknown-field",
        "banned-list-empty",
        "hotline-number-in-passage",
        "hotline-number-in-comment",
        "article-unknown-field",
        "article-file-missing",
        "test-sentence-not-text",
        "known-failure-not-a-sentence",
    ],
)
def test_each_problem_is_named_with_its_file_line_and_level(
    mini_content: Mini, changes: dict[str, str | None], expected: str
) -> None:
    root = mini_content(changes)
    problems = found(root)
    assert any(problem.startswith(f"{root}/{expected}") for problem in problems), problems


def test_an_example_that_goes_to_another_intent_when_held_out_is_named_with_what_took_it(mini_content: Mini) -> None:
    root = mini_content({"intents/hello.yml": COLLIDING})
    [collision] = [problem for problem in found(root) if "held out" in problem]
    assert collision.startswith(f"{root}/intents/hello.yml:5: warning:")
    assert f"goes to 'miss' (score 88, from its keyword 'miss them' at {root}/intents/miss.yml:7)" in collision


def test_with_meaning_on_a_near_collision_says_what_each_scorer_gave(mini_content: Mini) -> None:
    root = mini_content({"intents/hello.yml": COLLIDING})
    vectors = vectors_for(None)
    assert vectors is not None, "the shipped model did not load"
    [collision] = [str(p) for p in lint(load_catalog(root), root, vectors=vectors) if "held out" in p.message]
    assert re.search(r"goes to 'miss' \(score \d+: fuzzy 88, meaning \d+, from its keyword 'miss them' at ", collision)
    assert f"nearest in meaning its example 'why do I miss him so much' at {root}/intents/miss.yml:4)" in collision


def test_an_example_its_own_intent_still_wins_is_not_reported(mini_content: Mini) -> None:
    # "I keep missing her every day" scores above the threshold for hello's "... every night" as well, but held
    # out it still goes to miss: a message like it is answered rightly, so there is nothing to warn about.
    root = mini_content({"intents/hello.yml": COLLIDING})
    catalog = load_catalog(root)
    first, second = Matcher(catalog.phrases()).rank("I keep missing her every day")[:2]
    assert (first.intent, second.intent) == ("miss", "hello") and second.score >= MatcherSettings().threshold
    assert not [problem for problem in found(root) if problem.startswith(f"{root}/intents/miss.yml")]


def test_without_a_tests_folder_there_is_one_note(mini_content: Mini, tmp_path: Path) -> None:
    root = mini_content()
    problems = found(root, tmp_path / "no-such-folder")
    assert problems == [
        f"{tmp_path}/no-such-folder:1: note: there is no test sentences folder here, so intents were not checked"
        " for test sentences; pass --tests DIR with the folder that has them"
    ]


def test_quote_and_dash_styles_do_not_count_as_differences(mini_content: Mini) -> None:
    article = MINI_CONTENT["source/article.txt"].replace("waves, and", "waves — and").replace("It is", "It’s")
    quotes = QUOTES.replace("waves, and", "waves -- and")
    root = mini_content({"source/article.txt": article, "responses/miss.yml": quotes})
    assert found(root) == []


def test_check_refuses_content_with_an_error_and_keeps_the_warnings(mini_content: Mini) -> None:
    root = mini_content({"responses/miss.yml": QUOTES.replace("Missing someone", "Missing somebody")})
    catalog, problems = check_content(root)
    assert catalog is None
    assert [problem.level for problem in problems] == ["error"]


def test_a_check_that_crashes_refuses_the_content_instead_of_stopping_the_bot(
    mini_content: Mini, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> list[object]:
        raise RuntimeError("a bug in a check")

    monkeypatch.setattr("bot.lint.unused_passages", broken)
    root = mini_content()
    catalog, problems = check_content(root)
    assert catalog is None
    assert [str(p) for p in problems] == [
        f"{root}:1: error: the content checks failed (RuntimeError('a bug in a check')); report this as a bug"
    ]


def test_serving_leaves_out_the_near_collision_warnings_that_check_lists(mini_content: Mini) -> None:
    root = mini_content({"intents/hello.yml": COLLIDING})
    assert check_content(root)[1] == []
    assert [problem.level for problem in check_content(root, collisions=True)[1]] == ["warning"]
