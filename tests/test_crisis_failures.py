"""The crisis reply goes out whatever else fails: a locked, broken or hanging database, no content, a bad matcher."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot import safety
from bot.content import Catalog, read_content
from bot.engine import APOLOGY, NO_CONTENT, Engine
from bot.errors import StoreError
from bot.escalation import Escalator
from bot.models import Escalation, Level, ReplyKind, Session, Track
from bot.spool import Spools
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore
from tests.conftest import SECRET, Chat, Clock

CASES = [
    pytest.param("i want to kill myself", Level.CRISIS, Track.SELF, id="self-crisis"),
    pytest.param("i just took the whole bottle", Level.IMMINENT, Track.SELF, id="self-imminent"),
    pytest.param("he found out i'm planning to leave", Level.CRISIS, Track.OTHERS, id="others-crisis"),
    pytest.param("he choked me last night", Level.IMMINENT, Track.OTHERS, id="others-imminent"),
]
NUMBERS = {"emergency": "911", "dv_hotline": "1-800-799-7233", "lifeline": "988", "outside_us": "116 123"}


class BrokenStore(MemoryStore):
    """Every call fails the way a vanished or corrupt database does."""

    async def load_session(self, user_key: str) -> Session | None:
        raise StoreError("disk I/O error")

    async def save_sessions(self, sessions: list[Session]) -> None:
        raise StoreError("disk I/O error")

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        raise StoreError("disk I/O error")


class HangingStore(MemoryStore):
    """Every call waits forever, as a database behind a stuck network mount would."""

    async def load_session(self, user_key: str) -> Session | None:
        await asyncio.Event().wait()
        return None

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        await asyncio.Event().wait()


class BuggyStore(MemoryStore):
    """A store with a bug: it raises something that is not a StoreError."""

    async def load_session(self, user_key: str) -> Session | None:
        raise RuntimeError("bug")


@asynccontextmanager
async def locked_database(tmp: Path, catalog: Catalog | None, clock: Clock) -> AsyncIterator[Engine]:
    path = tmp / "bot.sqlite3"
    async with SqliteStore(path) as store:
        spool = Spools([tmp / "spool.jsonl"])
        engine = Engine(store, SECRET, catalog, clock=clock, escalator=Escalator(store, spool, clock=clock))
        locker = sqlite3.connect(path)
        locker.execute("BEGIN EXCLUSIVE")  # another process holds the database: no reads, no writes
        try:
            yield engine
            assert len(spool.read()) == 1  # nothing is lost: the record waits in the spool
        finally:
            locker.rollback()
            locker.close()
            await engine.aclose()


def plain(store_class: type[MemoryStore], *, content: bool = True) -> Callable:
    @asynccontextmanager
    async def make(tmp: Path, catalog: Catalog | None, clock: Clock) -> AsyncIterator[Engine]:
        engine = Engine(store_class(), SECRET, catalog if content else None, clock=clock)
        engine.sessions.read_timeout = 0.2
        try:
            yield engine
        finally:
            engine.sessions.drop(engine.user_key("test", "alice"))
            await engine.escalator.aclose(grace=0.1)

    return make


@asynccontextmanager
async def broken_content(tmp: Path, catalog: Catalog | None, clock: Clock) -> AsyncIterator[Engine]:
    (tmp / "intents").mkdir()
    (tmp / "responses").mkdir()
    (tmp / "intents" / "bad.yml").write_text("id: [unclosed\n")
    loaded, problems = read_content(tmp)
    assert loaded is None and problems
    engine = Engine(MemoryStore(), SECRET, loaded, clock=clock)
    yield engine
    await engine.aclose()


@asynccontextmanager
async def failing_matcher(tmp: Path, catalog: Catalog | None, clock: Clock) -> AsyncIterator[Engine]:
    engine = Engine(MemoryStore(), SECRET, catalog, clock=clock)

    def explode(text: str) -> None:
        raise RuntimeError("matcher bug")

    engine.matcher.match = explode  # type: ignore[method-assign]
    yield engine
    await engine.aclose()


FAILURES = [
    pytest.param(locked_database, id="database-locked"),
    pytest.param(plain(BrokenStore), id="database-unavailable"),
    pytest.param(plain(HangingStore), id="database-hangs"),
    pytest.param(plain(BuggyStore), id="store-bug"),
    pytest.param(broken_content, id="content-failed-to-load"),
    pytest.param(failing_matcher, id="matcher-raises"),
]


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize(("text", "level", "track"), CASES)
async def test_the_crisis_reply_goes_out(
    failure: Callable, text: str, level: Level, track: Track, catalog: Catalog, clock: Clock, tmp_path: Path
) -> None:
    async with failure(tmp_path, catalog, clock) as engine:
        chat = Chat(engine)
        replies = await asyncio.wait_for(chat.say(text), timeout=5)
        assert [reply.kind for reply in replies] == [ReplyKind.CRISIS]
        detection = chat.last.detection
        assert (detection.level, detection.track) == (level, track)
        for resource in safety.resources_for(detection):
            assert NUMBERS[resource] in replies[0].text
        assert chat.last.escalation.resources == safety.resources_for(detection)


@pytest.mark.parametrize("failure", [FAILURES[1], FAILURES[2], FAILURES[4], FAILURES[5]])
async def test_a_check_in_goes_out_too(failure: Callable, catalog: Catalog, clock: Clock, tmp_path: Path) -> None:
    async with failure(tmp_path, catalog, clock) as engine:
        replies = await asyncio.wait_for(Chat(engine).say("i can't do this anymore. why do I miss him"), timeout=5)
        assert replies[0].kind is ReplyKind.CHECK_IN
        assert replies[-1].kind is ReplyKind.ANSWER or replies[-1].text in (NO_CONTENT, APOLOGY)
