"""Shared fixtures: the shipped content, both stores, an engine, a transcript-style chat, the fake Bot API."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from bot.config import PACKAGE_DIR
from bot.content import Catalog, load_catalog
from bot.engine import Engine
from bot.models import Incoming, Reply
from bot.store import Store
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore
from tests import processes
from tests.pg_schema import pg_schema

if TYPE_CHECKING:
    from tests.fake_bot_api import FakeBotApi
    from tests.telegram_harness import Running

REPO = PACKAGE_DIR.parent
SECRET = b"test-secret-0123456789abcdef"

# Property tests stay quick by default; HYPOTHESIS_PROFILE=ci runs ten times as many examples.
settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=400, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True, scope="session")
def _settled_process() -> None:
    """What the bot sets when it starts, set for every test: tests that build PTB objects alone need it too."""
    from bot.adapters.telegram.app import settle_process

    settle_process()


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


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, under which a file is readable by everyone unless the bot creates it otherwise."""
    before = os.umask(0o022)
    yield
    os.umask(before)


@pytest.fixture(autouse=True)
def _no_bot_left_running() -> Iterator[None]:
    """A test that fails before stopping the bot processes it started leaves none of them running."""
    yield
    processes.kill_left_running()


def mode(path: Path) -> int:
    """A file's or folder's permission bits, e.g. ``0o600``."""
    return path.stat().st_mode & 0o777


def shows_id(text: str, user_id: int) -> bool:
    """Whether a raw Telegram id appears in ``text`` as a number of its own, not inside a timing or a hash."""
    return re.search(rf"(?<![0-9a-fA-F]){user_id}(?![0-9a-fA-F])", text) is not None


PG_VARIABLE = "UNHOOKED_TEST_PG"
PG_EXAMPLE = "postgresql://postgres@127.0.0.1:5432/test"


_PG_PROBLEM = pytest.StashKey[str]()


def _pg_unavailable() -> str | None:
    """Why the PostgreSQL tests cannot run here, as one sentence naming what to set; ``None`` when they can."""
    url = os.environ.get(PG_VARIABLE, "").strip()
    if not url:
        return f"PostgreSQL tests skipped: set {PG_VARIABLE}, e.g. {PG_VARIABLE}={PG_EXAMPLE}"
    with ThreadPoolExecutor(1) as thread:  # collection may already run in an event loop
        problem = thread.submit(asyncio.run, _pg_problem(url)).result()
    if problem:
        return f"PostgreSQL tests skipped: {PG_VARIABLE} does not answer ({problem}); set it to a server that does"
    return None


PG_PARAMETERS = ("backend", "telegram_db")
"""The fixtures whose ``postgres`` parameter needs the server."""


def _uses_pg(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return "pg_server" in getattr(item, "fixturenames", ()) or (
        callspec is not None and any(callspec.params.get(name) == "postgres" for name in PG_PARAMETERS)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a PostgreSQL server, leave its tests out and say so once, at the end (``_PG_PROBLEM``)."""
    wanted = [item for item in items if _uses_pg(item)]
    if not wanted:
        return
    problem = _pg_unavailable()
    if problem is None:
        return
    config.stash[_PG_PROBLEM] = f"{problem} ({len(wanted)} tests)"
    config.hook.pytest_deselected(items=wanted)
    items[:] = [item for item in items if not _uses_pg(item)]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker, hand the skip line to the controller, which prints the summary."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None and _PG_PROBLEM in session.config.stash:
        output["pg_problem"] = session.config.stash[_PG_PROBLEM]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """On the pytest-xdist controller, keep the skip line a worker handed over (every worker collects alike)."""
    problem = getattr(node, "workeroutput", {}).get("pg_problem")
    if problem:
        node.config.stash[_PG_PROBLEM] = problem


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The one line that says the PostgreSQL tests did not run, and what to set."""
    if _PG_PROBLEM in config.stash:
        terminalreporter.write_line(config.stash[_PG_PROBLEM], yellow=True)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The PostgreSQL server of ``UNHOOKED_TEST_PG`` (tests that need it are left out without one)."""
    return os.environ[PG_VARIABLE].strip()


async def _pg_problem(url: str) -> str | None:
    import asyncpg

    try:
        connection = await asyncpg.connect(url, timeout=5)
    except (OSError, TimeoutError, asyncpg.PostgresError) as error:
        return str(error) or type(error).__name__
    await connection.close()
    return None


@pytest.fixture
async def pg_url(pg_server: str) -> AsyncIterator[str]:
    """A URL on a fresh schema of the test server, dropped afterwards: parallel runs never meet."""
    async with pg_schema(pg_server) as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Each backend in turn, as (name, where): a fresh file for SQLite, the test server for PostgreSQL."""
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("pg_server")
    return request.param, str(tmp_path / "sessions.sqlite3")


@pytest.fixture
async def store(backend: tuple[str, str]) -> AsyncIterator[Store]:
    """Each store implementation in turn, opened on a fresh file or schema."""
    name, where = backend
    if name == "postgres":
        from bot.store.postgres import PostgresStore

        async with pg_schema(where) as url, PostgresStore(url) as made:
            yield made
        return
    async with MemoryStore() if name == "memory" else SqliteStore(where) as made:
        yield made


class Chat:
    """One person talking to the engine; ``await chat.say(...)`` returns the replies."""

    def __init__(self, engine: Engine, user: str = "alice", channel: str = "test") -> None:
        self.engine = engine
        self.user = user
        self.channel = channel
        self.last = None

    async def say(self, text: str, *, topic: str | None = None) -> list[Reply]:
        """One message, answered and delivered, as an adapter does: the session is kept once the replies are."""
        self.last = await self.engine.handle(Incoming(self.user, text, self.channel, topic=topic))
        self.engine.delivered(self.last)
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
def telegram_db() -> str | None:
    """The PostgreSQL URL the Telegram bot of a test keeps its data in; ``None``: a fresh SQLite file.

    A test module runs on both by overriding it with ``telegram_db_on_both``.
    """
    return None


async def telegram_db_on_both(request: pytest.FixtureRequest) -> AsyncIterator[str | None]:
    """``None`` (SQLite) for the ``sqlite`` parameter, a fresh schema of the test server for ``postgres``."""
    if request.param != "postgres":
        yield None
        return
    async with pg_schema(request.getfixturevalue("pg_server")) as url:
        yield url


@pytest.fixture
async def tg(api: FakeBotApi, tmp_path: Path, telegram_db: str | None) -> AsyncIterator[Running]:
    """The real Telegram bot running against ``api``, on a fresh database (``telegram_db``)."""
    from tests.telegram_harness import telegram_bot  # it imports this module

    async with telegram_bot(api, tmp_path, db_url=telegram_db) as running:
        yield running
