"""Loading content: the shipped files load, and every kind of mistake is named with file and line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bot.content import load_catalog, read_content
from bot.errors import ContentError
from bot.yamlfile import LOADERS, MAX_FILE_BYTES, read_yaml
from tests.conftest import REPO

Writer = Callable[[dict[str, str]], Path]

INTENT = """\
id: hello
title: Say hello
examples:
  - hello there
responses:
  - hello.reply
"""
RESPONSE = """\
passages:
  - id: hello.reply
    source: bot
    text: Hi.
"""


def problems_of(root: Path) -> list[str]:
    return [str(problem) for problem in read_content(root)[1]]


def test_the_shipped_content_loads_without_problems() -> None:
    catalog, problems = read_content(REPO)
    assert problems == []
    assert {"miss_them", "should_i_go_back", "what_is_trauma_bond", "how_to_break", "no_contact"} <= set(
        catalog.intents
    )
    assert {"greeting", "thanks", "goodbye", "help", "about_bot"} <= set(catalog.intents)
    assert catalog.article_title == "Why you miss her: trauma bonding"


def test_a_minimal_tree_loads(write_content: Writer) -> None:
    catalog = load_catalog(write_content({"intents/hello.yml": INTENT, "responses/hello.yml": RESPONSE}))
    assert catalog.intents["hello"].examples[0].text == "hello there"
    assert catalog.intents["hello"].examples[0].line == 4
    assert catalog.passages["hello.reply"].quoted is False


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"intents/hello.yml": "id: hello\nexamples:\n  - hi\n responses: [x]\n"},
            "intents/hello.yml:4: error: this is not valid content YAML",
        ),
        (
            {"intents/hello.yml": INTENT.replace("title: Say hello", "title: Say hello\nmenu: yes")},
            "intents/hello.yml:3: error: 'menu' must be the topic's position in the menu",
        ),
        (
            {"intents/hello.yml": INTENT.replace("examples:", "exampels:")},
            "intents/hello.yml:3: error: unknown field 'exampels' in an intent",
        ),
        (
            {"intents/hello.yml": INTENT.replace("  - hello there\n", "")},
            "intents/hello.yml:3: error: 'examples' is empty",
        ),
        (
            {"intents/hello.yml": INTENT.replace("id: hello", "id: Hello World")},
            "intents/hello.yml:1: error: the id 'Hello World' must use lowercase letters",
        ),
        (
            {"intents/hello.yml": INTENT.replace("hello.reply", "hello.missing")},
            "intents/hello.yml:1: error: intent 'hello' uses passage 'hello.missing', which no file under responses/",
        ),
        (
            {"intents/hello.yml": INTENT.replace("title: Say hello\n", "menu: 1\n")},
            "intents/hello.yml:2: error: an intent listed in the menu needs a `title:`",
        ),
        (
            {"intents/greet.yml": INTENT},
            "intents/greet.yml:1: error: the file is named 'greet' but holds intent 'hello'",
        ),
        (
            {"responses/hello.yml": RESPONSE + "    follow_ups: [nowhere]\n"},
            "responses/hello.yml:2: error: passage 'hello.reply' suggests 'nowhere', which is not an intent id",
        ),
        (
            {"responses/hello.yml": RESPONSE.replace("    source: bot\n", "")},
            "responses/hello.yml:2: error: 'section' is missing",
        ),
        (
            {"responses/hello.yml": RESPONSE.replace("source: bot", "source: blog")},
            "responses/hello.yml:3: error: 'source' must be `article` (quoted) or `bot`",
        ),
        (
            {"responses/hello.yml": "passages: {}\n"},
            "responses/hello.yml:1: error: a response file must have `passages:`",
        ),
        (
            {"responses/other.yml": RESPONSE},
            "responses/other.yml:2: error: the passage id 'hello.reply' is already defined at",
        ),
        (
            {"intents/hello.yml": INTENT + "id: again\n"},
            "intents/hello.yml:7: error: this is not valid content YAML: the key 'id' appears twice",
        ),
        (
            {"intents/hello.yml": "id: hello\nexamples: &x\n  - hi\nkeywords: *x\nresponses: [hello.reply]\n"},
            "intents/hello.yml:4: error: this is not valid content YAML: anchors and aliases",
        ),
        (
            {"intents/hello.yml": INTENT.replace("- hello there", "- !!python/object:os.system echo")},
            "intents/hello.yml:4: error: this is not valid content YAML: could not determine a constructor",
        ),
        (
            {"intents/hello.yml": "- just\n- a list\n"},
            "intents/hello.yml:1: error: an intent file must be a mapping",
        ),
    ],
    ids=[
        "bad-indentation",
        "menu-not-a-position",
        "unknown-field",
        "empty-examples",
        "bad-id",
        "missing-passage",
        "menu-without-title",
        "file-name-mismatch",
        "dangling-follow-up",
        "article-passage-without-section",
        "bad-source",
        "passages-not-a-list",
        "duplicate-passage-id",
        "duplicate-key",
        "alias",
        "custom-tag",
        "not-a-mapping",
    ],
)
def test_each_mistake_is_named_with_its_file_and_line(
    write_content: Writer, files: dict[str, str], expected: str
) -> None:
    root = write_content({"intents/hello.yml": INTENT, "responses/hello.yml": RESPONSE, **files})
    found = problems_of(root)
    assert any(problem.startswith(f"{root}/{expected}") for problem in found), found
    with pytest.raises(ContentError):
        load_catalog(root)


def test_every_problem_is_reported_not_just_the_first(write_content: Writer) -> None:
    root = write_content(
        {
            "intents/hello.yml": INTENT.replace("title:", "titel:"),
            "intents/bye.yml": "id: bye\nexamples: [bye]\nresponses: [bye.none]\n",
            "responses/hello.yml": RESPONSE,
        }
    )
    assert len(problems_of(root)) == 2


def test_a_file_that_is_not_utf8_is_named(write_content: Writer) -> None:
    root = write_content({"responses/hello.yml": RESPONSE})
    (root / "intents" / "hello.yml").write_bytes(b"id: caf\xe9\n")
    assert any("is not UTF-8" in problem for problem in problems_of(root))


def test_a_huge_file_is_refused_before_parsing(write_content: Writer) -> None:
    root = write_content({"responses/hello.yml": RESPONSE})
    (root / "intents" / "hello.yml").write_text("#" * (MAX_FILE_BYTES + 1))
    assert any("content files must stay under" in problem for problem in problems_of(root))


def test_a_missing_folder_says_what_to_set(tmp_path: Path) -> None:
    assert any("UNHOOKED_CONTENT_DIR" in problem for problem in problems_of(tmp_path))


SAFETY = """\
patterns:
  - id: local.keys
    category: partner_danger
    level: concern
    phrase: he still has my keys
    examples:
      - He still has my keys!
"""


def test_safety_patterns_load_into_the_catalog(write_content: Writer) -> None:
    root = write_content({"intents/hello.yml": INTENT, "responses/hello.yml": RESPONSE, "safety/patterns.yml": SAFETY})
    catalog = load_catalog(root)
    assert [rule.id for rule in catalog.safety_rules] == ["local.keys"]


def test_the_shipped_safety_patterns_load() -> None:
    catalog, _ = read_content(REPO)
    assert catalog.safety_rules and all(rule.id.startswith("local.") for rule in catalog.safety_rules)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SAFETY.replace("partner_danger", "sadness"), "safety/patterns.yml:3: error: unknown category 'sadness'"),
        (SAFETY.replace("level: concern", "level: high"), "safety/patterns.yml:4: error: unknown level 'high'"),
        (
            SAFETY.replace("phrase: he still has my keys", "pattern: (unclosed"),
            "safety/patterns.yml:5: error: the pattern is not a valid regular expression: missing ), unterminated",
        ),
        (
            SAFETY.replace("phrase: he still has my keys", "pattern: x*"),
            "safety/patterns.yml:5: error: the pattern matches an empty message",
        ),
        (
            SAFETY.replace("    examples:", "    pattern: x\n    examples:"),
            "safety/patterns.yml:6: error: give exactly one of `phrase:` (plain words) or `pattern:`",
        ),
        (
            SAFETY.replace("He still has my keys!", "He has my keys"),
            "safety/patterns.yml:7: error: the example 'He has my keys' is not caught by safety pattern 'local.keys'",
        ),
        (SAFETY.replace("id: local.keys", "id: suicidal.slang"), "safety/patterns.yml:2: error: the safety pattern id"),
        (
            SAFETY + SAFETY.replace("patterns:\n", ""),
            "safety/patterns.yml:8: error: the safety pattern id 'local.keys'",
        ),
        (
            SAFETY.replace("    examples:", "    severity: high\n    examples:"),
            "safety/patterns.yml:6: error: unknown field",
        ),
        ("patterns: nope\n", "safety/patterns.yml:1: error: the safety file must have `patterns:`"),
        ("patterns:\n  - [1, 2]\n", "safety/patterns.yml:2: error: each safety pattern must be a mapping"),
        (
            SAFETY.replace("phrase: he still has my keys", "pattern: \\bhe's got my keys\\b").replace(
                "He still has my keys!", "he's got my keys"
            ),
            "safety/patterns.yml:5: warning: the pattern contains an apostrophe",
        ),
    ],
    ids=[
        "unknown-category",
        "unknown-level",
        "invalid-regex",
        "matches-everything",
        "phrase-and-pattern",
        "example-not-caught",
        "floor-id",
        "duplicate-id",
        "unknown-field",
        "not-a-list",
        "not-a-mapping",
        "apostrophe",
    ],
)
def test_each_safety_pattern_mistake_is_named_with_its_line(write_content: Writer, text: str, expected: str) -> None:
    root = write_content({"intents/hello.yml": INTENT, "responses/hello.yml": RESPONSE, "safety/patterns.yml": text})
    found = problems_of(root)
    assert any(problem.startswith(f"{root}/{expected}") for problem in found), found


def test_an_empty_or_missing_safety_file_is_fine(write_content: Writer) -> None:
    root = write_content({"intents/hello.yml": INTENT, "responses/hello.yml": RESPONSE})
    assert load_catalog(root).safety_rules == ()
    (root / "safety").mkdir()
    (root / "safety" / "patterns.yml").write_text("# nothing yet\npatterns:\n")
    assert load_catalog(root).safety_rules == ()


def _lines(data: object) -> object:
    """Every mapping's and list's lines, nested as the data is."""
    if isinstance(data, dict):
        return data.line, data.lines, [_lines(value) for value in data.values()]  # type: ignore[attr-defined]
    if isinstance(data, list):
        return data.line, data.lines, [_lines(value) for value in data]  # type: ignore[attr-defined]
    return None


def test_libyaml_and_pure_python_read_every_shipped_yaml_file_alike() -> None:
    assert len(LOADERS) == 2, "PyYAML without libyaml: content loads at a fraction of the speed"
    fast_loader, slow_loader = LOADERS
    files = [path for folder in ("intents", "responses", "safety", "tests") for path in (REPO / folder).rglob("*.y*ml")]
    assert len(files) > 150
    for path in files:
        text = path.read_text(encoding="utf-8")
        slow, fast = yaml.load(text, Loader=slow_loader), yaml.load(text, Loader=fast_loader)  # noqa: S506
        assert fast == slow and _lines(fast) == _lines(slow), path


def test_a_file_libyaml_refuses_gets_pure_python_yamls_message(tmp_path: Path) -> None:
    path = tmp_path / "broken.yml"
    path.write_text("intent: x\nexamples:\n  - 'never closed\n  - fine\n", encoding="utf-8")
    data, problems = read_yaml(path)
    assert data is None and [problem.line for problem in problems] == [3]
    assert "the quote opened on this line is never closed" in problems[0].message
