"""Logging for every command: our lines at ``UNHOOKED_LOG_LEVEL``, the libraries that echo payloads kept quiet."""

from __future__ import annotations

import logging

QUIET_LOGGERS = ("aiosqlite", "httpx", "httpcore", "telegram", "tornado.access", "apscheduler")
"""Libraries whose chatty levels echo payloads: SQL parameters, request URLs with the bot token, whole
updates with message text and user ids, request lines. They log at WARNING or above whatever
``UNHOOKED_LOG_LEVEL`` says."""


class _Redact(logging.Filter):
    """Blank the arguments of PTB's log lines: some carry whole updates (a person's words) or a token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("telegram") and record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(arg if isinstance(arg, int | float) else "<redacted>" for arg in args)
        return True


def quiet_library_logs() -> None:
    """The libraries in ``QUIET_LOGGERS`` never below WARNING, and PTB's remaining lines without their arguments."""
    floor = max(logging.getLogger().getEffectiveLevel(), logging.WARNING)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(floor)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _Redact) for f in handler.filters):
            handler.addFilter(_Redact())


def configure_logging(level: str) -> None:
    """Log to stderr at ``level``, with the libraries quieted (``quiet_library_logs``)."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_library_logs()
