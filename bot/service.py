"""Wires settings, content, store and engine together, the same way for every command."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.config import Settings
from bot.content import read_content
from bot.engine import Engine
from bot.errors import StoreError
from bot.store import MemoryStore, Store, open_store

log = logging.getLogger("unhooked.service")


@asynccontextmanager
async def running_engine(settings: Settings, store: Store | None = None) -> AsyncIterator[Engine]:
    """An engine over the configured content and store, closed cleanly on exit.

    Broken content or an unusable database do not stop the bot: it starts with what works,
    logs what does not, and crisis replies go out either way.
    """
    catalog, problems = read_content(settings.content_dir)
    for problem in problems:
        log.log(logging.ERROR if problem.level == "error" else logging.WARNING, "content: %s", problem)
    if catalog is None:
        log.error("content did not load; only crisis replies and notices will be sent until it is fixed")
    secret = settings.secret_key()
    store = store or open_store(settings.db_path)
    try:
        await store.open()
    except StoreError as error:
        log.error("%s; keeping sessions in memory only", error)
        store = MemoryStore()
    engine = Engine(store, secret, catalog)
    try:
        yield engine
    finally:
        await engine.aclose()
        await store.close()
