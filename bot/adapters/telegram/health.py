"""The link to Telegram in health and metrics: what the sender and poller count, and when the link is failing.

The numbers go on the engine's registry, served at ``/metrics`` by the core's HTTP server (``bot.http``); a failing
link is a fault of the ``telegram`` check of ``/healthz``.
"""

from __future__ import annotations

from telegram.error import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)

from bot.health import Faults
from bot.metrics import Metrics

TELEGRAM = "telegram"
"""The health check of the link to Telegram; also the adapter's part in ``unhooked_handler_errors_total`` and, as
``replies.CHANNEL``, its channel in ``unhooked_messages_total``."""
ACCESS = "token"
"""The health check of the bot's token: refused by Telegram, or used by another instance too. No grace."""
LINK_GRACE = 60.0
"""Seconds sending or polling may keep failing before health reports it: Telegram's 429s and brief outages
are normal and waited out; a minute of nothing getting through is not."""
UPDATE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds from an update's arrival to its last reply sent (queueing, the engine and Telegram's answers)."""
KINDS = (
    "retry_after",
    "timed_out",
    "network",
    "server_error",
    "bad_request",
    "forbidden",
    "conflict",
    "invalid_token",
    "other",
)
"""The error kinds ``error_kind`` gives a Bot API error."""
METHODS = ("sendMessage", "getUpdates")
"""The Bot API methods every bot calls all the time: their error series are shown at 0 from the start."""
JOURNAL_OPERATIONS = ("journal_write", "journal_mark")
"""The journal's store operations counted in ``unhooked_store_errors_total`` when they fail."""
LINK_FAULTS = frozenset({"retry_after", "timed_out", "network", "server_error", "conflict", "invalid_token"})
"""Error kinds that mean the link to Telegram is failing (not one message or one person)."""


def error_kind(error: BaseException) -> str:
    """A Bot API error's kind, for metrics and health: a fixed word, never the error's text."""
    if isinstance(error, RetryAfter):
        return "retry_after"
    if isinstance(error, TimedOut):
        return "timed_out"
    if isinstance(error, BadRequest):
        return "bad_request"
    if isinstance(error, NetworkError):  # PTB wraps transport failures as "httpx.<Error>: ..."
        text = str(error)
        return "network" if text.startswith(("httpx.", "Unknown error in HTTP")) else "server_error"
    if isinstance(error, Forbidden):
        return "forbidden"
    if isinstance(error, Conflict):
        return "conflict"
    if isinstance(error, InvalidToken):
        return "invalid_token"
    return "other" if isinstance(error, TelegramError) else type(error).__name__


class TelegramMetrics:
    """The Telegram adapter's metrics, on the engine's registry, and its reports to health.

    Like the core's, its labelled series with known label values are shown at 0 from the start, and so are the
    core's series this adapter feeds (messages on the ``telegram`` channel, the journal's store errors, handler
    errors), so an alert on ``increase(...)`` fires for the first one after a start.
    """

    def __init__(self, metrics: Metrics, faults: Faults) -> None:
        self.faults = faults
        registry = metrics.registry
        metrics.messages.zero((TELEGRAM,))
        metrics.store_errors.zero(*((operation,) for operation in JOURNAL_OPERATIONS))
        metrics.handler_errors.zero((TELEGRAM,))
        self.errors = registry.counter(
            "unhooked_telegram_errors_total",
            f"Bot API requests that failed, by method and kind ({', '.join(KINDS)}).",
            ("method", "kind"),
        ).zero(*((method, kind) for method in METHODS for kind in KINDS))
        self.retries = registry.counter(
            "unhooked_telegram_retries_total", "Bot API requests sent again after a failure, by method.", ("method",)
        ).zero(*((method,) for method in METHODS))
        self.updates = registry.counter(
            "unhooked_telegram_updates_total", "Updates taken from Telegram and journalled (duplicates left out)."
        )
        self.pending = registry.gauge("unhooked_telegram_updates_pending", "Updates taken and not yet answered.")
        self.answering = registry.histogram(
            "unhooked_telegram_update_seconds", "From an update's arrival to its replies sent.", UPDATE_BUCKETS
        )
        self.blocked = registry.counter(
            "unhooked_telegram_blocked_total", "Messages not sent because the person has blocked the bot."
        )

    def failed(self, method: str, error: BaseException, source: str = "sending") -> str:
        """Count a failed request; a failing link (not one refused message) is reported to health."""
        kind = error_kind(error)
        self.errors.inc(method, kind)
        if kind in LINK_FAULTS:
            self.faults.fail(TELEGRAM, source, f"{method}: {kind}")
        return kind

    def worked(self, source: str = "sending") -> None:
        """A request got through: the link works."""
        self.faults.clear(TELEGRAM, source)
