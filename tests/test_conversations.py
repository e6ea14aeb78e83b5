"""Every test sentence in tests/conversations/ through the real engine, and the accuracy gate.

Each sentence is its own test, named after its file and line (``pytest -k no_contact`` runs one
file). Sentences listed in ``_known_failures.yaml`` run expecting failure; one that starts passing
fails the suite, so the list only shrinks. The content and its test sentences are those under
``UNHOOKED_CONTENT_DIR`` (default: this checkout).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import yaml

from bot.content import load_catalog
from bot.conversations import Sentence, SentenceSet, read_sentences
from bot.evaluate import Evaluation, Result, evaluate, intent_table, known_failure_problem
from bot.lint import TESTS_DIR
from bot.meaning import vectors_for
from bot.normalize import fold
from tests.conftest import REPO

ROOT = Path(os.environ.get("UNHOOKED_CONTENT_DIR") or REPO)
FOLDER = ROOT / TESTS_DIR
LOADED, PROBLEMS = read_sentences(FOLDER)
SENTENCES = LOADED or SentenceSet(FOLDER)
SAFETY = ROOT / "tests" / "safety"


class StillFails(AssertionError):
    """A known failure failing as listed: the expected outcome of its test."""


@pytest.fixture(scope="module")
def evaluation() -> Evaluation:
    """As ``python -m bot eval`` runs them: by meaning too when the model (``UNHOOKED_MEANING_MODEL``) loads."""
    vectors = vectors_for(os.environ.get("UNHOOKED_MEANING_MODEL") or None)
    return asyncio.run(evaluate(load_catalog(ROOT), SENTENCES, vectors))


def result_of(evaluation: Evaluation, sentence: Sentence) -> Result:
    return next(r for r in evaluation.results if r.sentence == sentence)


def _param(sentence: Sentence) -> object:
    failure = SENTENCES.known.get(sentence.key)
    if failure is None:
        return pytest.param(sentence, id=sentence.name)
    reason = f"listed in {failure.path.name}:{failure.line}; if this passes now, remove it from that list"
    return pytest.param(
        sentence, id=sentence.name, marks=pytest.mark.xfail(strict=True, raises=StillFails, reason=reason)
    )


def test_the_test_files_are_well_formed() -> None:
    assert LOADED is not None, f"there is no test sentences folder at {FOLDER}"
    assert [str(problem) for problem in PROBLEMS] == []


@pytest.mark.parametrize("sentence", [_param(sentence) for sentence in SENTENCES.sentences])
def test_sentence(evaluation: Evaluation, sentence: Sentence) -> None:
    result = result_of(evaluation, sentence)
    failure = SENTENCES.known.get(sentence.key)
    if failure is None:
        assert result.passed, result.problem
        return
    wrong = known_failure_problem(result, failure)
    if result.passed:
        return  # a strict xfail that passes fails the suite, with the reason above
    if wrong is not None:
        raise AssertionError(wrong)  # listed, but failing differently (or tripping the crisis screen)
    raise StillFails(result.problem)


def test_accuracy_gate(evaluation: Evaluation) -> None:
    """At least 92% of all sentences, and 75% of each intent's, reach their intent.

    While the examples are being expanded (branch ``examples``), this is the one test allowed to fail.
    """
    failures = evaluation.gate()
    assert not failures, "the accuracy gate fails:\n  " + "\n  ".join(failures) + "\n\n" + intent_table(evaluation)


def test_no_known_failure_triggers_the_crisis_screen(evaluation: Evaluation) -> None:
    listed = [r for r in evaluation.results if r.sentence.key in SENTENCES.known and r.crisis is not None]
    assert [r.problem for r in listed] == []


def test_no_out_of_scope_message_triggers_the_crisis_screen(evaluation: Evaluation) -> None:
    assert [r.problem for r in evaluation.out_of_scope if r.crisis is not None] == []


def texts_in(folder: Path) -> set[str]:
    """Every piece of text in the files under ``folder``: YAML strings at any depth, and lines of other files."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, str):
            found.add(fold(node))
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.suffix in (".yml", ".yaml"):
            walk(yaml.safe_load(path.read_text(encoding="utf-8")))
        elif path.suffix == ".txt":
            found.update(fold(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return found


def test_no_crisis_test_phrase_is_a_known_failure() -> None:
    listed = {fold(failure.text) for failure in SENTENCES.known.values()}
    assert sorted(listed & texts_in(SAFETY)) == []


def test_texts_in_reads_yaml_at_any_depth_and_text_lines(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "cases.yaml").write_text("must_catch:\n  - id: x\n    text: I Want To Die\n")
    (tmp_path / "phrases.txt").write_text("kms\n\n")
    assert {"i want to die", "kms"} <= texts_in(tmp_path)
