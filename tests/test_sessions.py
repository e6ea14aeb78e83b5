"""Write-behind sessions: a reply never waits for a write, and never sees an older copy than the last one."""

from __future__ import annotations

import asyncio

from bot.models import Session
from bot.sessions import Sessions
from bot.store import MemoryStore


class SlowStore(MemoryStore):
    """A store whose session writes wait until the test lets them finish."""

    def __init__(self) -> None:
        super().__init__()
        self.go_on = asyncio.Event()

    async def save_sessions(self, sessions: list[Session]) -> None:
        await self.go_on.wait()
        await super().save_sessions(sessions)


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
