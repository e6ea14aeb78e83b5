"""Reloading content: good edits are served at once, broken edits are refused and the old content stays."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.engine import Engine
from bot.reload import reload_content
from tests.conftest import REPO, Chat


def copy_content(tmp_path: Path) -> Path:
    root = tmp_path / "content"
    for folder in ("intents", "responses", "source"):
        shutil.copytree(REPO / folder, root / folder)
    return root


async def test_a_good_edit_is_served_from_the_next_message(engine: Engine, tmp_path: Path) -> None:
    root = copy_content(tmp_path)
    greeting = root / "intents" / "greeting.yml"
    chat = Chat(engine)
    await chat.say("howdy partner")
    assert chat.last.match.intent is None
    greeting.write_text(greeting.read_text().replace("examples:\n", "examples:\n  - howdy partner\n"))
    result = reload_content(engine, root)
    assert result.applied and result.errors == ()
    await chat.say("howdy partner")
    assert chat.last.match.intent == "greeting"


async def test_a_broken_edit_is_refused_and_the_old_content_keeps_serving(engine: Engine, tmp_path: Path) -> None:
    before = engine.catalog
    root = copy_content(tmp_path)
    (root / "intents" / "greeting.yml").write_text("id: greeting\nexamples: [unclosed\n")
    result = reload_content(engine, root)
    assert not result.applied
    assert any("greeting.yml" in str(problem) for problem in result.errors)
    assert engine.catalog is before
    assert (await Chat(engine).say("hello"))[0].text == before.passages["greeting.welcome"].text


async def test_a_new_safety_pattern_is_screened_from_the_next_message(engine: Engine, tmp_path: Path) -> None:
    root = copy_content(tmp_path)
    chat = Chat(engine)
    await chat.say("he sleeps with a bat by the door")
    assert chat.last.detection is None
    (root / "safety").mkdir()
    (root / "safety" / "patterns.yml").write_text(
        "patterns:\n  - id: local.bat\n    category: partner_danger\n    level: crisis\n"
        "    phrase: sleeps with a bat by the door\n"
    )
    assert reload_content(engine, root).applied
    replies = await chat.say("he sleeps with a bat by the door")
    assert chat.last.detection.rule == "local.bat" and "1-800-799-7233" in replies[0].text
    assert chat.last.escalation.rule == "local.bat"
    bob = chat.as_user("bob")
    await bob.say("i want to kill myself")
    assert bob.last.detection.rule == "suicidal.kill_myself"  # the floor in code still applies
