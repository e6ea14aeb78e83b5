"""The evaluation core and the gate mechanism, on tiny content trees with known answers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from bot.content import load_catalog
from bot.conversations import read_sentences
from bot.evaluate import Evaluation, evaluate, known_failure_problem, known_failures_yaml, sweep
from tests.conftest import MINI_CONTENT, REPO

Mini = Callable[..., Path]
HELLO_TESTS = MINI_CONTENT["tests/conversations/hello.yaml"]


def evaluated(root: Path) -> Evaluation:
    sentences, problems = read_sentences(root / "tests" / "conversations")
    assert problems == []
    return asyncio.run(evaluate(load_catalog(root), sentences))


def with_hello_tests(*extra: str) -> dict[str, str]:
    return {"tests/conversations/hello.yaml": HELLO_TESTS + "".join(f"  - {text}\n" for text in extra)}


def test_every_sentence_passes_and_the_gate_passes(mini_content: Mini) -> None:
    evaluation = evaluated(mini_content())
    assert [r.problem for r in evaluation.results] == [None] * 4
    assert evaluation.accuracy == 1.0
    assert evaluation.gate() == []


def test_the_gate_fails_overall_and_per_intent(mini_content: Mini) -> None:
    evaluation = evaluated(mini_content(with_hello_tests("what is the weather like in paris")))
    assert evaluation.accuracy == 0.8
    assert evaluation.gate() == [
        "overall accuracy is 80.0%, below 92%",
        "hello is at 66.7% (2/3), below 75%",
    ]


def test_a_failure_names_file_sentence_expected_actual_and_score(mini_content: Mini) -> None:
    root = mini_content(with_hello_tests("why do i miss him so much"))
    [result] = [r for r in evaluated(root).results if not r.passed]
    assert result.problem == (
        f"{root}/tests/conversations/hello.yaml:5: 'why do i miss him so much' should reach hello"
        " but went to miss (score 100.0, matched)"
    )


def test_a_reply_phrase_is_checked(mini_content: Mini) -> None:
    tests = MINI_CONTENT["tests/conversations/miss.yaml"].replace("not proof", "a different phrase")
    [result] = [r for r in evaluated(mini_content({"tests/conversations/miss.yaml": tests})).results if not r.passed]
    assert "reached miss, but no reply contains 'a different phrase'" in result.problem


def test_a_sentence_that_triggers_the_crisis_screen_is_a_failure(mini_content: Mini) -> None:
    evaluation = evaluated(mini_content(with_hello_tests("hello there, i want to die")))
    [result] = [r for r in evaluation.results if not r.passed]
    assert result.crisis == "suicidal.want_to_die"
    assert "triggers the crisis screen (rule suicidal.want_to_die); test sentences never contain crisis" in (
        result.problem
    )
    assert "i want to die" not in known_failures_yaml(evaluation)[0]


def test_a_known_failure_that_passes_or_moves_is_reported(mini_content: Mini) -> None:
    listed = (
        "failures:\n"
        "  - {intent: hello, text: hello there friend, went_to: null}\n"
        "  - {intent: hello, text: why do i miss him so much, went_to: null}\n"
    )
    root = mini_content(
        {**with_hello_tests("why do i miss him so much"), "tests/conversations/_known_failures.yaml": listed}
    )
    evaluation = evaluated(root)
    known = f"{root}/tests/conversations/_known_failures.yaml"
    assert evaluation.known_problems() == [
        f"{known}:2: 'hello there friend' now passes: remove it from the known failures, so the list only shrinks",
        f"{known}:3: 'why do i miss him so much' now goes to miss, not null as listed: update its `went_to:`",
    ]


def test_a_known_failure_still_failing_as_listed_is_fine(mini_content: Mini) -> None:
    evaluation = evaluated(mini_content(with_hello_tests("what is the weather like in paris")))
    text, count = known_failures_yaml(evaluation)
    assert count == 1
    [entry] = yaml.safe_load(text)["failures"]
    assert entry == {"intent": "hello", "text": "what is the weather like in paris", "went_to": None}
    [result] = [r for r in evaluation.results if not r.passed]
    root_failure = evaluated(
        mini_content({**with_hello_tests(entry["text"]), "tests/conversations/_known_failures.yaml": text})
    ).known[("hello", entry["text"])]
    assert known_failure_problem(result, root_failure) is None


def test_out_of_scope_messages_give_the_false_match_rate(mini_content: Mini) -> None:
    outside = "tests:\n  - what is the weather like in paris\n  - hello there everyone\n"
    evaluation = evaluated(mini_content({"tests/conversations/_out_of_scope.yaml": outside}))
    assert evaluation.false_match_rate == 0.5
    assert [s.precision for s in evaluation.intents() if s.intent == "hello"] == [2 / 3]


def test_the_sweep_trades_fallbacks_for_false_matches(mini_content: Mini) -> None:
    outside = "tests:\n  - hello there everyone\n"
    root = mini_content({"tests/conversations/_out_of_scope.yaml": outside})
    evaluation = evaluated(root)
    rows = {(row.threshold, row.margin): row for row in sweep(load_catalog(root), evaluation)}
    current = evaluation.settings
    assert rows[(current.threshold, current.margin)].accuracy == evaluation.accuracy
    assert rows[(60.0, current.margin)].false_match_rate == 1.0
    assert rows[(85.0, current.margin)].false_match_rate == 0.0
    assert rows[(85.0, current.margin)].fallback_rate > rows[(60.0, current.margin)].fallback_rate


def run_on(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` from the checkout, over the content under ``root``."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "UNHOOKED_CONTENT_DIR": str(root)},
        timeout=120,
        check=False,
    )


def run_suite(root: Path) -> subprocess.CompletedProcess[str]:
    """The real conversation tests, in their own pytest run over the content under ``root``."""
    return run_on(root, "-m", "pytest", "tests/test_conversations.py", "-q", "-p", "no:cacheprovider")


def test_the_suite_passes_on_content_that_passes(mini_content: Mini) -> None:
    result = run_suite(mini_content())
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[-1].startswith("10 passed")


def test_the_suite_fails_when_a_known_failure_passes_or_a_sentence_is_crisis_language(mini_content: Mini) -> None:
    listed = (
        "failures:\n"
        "  - {intent: hello, text: hello there friend, went_to: null}\n"
        "  - {intent: hello, text: what is the weather like in paris, went_to: null}\n"
    )
    root = mini_content(
        {
            **with_hello_tests("what is the weather like in paris", "hello, i want to die"),
            "tests/conversations/_known_failures.yaml": listed,
        }
    )
    result = run_suite(root)
    out = result.stdout
    assert result.returncode == 1, out
    assert "FAILED tests/test_conversations.py::test_sentence[hello:3]" in out
    assert "[XPASS(strict)] listed in _known_failures.yaml:2; if this passes now, remove it from that list" in out
    assert "FAILED tests/test_conversations.py::test_sentence[hello:6]" in out
    assert "'hello, i want to die' triggers the crisis screen" in out
    assert "test_sentence[hello:5]" not in out.split("short test summary")[1]  # listed, failing as listed
    assert "FAILED tests/test_conversations.py::test_accuracy_gate" in out
    assert "overall accuracy is 66.7%, below 92%" in out
    assert "hello is at 50.0% (2/4), below 75%" in out
    assert "intent  sentences  passed  accuracy  precision  fallbacks" in out  # the per-intent table


def run_eval(root: Path) -> subprocess.CompletedProcess[str]:
    return run_on(root, "-m", "bot", "eval")


def test_eval_exits_non_zero_when_the_gate_fails(mini_content: Mini) -> None:
    passing = run_eval(mini_content())
    assert passing.returncode == 0, passing.stderr
    failing = run_eval(mini_content(with_hello_tests("what is the weather like in paris")))
    assert failing.returncode == 1, failing.stdout
    assert "FAILS" in failing.stdout
    assert "the accuracy gate fails: overall accuracy is 80.0%, below 92%" in failing.stderr
