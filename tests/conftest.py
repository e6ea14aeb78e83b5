"""Shared fixtures: the shipped content, both stores, an engine, and a transcript-style chat."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from hypothesis import settings

from bot.config import PACKAGE_DIR
from bot.content import Catalog, load_catalog
from bot.engine import Engine
from bot.models import Incoming, Reply
from bot.store import MemoryStore, SqliteStore, Store

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
