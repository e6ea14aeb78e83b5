"""The small error hierarchy that the bot reports as sentences, never as tracebacks."""

from __future__ import annotations

from collections.abc import Iterable

from bot.models import Problem


class BotError(Exception):
    """Base class for every error the bot explains to a person."""


class ConfigError(BotError):
    """A setting is missing or wrong; the message says what to set."""


class ContentError(BotError):
    """Content files could not be loaded; carries every problem found."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


class StoreError(BotError):
    """The store could not be opened, read or written."""


class SchemaError(StoreError):
    """The database's migrations are not this version's: newer, or behind for a command that never migrates."""


MISSING, REPLACED, CORRUPT, UNOPENED = "missing", "replaced", "corrupt", "unopened"
DATABASE_FAULTS = (MISSING, REPLACED, CORRUPT, UNOPENED)
"""What can be wrong with the database as a whole: its file deleted or replaced while the bot ran, its content
corrupt, or (at start) a database that could not be opened at all."""


class DatabaseFault(StoreError):
    """The database as a whole is lost or unusable (``kind``, one of ``DATABASE_FAULTS``); the message says how."""

    def __init__(self, kind: str, detail: str) -> None:
        if kind not in DATABASE_FAULTS:
            raise ValueError(f"a database fault is one of {DATABASE_FAULTS}, not {kind!r}")
        self.kind = kind
        super().__init__(detail)
