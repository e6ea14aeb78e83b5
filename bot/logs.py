"""Log records as text for people or as one JSON object per line for log shippers (``UNHOOKED_LOG_FORMAT``)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

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
