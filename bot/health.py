"""Health: whether the process, the store, the content and an adapter's link work right now, for ``/healthz``.

The parts of the bot report what fails while it fails (``Faults.fail``) and clear it when the same work
succeeds again (``Faults.clear``): the session writer, the escalation recorder, the content reloader, and an
adapter's sender and poller. ``Health.report`` adds a live probe of the store and says, check by check, what
is wrong. Details name the operation and the error, never a person or their words.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot import __version__
from bot.errors import StoreError

STORE = "store"
CONTENT = "content"
PING_TIMEOUT = 1.0
"""Seconds the store has to answer the health probe."""
MAX_DETAIL_CHARS = 500
"""A fault's detail is cut here: enough to name a path, the error and what to do about it."""


def describe(error: BaseException, waited: float | None = None) -> str:
    """An error for health and logs: its kind, and its message if it has one (``waited``: a timeout's length).

    Only for errors whose messages name no one: the store's (a path and SQLite's words), the network's.
    """
    if isinstance(error, TimeoutError) and waited is not None:
        return f"no answer within {waited:g} s (is the database locked by another process, or very slow?)"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@dataclass
class Fault:
    """One part of the bot failing: since when, how often, and the latest error."""

    detail: str
    since: float
    times: int = 1


class Faults:
    """What is failing now, by check (``store``, ``content``, ``telegram``...) and by the part that reported it."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._faults: dict[str, dict[str, Fault]] = {}

    def fail(self, check: str, source: str, detail: str) -> None:
        """``source`` (e.g. "session writes") under ``check`` just failed with ``detail``."""
        detail = detail[:MAX_DETAIL_CHARS]
        found = self._faults.setdefault(check, {}).get(source)
        if found is None:
            self._faults[check][source] = Fault(detail, self._clock())
        else:
            found.detail = detail
            found.times += 1

    def clear(self, check: str, source: str) -> None:
        """``source`` under ``check`` just worked again."""
        faults = self._faults.get(check)
        if faults:
            faults.pop(source, None)

    def of(self, check: str) -> dict[str, Fault]:
        """The faults of one check, by source."""
        return dict(self._faults.get(check, {}))

    def checks(self) -> list[str]:
        """The checks that have a fault now."""
        return [check for check, faults in self._faults.items() if faults]


class Health:
    """The answer to ``/healthz``: every check, and whether all of them pass.

    A check fails while one of its faults has lasted ``grace[check]`` seconds (0 by default) or its
    probe says so. ``store`` probes the database; ``content`` fails while no content is served or the
    last reload was refused. Adapters add checks of their own by name with a grace (e.g. ``telegram``:
    a few seconds of 429s or timeouts are normal, minutes are not).
    """

    def __init__(
        self,
        faults: Faults,
        *,
        ping: Callable[[], Awaitable[None]],
        content: Callable[[], dict[str, Any]],
        grace: dict[str, float] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.faults = faults
        self._ping = ping
        self._content = content
        self.grace = {STORE: 0.0, CONTENT: 0.0, **(grace or {})}
        self._clock = clock
        self._started = clock()

    async def report(self) -> tuple[bool, dict[str, Any]]:
        """Whether every check passes, and the JSON body that says so check by check."""
        now = self._clock()
        checks: dict[str, dict[str, Any]] = {
            "process": {"ok": True, "uptime_seconds": round(now - self._started, 1), "version": __version__},
            STORE: await self._store(),
            CONTENT: self._content(),
        }
        for name in (*self.grace, *self.faults.checks()):  # a check nobody gave a grace still shows its faults
            checks.setdefault(name, {"ok": True})
        for name, check in checks.items():
            self._add_faults(name, check, now)
        failing = [name for name, check in checks.items() if not check["ok"]]
        body: dict[str, Any] = {"status": "failing" if failing else "ok"}
        if failing:
            body["failing"] = failing
        body["checks"] = checks
        return not failing, body

    async def _store(self) -> dict[str, Any]:
        try:
            async with asyncio.timeout(PING_TIMEOUT):
                await self._ping()
        except TimeoutError:
            return {"ok": False, "problems": [f"the database did not answer a read within {PING_TIMEOUT:g} s"]}
        except StoreError as error:
            return {"ok": False, "problems": [f"the database cannot be read: {error}"[:MAX_DETAIL_CHARS]]}
        return {"ok": True}

    def _add_faults(self, name: str, check: dict[str, Any], now: float) -> None:
        grace = self.grace.get(name, 0.0)
        for source, fault in sorted(self.faults.of(name).items()):
            lasted = now - fault.since
            line = f"{source} failing for {lasted:.0f} s ({fault.times} times): {fault.detail}"
            if lasted >= grace:
                check["ok"] = False
                check.setdefault("problems", []).append(line)
            else:
                check.setdefault("recovering", []).append(line)
