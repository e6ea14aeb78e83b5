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
