"""Reloading content: good edits are served at once, broken edits are refused and the old content stays."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import Callable
from pathlib import Path

from bot.adapters.terminal import stderr_content_alert
from bot.config import Settings
from bot.engine import Engine
from bot.models import Problem
from bot.reload import Reload, reload_content, reload_content_async
from bot.service import running_service
from bot.store.memory import MemoryStore
from tests.conftest import MINI_CONTENT, REPO, Chat

Mini = Callable[..., Path]


def copy_content(tmp_path: Path) -> Path:
    root = tmp_path / "content"
    for folder in ("intents", "responses", "source", "policy"):
        shutil.copytree(REPO / folder, root / folder)
    return root


async def test_a_good_edit_is_served_from_the_next_message(engine: Engine, tmp_path: Path) -> None:
    root = copy_content(tmp_path)
    greeting = root / "intents" / "greeting.yml"
    chat = Chat(engine)
    await chat.say("ahoy matey")
    assert chat.last.match.intent is None
    greeting.write_text(greeting.read_text().replace("examples:\n", "examples:\n  - ahoy matey\n"))
    result = reload_content(engine, root)
    assert result.applied and result.errors == ()
    await chat.say("ahoy matey")
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


async def test_an_edit_that_check_refuses_is_not_served(engine: Engine, tmp_path: Path) -> None:
    before = engine.catalog
    root = copy_content(tmp_path)
    thanks = root / "responses" / "conversation.yml"
    thanks.write_text(thanks.read_text().replace("You're welcome.", "You're welcome. Maybe try couples therapy."))
    result = reload_content(engine, root)
    assert not result.applied
    assert [p.message.split(",")[0] for p in result.errors] == ["passage 'thanks.welcome' contains 'couples therapy'"]
    assert engine.catalog is before


async def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait until ``condition`` holds; fail with a clear message if it never does."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"gave up after {seconds} seconds")
        await asyncio.sleep(0.02)


class Refused(list):
    """An operator alert that keeps every refused reload it is told about."""

    async def __call__(self, result: Reload) -> None:
        self.append(result)


def settings_for(root: Path, reload_seconds: float) -> Settings:
    return Settings(db_path=Path(":memory:"), content_dir=root, reload_seconds=reload_seconds)


async def test_the_running_bot_serves_a_good_edit_without_a_restart(mini_content: Mini) -> None:
    root = mini_content()
    refused = Refused()
    async with running_service(settings_for(root, 0.05), MemoryStore(), content_alert=refused) as service:
        engine = service.engine
        chat = Chat(engine)
        await chat.say("howdy partner")
        assert chat.last.match.intent is None
        before = engine.catalog
        hello = root / "intents" / "hello.yml"
        hello.write_text(hello.read_text().replace("examples:\n", "examples:\n  - howdy partner\n"))
        await wait_for(lambda: engine.catalog is not before)
        await chat.say("howdy partner")
        assert chat.last.match.intent == "hello"
    assert refused == []


async def test_the_running_bot_refuses_a_broken_edit_and_alerts_operators(mini_content: Mini) -> None:
    root = mini_content()
    refused = Refused()
    async with running_service(settings_for(root, 0.05), MemoryStore(), content_alert=refused) as service:
        engine = service.engine
        before = engine.catalog
        quotes = root / "responses" / "miss.yml"
        quotes.write_text(MINI_CONTENT["responses/miss.yml"].replace("not proof", "no proof"))
        await wait_for(lambda: bool(refused))
        assert engine.catalog is before
        replies = await Chat(engine).say("why do I miss him so much")
        assert replies[0].text == "Missing someone is not proof you should go back."
    [result] = refused
    assert not result.applied
    assert [(p.path, p.line, p.level) for p in result.errors] == [(quotes, 2, "error")]
    assert "is not verbatim from the article" in result.errors[0].message


async def test_reloading_can_be_turned_off(mini_content: Mini) -> None:
    async with running_service(settings_for(mini_content(), 0), MemoryStore()):
        assert "content-watcher" not in {task.get_name() for task in asyncio.all_tasks()}
    async with running_service(settings_for(mini_content(), 5), MemoryStore()):
        assert "content-watcher" in {task.get_name() for task in asyncio.all_tasks()}


async def test_the_terminal_prints_a_refused_reload_on_stderr(tmp_path: Path) -> None:
    stream = io.StringIO()
    problem = Problem(tmp_path / "intents" / "x.yml", 3, "error", "something is wrong")
    await stderr_content_alert(stream)(Reload(False, (problem,)))
    assert stream.getvalue() == (
        "[content] content reload refused (1 errors); the previous content keeps serving:\n"
        f"[content] {tmp_path}/intents/x.yml:3: error: something is wrong\n"
    )


async def test_the_async_reload_refuses_a_broken_edit_too(engine: Engine, tmp_path: Path) -> None:
    before = engine.catalog
    root = copy_content(tmp_path)
    (root / "source" / "article.yml").write_text("title: [unclosed\n")
    result = await reload_content_async(engine, root)
    assert not result.applied and engine.catalog is before
    assert [p.path.name for p in result.errors] == ["article.yml"]


async def test_a_new_safety_pattern_is_screened_from_the_next_message(engine: Engine, tmp_path: Path) -> None:
    root = copy_content(tmp_path)
    chat = Chat(engine)
    # a code phrase a local service agreed with the people it serves: harmless words to anyone else
    await chat.say("the yellow umbrella is in the hall")
    assert chat.last.detection is None
    (root / "safety").mkdir()
    (root / "safety" / "patterns.yml").write_text(
        "patterns:\n  - id: local.umbrella\n    category: partner_danger\n    level: crisis\n"
        "    phrase: yellow umbrella is in the hall\n"
    )
    assert reload_content(engine, root).applied
    replies = await chat.say("the yellow umbrella is in the hall")
    assert chat.last.detection.rule == "local.umbrella" and "1-800-799-7233" in replies[0].text
    assert chat.last.escalation.rule == "local.umbrella"
    bob = chat.as_user("bob")
    await bob.say("i want to kill myself")
    assert bob.last.detection.rule == "suicidal.kill_myself"  # the floor in code still applies
