"""The store: small interfaces by consumer (``base``), backends in ``memory``, ``sqlite`` and ``postgres``."""

from bot.store.base import (
    Answered,
    EscalationLog,
    Purged,
    SessionStore,
    Store,
    TelegramJournal,
    day_of,
    folded_count_name,
)
from bot.store.locks import LocalLocks, Locks, run_once

__all__ = [
    "Answered",
    "EscalationLog",
    "LocalLocks",
    "Locks",
    "Purged",
    "SessionStore",
    "Store",
    "TelegramJournal",
    "day_of",
    "folded_count_name",
    "run_once",
]
