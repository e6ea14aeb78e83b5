"""The JSON Schemas editors use: every shipped YAML file names its schema on its first line and passes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.conftest import REPO

SCHEMAS = REPO / "schemas"
HEADER = "# yaml-language-server: $schema="
FOLDERS = ("intents", "responses", "source", "policy", "safety", "tests/conversations")
ADD_HEADERS = (
    "grep -L 'yaml-language-server' intents/*.yml | xargs -r sed -i '1i # yaml-language-server:"
    " $schema=../schemas/intent.schema.json' && grep -L 'yaml-language-server' responses/*.yml | xargs -r sed -i"
    " '1i # yaml-language-server: $schema=../schemas/response.schema.json'"
)
"""The one-line command that adds the header to intent and response files that lack it."""


def schema_for(path: Path) -> str:
    """The schema file a YAML file must follow, by where it lives."""
    relative = path.relative_to(REPO).as_posix()
    if relative.startswith("intents/"):
        return "intent.schema.json"
    if relative.startswith("responses/"):
        return "response.schema.json"
    if relative.startswith("tests/conversations/"):
        special = {"_known_failures.yaml": "known_failures", "_out_of_scope.yaml": "out_of_scope"}
        return f"{special.get(path.name, 'conversation')}.schema.json"
    named = {
        "source/article.yml": "article.schema.json",
        "policy/banned_advice.yml": "banned_advice.schema.json",
        "safety/patterns.yml": "safety_patterns.schema.json",
    }
    if relative not in named:
        raise AssertionError(f"{relative} has no schema; add one to schemas/ and to this test")
    return named[relative]


SHIPPED = sorted(path for folder in FOLDERS for path in (REPO / folder).glob("*.y*ml"))


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.parametrize("path", SHIPPED, ids=[str(path.relative_to(REPO)) for path in SHIPPED])
def test_every_shipped_file_follows_its_schema(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(schema_for(path)).iter_errors(data)
    ]
    assert errors == []


def test_every_shipped_file_names_its_schema_on_the_first_line() -> None:
    missing = []
    for path in SHIPPED:
        up = "../" * (len(path.relative_to(REPO).parts) - 1)
        expected = f"{HEADER}{up}schemas/{schema_for(path)}"
        if path.read_text(encoding="utf-8").splitlines()[:1] != [expected]:
            missing.append(str(path.relative_to(REPO)))
    assert missing == [], f"add the schema header line (from the repository root: {ADD_HEADERS})"


@pytest.mark.parametrize(
    ("schema", "data"),
    [
        ("intent.schema.json", {"id": "hello", "exampels": ["hi"], "responses": ["a"]}),
        ("intent.schema.json", {"id": "Hello World", "examples": ["hi"], "responses": ["a"]}),
        ("intent.schema.json", {"id": "hello", "menu": 1, "examples": ["hi"], "responses": ["a"]}),
        ("intent.schema.json", {"id": "hello", "examples": ["hi"]}),
        ("response.schema.json", {"passages": [{"id": "a", "text": "Quoted."}]}),
        ("response.schema.json", {"passages": [{"id": "a", "text": "Mine.", "source": "bot", "section": "X"}]}),
        ("article.schema.json", {"title": "T"}),
        ("banned_advice.schema.json", {"rules": [{"reason": "r", "phrases": []}]}),
        ("conversation.schema.json", {"intent": "hello", "tests": [{"text": "hi", "reply": "x"}]}),
        ("known_failures.schema.json", {"failures": [{"intent": "hello", "text": "hi"}]}),
        ("safety_patterns.schema.json", {"patterns": [{"id": "local.x", "category": "suicidal", "level": "crisis"}]}),
        (
            "safety_patterns.schema.json",
            {"patterns": [{"id": "local.x", "category": "sadness", "level": "crisis", "phrase": "x"}]},
        ),
        (
            "safety_patterns.schema.json",
            {"patterns": [{"id": "local.x", "category": "suicidal", "level": "crisis", "phrase": "x", "pattern": "x"}]},
        ),
    ],
    ids=[
        "intent-unknown-field",
        "intent-bad-id",
        "intent-menu-without-title",
        "intent-without-responses",
        "quoted-passage-without-section",
        "bot-passage-with-section",
        "article-without-file",
        "banned-rule-without-phrases",
        "sentence-unknown-field",
        "known-failure-without-went-to",
        "safety-pattern-without-pattern",
        "safety-pattern-unknown-category",
        "safety-pattern-phrase-and-pattern",
    ],
)
def test_the_schemas_refuse_what_the_loader_refuses(schema: str, data: object) -> None:
    assert list(validator(schema).iter_errors(data)) != []
