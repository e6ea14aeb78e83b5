"""Logging for every command: our lines at ``UNHOOKED_LOG_LEVEL`` as text or JSON, noisy libraries kept quiet.

``UNHOOKED_LOG_FORMAT=json`` writes one JSON object per line; the libraries that echo payloads stay at WARNING.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

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


class Throttle(logging.Filter):
    """At most one line per ``every`` seconds of each kind (logger and raw message); the next counts the rest.

    Attached (``attach``) to the loggers that a flood of bad requests writes to, so that it writes a few lines.
    """

    MAX_KINDS = 256
    """Kinds remembered; past that the memory starts afresh (a message written with its values inside)."""

    def __init__(self, every: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every = every
        self._clock = clock
        self._kinds: dict[tuple[str, str], tuple[float, int]] = {}
        """By kind: when a line of it was last let through, and how many were left out since."""

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = (record.name, str(record.msg)), self._clock()
        last, left_out = self._kinds.get(key, (None, 0))
        if last is not None and now - last < self.every:
            self._kinds[key] = (last, left_out + 1)
            return False
        if len(self._kinds) >= self.MAX_KINDS:
            self._kinds.clear()
        self._kinds[key] = (now, 0)
        if left_out and last is not None:
            record.msg = f"{record.msg} ({left_out} more like it in the {now - last:.0f} s before were not logged)"
        return True

    def attach(self, names: Iterable[str]) -> Callable[[], None]:
        """Filter the loggers ``names``; returns what takes the filter off them again."""
        loggers = [logging.getLogger(name) for name in names]
        for logger in loggers:
            logger.addFilter(self)

        def detach() -> None:
            for logger in loggers:
                logger.removeFilter(self)

        return detach


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FIELDS = "json_fields"
"""The ``extra`` key of a record whose fields a JSON line carries at its top level instead of the message
(the escalation's: the text format shows them as the message, one JSON line)."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), severity, logger, message or fields, and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "severity": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            line.update({key: value for key, value in fields.items() if key not in line})
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def formatter(kind: str) -> logging.Formatter:
    """The formatter for ``UNHOOKED_LOG_FORMAT``: ``text`` (the default) or ``json``."""
    if kind == "json":
        return JsonFormatter()
    return logging.Formatter(TEXT_FORMAT)


def configure_logging(level: str, kind: str = "text") -> None:
    """Log to stderr at ``level`` as ``kind`` (text or json), with the libraries quieted (``quiet_library_logs``)."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(kind))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    quiet_library_logs()
