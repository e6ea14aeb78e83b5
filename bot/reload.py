"""Reloading content without a restart: a broken edit is refused and the last good content keeps serving."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from bot.content import read_content
from bot.engine import Engine
from bot.models import Problem

log = logging.getLogger("unhooked.reload")


@dataclass(frozen=True)
class Reload:
    """What a reload did: whether the new content is now served, and every problem found."""

    applied: bool
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that stopped the reload."""
        return tuple(problem for problem in self.problems if problem.level == "error")


def reload_content(engine: Engine, root: Path) -> Reload:
    """Load the content under ``root``; serve it if it has no errors, otherwise keep the current content."""
    catalog, problems = read_content(root)
    if catalog is None:
        log.error("content reload refused (%d problems); the previous content keeps serving", len(problems))
        return Reload(False, tuple(problems))
    engine.use(catalog)
    log.warning("content reloaded: %d intents, %d passages", len(catalog.intents), len(catalog.passages))
    return Reload(True, tuple(problems))
