"""The command line as people use it: real processes, real stdin and stdout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.__main__ import _parser
from bot.matcher import MatcherSettings
from tests.conftest import REPO


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None, tmp: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "UNHOOKED_DB": str(tmp / "data" / "bot.sqlite3"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_scripted_chat_gives_greeting_passage_and_crisis_reply_in_order(tmp_path: Path) -> None:
    result = run("chat", stdin="hi\nwhy do I miss him\nI want to die\n", tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    greeting = out.index("I'm Unhooked")
    passage = out.index("It was telling me my brain was hooked.")
    crisis = out.index("call or text 988, or chat at 988lifeline.org")
    assert greeting < passage < crisis


def test_chat_keeps_the_session_in_the_database_between_runs(tmp_path: Path) -> None:
    first = run("chat", stdin="why do I miss him\n", tmp=tmp_path)
    second = run("chat", stdin="why do I miss him\n", tmp=tmp_path)
    assert "brain was hooked" in first.stdout
    assert "brain was hooked" not in second.stdout and "Missing her is not proof" in second.stdout
    assert (tmp_path / "data" / "secret.key").stat().st_mode & 0o777 == 0o600


def test_a_topic_number_picks_that_topic(tmp_path: Path) -> None:
    result = run("chat", "--db", ":memory:", stdin="hi\n2\n", tmp=tmp_path)
    assert "Trauma bonding is the neurochemical attachment" in result.stdout


def test_chat_with_broken_content_still_answers_a_crisis(tmp_path: Path) -> None:
    (tmp_path / "content" / "intents").mkdir(parents=True)
    (tmp_path / "content" / "responses").mkdir()
    (tmp_path / "content" / "intents" / "bad.yml").write_text("id: [unclosed\n")
    result = run(
        "chat", stdin="i want to kill myself\n", env={"UNHOOKED_CONTENT_DIR": str(tmp_path / "content")}, tmp=tmp_path
    )
    assert result.returncode == 0
    assert "988" in result.stdout
    assert "bad.yml:2: error: this is not valid content YAML" in result.stderr


def test_match_prints_intent_score_runner_up_and_reply(tmp_path: Path) -> None:
    result = run("match", "why do I miss him if it was so bad", tmp=tmp_path)
    assert re.search(r"intent:    miss_them  score (?:9\d|100)\.\d", result.stdout)
    assert "runner-up:" in result.stdout and "reply:" in result.stdout


def test_match_json_has_the_stable_fields(tmp_path: Path) -> None:
    result = run("match", "--json", stdin="hello\nasdfgh qwerty\nI want to die\n", tmp=tmp_path)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["text"] for row in rows] == ["hello", "asdfgh qwerty", "I want to die"]
    assert {"text", "intent", "score", "runner_up", "crisis"} <= set(rows[0])
    assert rows[0]["intent"] == "greeting" and rows[0]["crisis"] is None
    assert rows[1]["intent"] is None
    assert rows[2]["intent"] is None and rows[2]["crisis"]["level"] == "crisis"
    assert '"event": "escalation"' not in result.stderr  # a try-out is not an escalation for operators


def test_check_passes_on_the_shipped_content(tmp_path: Path) -> None:
    result = run("check", tmp=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "0 errors" in result.stdout


def test_check_lists_problems_by_file_relative_to_the_working_folder(tmp_path: Path) -> None:
    result = run("check", tmp=tmp_path)
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"\d+ intents, \d+ passages, \d+ safety patterns: 0 errors, \d+ warnings", lines[-1])
    assert lines[0].startswith("intents/")
    assert lines[:-1] == sorted(lines[:-1], key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_check_runs_the_content_checks_and_fails_on_banned_advice(tmp_path: Path) -> None:
    content = tmp_path / "content"
    for folder in ("intents", "responses", "source", "policy"):
        shutil.copytree(REPO / folder, content / folder)
    passages = content / "responses" / "conversation.yml"
    passages.write_text(passages.read_text().replace("Take care of yourself.", "Just leave."))
    line = passages.read_text().splitlines().index("  - id: goodbye.take_care") + 1
    result = run("check", "--tests", str(tmp_path / "none"), env={"UNHOOKED_CONTENT_DIR": str(content)}, tmp=tmp_path)
    assert result.returncode == 1
    assert f"{passages}:{line}: error: passage 'goodbye.take_care' contains 'just leave'" in result.stdout
    assert f"{tmp_path}/none:1: note: there is no test sentences folder here" in result.stdout
    assert re.fullmatch(
        r"\d+ intents, \d+ passages, \d+ safety patterns: 1 errors, \d+ warnings, 1 notes",
        result.stdout.splitlines()[-1],
    )


def test_check_fails_with_file_and_line(tmp_path: Path) -> None:
    content = tmp_path / "content"
    (content / "intents").mkdir(parents=True)
    (content / "responses").mkdir()
    (content / "intents" / "x.yml").write_text("id: x\nexamples:\n  - a\n - b\n")
    result = run("check", env={"UNHOOKED_CONTENT_DIR": str(content)}, tmp=tmp_path)
    assert result.returncode == 1
    assert f"{content}/intents/x.yml:4: error:" in result.stdout


def test_match_explain_shows_what_the_matcher_saw_and_its_top_three(tmp_path: Path) -> None:
    result = run("match", "--explain", "Why do I keep checking HER instagram?", tmp=tmp_path)
    lines = result.stdout.splitlines()
    assert "matcher saw: why do i keep check them instagram" in lines
    top = lines.index("top intents:")
    assert lines[top + 1].split()[:3] == ["1.", "cravings", "100.0"]
    assert "'I keep checking his instagram'  intents/cravings.yml:" in lines[top + 1]
    ranks = [line.split()[0] for line in lines[top + 1 :] if re.match(r"  \d+\. ", line)]
    assert ranks == ["1.", "2.", "3."]  # with meaning on, each has its fuzzy and meaning lines below it


def test_match_explain_json_adds_candidates_and_keeps_the_stable_fields(tmp_path: Path) -> None:
    result = run("match", "--json", "--explain", "i want to die", "is it love or a trauma bond", tmp=tmp_path)
    crisis, love = (json.loads(line) for line in result.stdout.splitlines())
    stable = {"text", "intent", "score", "runner_up", "runner_up_score", "reason", "crisis", "replies"}
    assert set(crisis) == set(love) == {*stable, "candidates", "normalized"}
    assert crisis["crisis"]["level"] == "crisis" and crisis["intent"] is None
    best = love["candidates"][0]
    assert {k: best[k] for k in ("intent", "score", "example")} == {
        "intent": love["intent"],
        "score": love["score"],
        "example": ANY_EXAMPLE(love),
    }
    path, line = best["example_at"].rsplit(":", 1)
    assert (REPO / path).read_text().splitlines()[int(line) - 1].strip() == f"- {best['example']}"
    assert len(love["candidates"]) == 3


def ANY_EXAMPLE(row: dict) -> str:
    return row["candidates"][0]["example"]


def test_eval_prints_tables_and_can_rewrite_the_known_failures_list(tmp_path: Path) -> None:
    folder = tmp_path / "conversations"
    shutil.copytree(REPO / "tests" / "conversations", folder)
    (folder / "_known_failures.yaml").write_text("failures: []\n")
    result = run("eval", "--tests", str(folder), "--update-known-failures", tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    for heading in (
        "accuracy ",
        "false-match rate",
        "Per intent",
        "Most confused",
        "Threshold, margin and meaning sweep",
    ):
        assert heading in result.stdout
    assert "running " in result.stderr and "sentences..." in result.stderr
    written = (folder / "_known_failures.yaml").read_text()
    assert written == (REPO / "tests" / "conversations" / "_known_failures.yaml").read_text()
    assert f"wrote {folder}/_known_failures.yaml:" in result.stderr


def test_eval_json_is_one_document(tmp_path: Path) -> None:
    document = json.loads(run("eval", "--json", tmp=tmp_path).stdout)
    assert document["sentences"] == sum(row["sentences"] for row in document["intents"])
    assert document["out_of_scope"]["messages"] >= 40
    assert {row["threshold"] for row in document["sweep"]} >= {60.0, MatcherSettings().threshold, 85.0}
    assert {row["margin"] for row in document["sweep"]} >= {0.0, 4.0, 8.0}
    assert document["gate"]["passed"] == (document["gate"]["failures"] == [])


def test_eval_without_test_sentences_says_what_to_pass(tmp_path: Path) -> None:
    result = run("eval", "--tests", str(tmp_path / "nowhere"), tmp=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith(f"unhooked: there are no test sentences in {tmp_path}/nowhere; pass --tests DIR")


def test_a_bad_setting_is_one_sentence_not_a_traceback(tmp_path: Path) -> None:
    result = run("chat", env={"UNHOOKED_SECRET": "short"}, tmp=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("unhooked: UNHOOKED_SECRET is 5 characters long")
    assert "Traceback" not in result.stderr


def _subcommands() -> dict[str, object]:
    """Every command by its full name, e.g. ``chat`` and ``escalations list``."""
    found = {}

    def walk(parser: object, prefix: str) -> None:
        for action in parser._actions:
            if action.dest in ("command", "verb"):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = sub
                    walk(sub, f"{prefix}{name} ")

    walk(_parser(), "")
    return found


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_has_help_with_an_example(name: str) -> None:
    text = _subcommands()[name].format_help()
    assert "example" in text and f"python -m bot {name}" in text


def test_every_command_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    missing = [name for name in _subcommands() if f"python -m bot {name}" not in readme]
    assert missing == []


def test_match_json_reports_every_level_of_the_screen(tmp_path: Path) -> None:
    texts = "I can't do this anymore\nkms rn\nhe choked me last night\nwhy do I miss him\n"
    rows = [json.loads(line) for line in run("match", "--json", stdin=texts, tmp=tmp_path).stdout.splitlines()]
    assert [row["crisis"] for row in rows] == [
        {"level": "concern", "category": "hopelessness", "rule": "hopelessness.cant_go_on"},
        {"level": "crisis", "category": "suicidal", "rule": "suicidal.slang"},
        {"level": "imminent", "category": "partner_danger", "rule": "partner.strangled"},
        None,
    ]
    assert "988" in rows[0]["replies"][0]
    assert rows[2]["replies"][0].splitlines()[1].startswith("If you are in immediate danger, call 911")


def test_chat_gives_the_danger_track_reply_and_keeps_help_in_view(tmp_path: Path) -> None:
    result = run("chat", "--db", ":memory:", stdin="he choked me last night\nwhy do I miss him\n", tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("call 911") < out.index("1-800-799-7233") < out.index("or chat at 988lifeline.org")
    assert "Are you safe right now?" in out and "brain was hooked" in out
    assert "[operator alert] imminent escalation, category partner_danger" in result.stderr
    assert "choked" not in result.stderr
    assert not (REPO / "secret.key").exists()


def test_top_level_help_has_an_example() -> None:
    assert "python -m bot chat" in _parser().format_help()


BLIND = {
    "short.yaml": "- text: why do i miss him\n  intent: miss_them\n- text: should i go back to her\n  intent: hope\n",
    "texting.yaml": "- text: y do i miss him sm\n  intent: miss_them\n",
    "long.yaml": "- text: We split in May. I still think of her. Why do I miss her?\n  intent: miss_them\n",
    "out_of_scope.yaml": "- text: what is the weather tomorrow\n  intent: null\n- text: hi\n  intent: null\n",
}


def test_eval_prints_the_blind_figures_and_never_a_blind_message(tmp_path: Path) -> None:
    blind = tmp_path / "blind"
    blind.mkdir()
    for name, text in BLIND.items():
        (blind / name).write_text(text)
    result = run("eval", "--blind", str(blind), tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    report = result.stdout[result.stdout.index("Blind set") :]
    assert "6 messages, written by helpers who never saw the examples" in report
    rows = {line.split()[0]: line.split()[1:3] for line in report.splitlines()[3:7]}
    assert rows == {"short": ["2", "50.0%"], "texting": ["1", "100.0%"], "long": ["1", "100.0%"],
                    "out_of_scope": ["2", "50.0%"]}  # fmt: skip
    assert not any(item in result.stdout for item in ("should i go back to her", "sm", "We split in May"))
    document = json.loads(run("eval", "--json", "--blind", str(blind), tmp=tmp_path).stdout)
    assert document["blind"]["files"]["short"] == {
        "messages": 2, "right": 1, "share": 0.5, "fallbacks": 0, "crisis_replies": 0
    }  # fmt: skip
    assert "We split in May" not in json.dumps(document["blind"])


def test_eval_reports_the_shipped_blind_set_when_there_is_one(tmp_path: Path) -> None:
    result = run("eval", tmp=tmp_path)
    assert "Blind set (tests/understanding_blind, 538 messages" in result.stdout


def test_match_stores_nothing_not_even_a_secret_key(tmp_path: Path) -> None:
    result = run("match", "why do I miss him", "I want to die", tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "intent:    miss_them" in result.stdout
    assert not (tmp_path / "data").exists()
