"""Write-behind sessions: a reply never waits for a write, and never sees an older copy than the last one."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bot.models import Session
from bot.sessions import RECENT_SECONDS, Sessions
from bot.store.memory import MemoryStore


class SlowStore(MemoryStore):
    """A store whose writes wait until the test lets them finish."""

    def __init__(self) -> None:
        super().__init__()
        self.go_on = asyncio.Event()

    async def save_sessions(self, sessions: list[Session]) -> None:
        await self.go_on.wait()
        await super().save_sessions(sessions)

    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        await self.go_on.wait()
        await super().add_counts(counts)


async def test_a_session_being_written_is_still_the_one_served() -> None:
    store = SlowStore()
    sessions = Sessions(store, flush_delay=0)
    first = Session(user_key="k", first_seen=1.0, last_seen=1.0, turns=1)
    sessions.put(first)
    writing = asyncio.create_task(sessions.flush())
    await asyncio.sleep(0)
    assert sessions.pending == 0
    assert (await sessions.get("k", 2.0)).turns == 1
    store.go_on.set()
    await writing
    assert (await sessions.get("k", 2.0)).turns == 1
    await sessions.aclose()


async def test_a_flush_returns_only_once_a_flush_under_way_is_written() -> None:
    store = SlowStore()
    sessions = Sessions(store, flush_delay=0)
    sessions.count("messages", 0.0)
    first = asyncio.create_task(sessions.flush())
    await asyncio.sleep(0)
    second = asyncio.create_task(sessions.flush())
    await asyncio.sleep(0.01)
    assert not second.done()
    store.go_on.set()
    await second
    assert await store.counts("1970-01-01") == {"messages": 1}
    await first
    await sessions.aclose()


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def load_session(self, user_key: str) -> Session | None:
        self.reads += 1
        return await super().load_session(user_key)


async def test_a_session_just_written_is_served_from_memory_for_a_while() -> None:
    store, now = CountingStore(), [0.0]
    sessions = Sessions(store, flush_delay=0, clock=lambda: now[0])
    sessions.put(Session(user_key="k", first_seen=1.0, last_seen=1.0, turns=1))
    await sessions.flush()
    assert (await sessions.get("k", 2.0)).turns == 1 and store.reads == 0
    now[0] += RECENT_SECONDS + 1
    assert (await sessions.get("k", 2.0)).turns == 1 and store.reads == 1  # read again after a while
    await sessions.aclose()


async def test_a_forgotten_session_is_not_served_from_memory_even_if_it_was_being_written() -> None:
    store = SlowStore()
    sessions = Sessions(store, flush_delay=0)
    sessions.put(Session(user_key="k", first_seen=1.0, last_seen=1.0, turns=5))
    writing = asyncio.create_task(sessions.flush())
    await asyncio.sleep(0)
    sessions.drop("k")  # /forget while the write is under way
    store.go_on.set()
    await writing
    await store.forget("k")
    assert (await sessions.get("k", 2.0)).turns == 0
    await sessions.aclose()


async def test_a_held_session_is_served_at_once_and_written_only_once_delivered() -> None:
    store = MemoryStore()
    sessions = Sessions(store, flush_delay=0)
    turn = await sessions.get("k", 1.0)
    turn.turns = 1
    sessions.hold(turn)  # the engine answered; the replies are not delivered yet
    served = await sessions.get("k", 2.0)
    assert served.turns == 1 and served is not turn  # the next message sees it, in a copy of its own
    await sessions.flush()
    assert await store.load_session("k") is None and sessions.pending == 1
    sessions.put(turn)  # delivered
    await sessions.flush()
    assert (await store.load_session("k")).turns == 1 and sessions.pending == 0
    await sessions.aclose()


async def test_a_session_saved_with_its_mark_gives_way_only_to_itself() -> None:
    store = CountingStore()
    sessions = Sessions(store, flush_delay=0)
    first = Session(user_key="k", first_seen=1.0, last_seen=1.0, turns=1)
    sessions.hold(first)
    second = await sessions.get("k", 2.0)
    second.turns = 2
    sessions.hold(second)
    sessions.saved([first])  # the first turn's mark (and session) reached the store; the second's did not yet
    assert (await sessions.get("k", 3.0)).turns == 2 and sessions.pending == 1
    sessions.saved([second])
    assert (await sessions.get("k", 3.0)).turns == 2 and sessions.pending == 0 and store.reads == 0
    third = await sessions.get("k", 4.0)
    sessions.hold(third)
    sessions.drop("k")  # /forget before its mark was written
    sessions.saved([third])
    assert (await sessions.get("k", 5.0)).turns == 0  # not brought back from memory
    await sessions.aclose()
