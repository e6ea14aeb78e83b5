"""``python -m bot check`` as moderators meet it: every file checked even when another fails to load, YAML errors
at the line where they start, ``--json``, ``--fail-on-warnings``, and near-collisions silenced in the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bot.checking import check
from tests.conftest import MINI_CONTENT
from tests.test_cli import run

Mini = Callable[..., Path]
HELLO = MINI_CONTENT["intents/hello.yml"]
QUOTES = MINI_CONTENT["responses/miss.yml"]
COLLIDING = HELLO.replace("  - good morning", "  - I keep missing her every night\n  - good")


def test_a_verbatim_error_is_reported_beside_a_yaml_error_in_another_file(mini_content: Mini) -> None:
    root = mini_content(
        {
            "intents/hello.yml": HELLO.replace("  - hello there\n", '  - "hello there\n'),
            "responses/miss.yml": QUOTES.replace("not proof you should", "not proof that you should"),
        }
    )
    problems = [str(problem) for problem in check(root).problems if problem.level == "error"]
    assert any(line.startswith(f"{root}/intents/hello.yml:4: error:") for line in problems), problems
    verbatim = f"{root}/responses/miss.yml:2: error: passage 'miss.proof' is not verbatim"
    assert any(line.startswith(verbatim) for line in problems), problems
    assert not any("no intent uses passage" in line or "is not an intent" in line for line in problems)


def test_an_unclosed_quote_is_reported_where_it_opens(mini_content: Mini) -> None:
    text = "id: hello\ntitle: Say hello\nexamples:\n  - hello there\n  - 'good morning to you\n" + "  - more\n" * 20
    root = mini_content({"intents/hello.yml": text + "responses:\n  - hello.reply\n"})
    [problem] = [p for p in check(root).problems if p.path.name == "hello.yml"]
    assert problem.line == 5
    assert "the quote opened on this line is never closed" in problem.message


def test_json_and_fail_on_warnings(mini_content: Mini, tmp_path: Path) -> None:
    root = mini_content({"intents/hello.yml": COLLIDING})
    env = {"UNHOOKED_CONTENT_DIR": str(root)}
    plain = run("check", env=env, tmp=tmp_path)
    assert plain.returncode == 0, plain.stdout
    strict = run("check", "--fail-on-warnings", env=env, tmp=tmp_path)
    assert strict.returncode == 1, strict.stdout
    as_json = run("check", "--json", env=env, tmp=tmp_path)
    document = json.loads(as_json.stdout)
    assert document["counts"] == {"error": 0, "warning": 1, "note": 0}
    assert document["served"] is True and document["loaded"]["intents"] == 2
    [first] = document["problems"]
    assert first["path"].endswith("intents/hello.yml") and first["line"] == 5 and first["level"] == "warning"
    assert "# reviewed: miss" in first["message"]


def test_a_reviewed_near_collision_is_silenced_in_the_file_itself(mini_content: Mini) -> None:
    noisy = mini_content({"intents/hello.yml": COLLIDING})
    assert len([p for p in check(noisy).problems if "held out" in p.message]) == 1
    marked = COLLIDING.replace("every night\n", "every night  # reviewed: miss\n")
    quiet = mini_content({"intents/hello.yml": marked})
    assert [p.message for p in check(quiet).problems if "held out" in p.message] == []
    other = mini_content({"intents/hello.yml": COLLIDING.replace("every night\n", "every night  # reviewed: x\n")})
    assert len([p for p in check(other).problems if "held out" in p.message]) == 1
