"""Shared fixtures: the shipped content, both stores, an engine, a transcript-style chat, the fake Bot API."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from bot.config import PACKAGE_DIR
from bot.content import Catalog, load_catalog
from bot.engine import Engine
from bot.models import Incoming, Reply
from bot.store import Store
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from tests.fake_bot_api import FakeBotApi
    from tests.telegram_harness import Running

REPO = PACKAGE_DIR.parent
SECRET = b"test-secret-0123456789abcdef"

# Property tests stay quick by default; HYPOTHESIS_PROFILE=ci runs ten times as many examples.
settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=400, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The shipped content, loaded once."""
    return load_catalog(REPO)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """Each store implementation in turn, opened on a fresh file."""
    made: Store = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "sessions.sqlite3")
    async with made:
        yield made


class Chat:
    """One person talking to the engine; ``await chat.say(...)`` returns the replies."""

    def __init__(self, engine: Engine, user: str = "alice", channel: str = "test") -> None:
        self.engine = engine
        self.user = user
        self.channel = channel
        self.last = None

    async def say(self, text: str, *, topic: str | None = None) -> list[Reply]:
        self.last = await self.engine.handle(Incoming(self.user, text, self.channel, topic=topic))
        return list(self.last.replies)

    def as_user(self, user: str) -> Chat:
        return Chat(self.engine, user, self.channel)


@pytest.fixture
async def engine(catalog: Catalog, clock: Clock) -> AsyncIterator[Engine]:
    made = Engine(MemoryStore(), SECRET, catalog, clock=clock)
    yield made
    await made.aclose()


@pytest.fixture
def chat(engine: Engine) -> Chat:
    return Chat(engine)


@pytest.fixture
def write_content(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write a content tree from ``{relative path: text}`` and return its root."""

    def write(files: dict[str, str]) -> Path:
        root = tmp_path / "content"
        for relative, text in {"source/article.yml": 'title: "A test article"\n', **files}.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for folder in ("intents", "responses"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        return root

    return write


MINI_ARTICLE = """\
Some days are harder than others. That is where this begins.
First Heading
Missing someone is not proof you should go back. It is proof your brain is still adjusting.
Second Heading
The cravings come in waves, and each wave is shorter than the last.
"""

MINI_CONTENT = {
    "source/article.yml": 'title: "A test article"\nfile: article.txt\n',
    "source/article.txt": MINI_ARTICLE,
    "policy/banned_advice.yml": (
        "rules:\n"
        "  - reason: relationship advice with an abusive partner\n"
        "    phrases:\n"
        "      - couples therapy\n"
        "      - give them another chance\n"
    ),
    "intents/hello.yml": (
        "id: hello\n"
        "title: Say hello\n"
        "examples:\n"
        "  - hello there\n"
        "  - good morning to you\n"
        "responses:\n"
        "  - hello.reply\n"
    ),
    "intents/miss.yml": (
        "id: miss\n"
        "title: Why do I miss them?\n"
        "examples:\n"
        "  - why do I miss him so much\n"
        "  - I keep missing her every day\n"
        "keywords:\n"
        "  - miss them\n"
        "responses:\n"
        "  - miss.proof\n"
        "  - miss.waves\n"
    ),
    "responses/chat.yml": (
        "passages:\n"
        "  - id: hello.reply\n"
        "    source: bot\n"
        "    text: Hello. What is on your mind?\n"
        "    follow_ups: [miss]\n"
    ),
    "responses/miss.yml": (
        "passages:\n"
        "  - id: miss.proof\n"
        "    section: First Heading\n"
        "    text: >-\n"
        "      Missing someone is not proof you should go back.\n"
        "  - id: miss.waves\n"
        "    section: Second Heading\n"
        "    text: The cravings come in waves, and each wave is shorter than the last.\n"
    ),
    "tests/conversations/hello.yaml": "intent: hello\ntests:\n  - hello there friend\n  - good morning to you all\n",
    "tests/conversations/miss.yaml": (
        "intent: miss\ntests:\n  - why do i miss her so much\n  - text: i keep missing him every day\n"
        "    reply_contains: not proof\n"
    ),
}
"""A tiny content tree that passes every check: two intents, an article, a policy and test sentences."""


@pytest.fixture
def mini_content(write_content: Callable[[dict[str, str]], Path]) -> Callable[..., Path]:
    """Write the tiny content tree, with some files replaced (``None`` removes one), and return its root."""

    def write(changes: dict[str, str | None] | None = None) -> Path:
        files = {**MINI_CONTENT, **(changes or {})}
        return write_content({path: text for path, text in files.items() if text is not None})

    return write


@pytest.fixture
async def api() -> AsyncIterator[FakeBotApi]:
    """A fake Telegram Bot API server on 127.0.0.1."""
    from tests.fake_bot_api import FakeBotApi  # here, not above: it imports python-telegram-bot's world

    async with FakeBotApi() as fake:
        yield fake


@pytest.fixture
async def tg(api: FakeBotApi, tmp_path: Path) -> AsyncIterator[Running]:
    """The real Telegram bot running against ``api``, on a fresh database."""
    from tests.telegram_harness import telegram_bot  # it imports this module

    async with telegram_bot(api, tmp_path) as running:
        yield running
