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

__all__ = [
    "Answered",
    "EscalationLog",
    "Purged",
    "SessionStore",
    "Store",
    "TelegramJournal",
    "day_of",
    "folded_count_name",
]
