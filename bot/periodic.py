"""The background loops' one shape: run some steps every so many seconds until cancelled, whatever a step raises."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger("unhooked.periodic")

Step = Callable[[], Awaitable[object]]


async def every(seconds: float, steps: Mapping[str, Step], *, wait_first: bool = False) -> None:
    """Run each of ``steps`` (by name, in order) every ``seconds`` until cancelled, first at once unless ``wait_first``.

    A step that raises is logged with its name and tried again next time; the other steps still run, so one
    bug (say, a malformed spool line) never stops alert retries, purges or health checks for good.
    """
    if wait_first:
        await asyncio.sleep(seconds)
    while True:
        for name, step in steps.items():
            try:
                await step()
            except Exception:
                log.exception("%s failed; it runs again in %g s", name, seconds)
        await asyncio.sleep(seconds)
