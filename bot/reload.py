"""Reloading content without a restart: a broken edit is refused and the last good content keeps serving.

``reload_content`` loads and checks the content (the same checks as ``python -m bot check``: any
error refuses the reload). ``ContentWatcher`` polls the content files' modification times and sizes
and reloads when they change, reporting refused reloads to a callback that alerts operators.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bot import periodic
from bot.content import Catalog
from bot.engine import Engine
from bot.health import CONTENT
from bot.lint import CONTENT_FOLDERS, TESTS_DIR, check_content
from bot.models import Problem

log = logging.getLogger("unhooked.reload")

SETTLE_SECONDS = 0.5
"""After a change, wait this long for the files to stop changing (an editor saving several files)."""


@dataclass(frozen=True)
class Reload:
    """What a reload did: whether the new content is now served, and every problem found."""

    applied: bool
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that stopped the reload."""
        return tuple(problem for problem in self.problems if problem.level == "error")

    def describe(self) -> str:
        """What happened, with the ``check`` output of the errors: the text of an operator alert."""
        if self.applied:
            return "content reloaded"
        head = f"content reload refused ({len(self.errors)} errors); the previous content keeps serving:"
        return "\n".join([head, *map(str, self.errors)])


ContentAlert = Callable[[Reload], Awaitable[None]]
"""Told about every refused reload, e.g. to alert operators."""


def log_problems(problems: list[Problem]) -> None:
    """Log each content error; warnings only as a count (``python -m bot check`` lists them)."""
    for problem in problems:
        if problem.level == "error":
            log.error("content: %s", problem)
    warnings = sum(problem.level != "error" for problem in problems)
    if warnings:
        log.info("content: %d warnings and notes; `python -m bot check` lists them", warnings)


def first_error(problems: list[Problem] | tuple[Problem, ...]) -> str:
    """The first error (file, line and message), for health and alerts."""
    errors = [problem for problem in problems if problem.level == "error"]
    if not errors:
        return "no error reported"
    return f"{errors[0]}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")


def _apply(engine: Engine, catalog: Catalog | None, problems: list[Problem]) -> Reload:
    log_problems(problems)
    if catalog is None:
        log.error("content reload refused (%d problems); the previous content keeps serving", len(problems))
        engine.metrics.reloads.inc("refused")
        serving = "the previous content keeps serving" if engine.catalog else "no content is served"
        engine.faults.fail(CONTENT, "reload", f"the last reload was refused, {serving}: {first_error(problems)}")
        return Reload(False, tuple(problems))
    engine.use(catalog)
    engine.metrics.reloads.inc("applied")
    engine.faults.clear(CONTENT, "reload")
    engine.faults.clear(CONTENT, "start")
    log.warning("content reloaded: %d intents, %d passages", len(catalog.intents), len(catalog.passages))
    return Reload(True, tuple(problems))


def reload_content(engine: Engine, root: Path, tests_dir: Path | None = None) -> Reload:
    """Load and check the content under ``root``; serve it if it has no errors, otherwise keep the current content."""
    return _apply(engine, *check_content(root, tests_dir))


async def reload_content_async(engine: Engine, root: Path, tests_dir: Path | None = None) -> Reload:
    """``reload_content`` with the reading and checking on a worker thread, so the event loop keeps answering."""
    return _apply(engine, *await asyncio.to_thread(check_content, root, tests_dir))


Snapshot = dict[Path, tuple[int, int]]


class ContentWatcher:
    """Polls the content files every ``interval`` seconds and reloads the engine when they change."""

    def __init__(
        self,
        engine: Engine,
        root: Path,
        *,
        interval: float,
        on_refused: ContentAlert | None = None,
        tests_dir: Path | None = None,
    ) -> None:
        self.engine = engine
        self.root = root
        self.interval = interval
        self.on_refused = on_refused
        self.tests_dir = root / TESTS_DIR if tests_dir is None else tests_dir
        self._seen = self.snapshot()
        self._task: asyncio.Task[None] | None = None

    def snapshot(self) -> Snapshot:
        """Each content file's modification time and size."""
        found: Snapshot = {}
        for folder in (*(self.root / name for name in CONTENT_FOLDERS), self.tests_dir):
            with contextlib.suppress(OSError):
                for path in folder.iterdir():
                    with contextlib.suppress(OSError):
                        stat = path.stat()
                        found[path] = (stat.st_mtime_ns, stat.st_size)
        return found

    async def poll(self) -> Reload | None:
        """Reload if the files changed since the last look; return what the reload did, or ``None``."""
        current = self.snapshot()
        if current == self._seen:
            return None
        while True:  # wait until the files stop changing
            await asyncio.sleep(min(SETTLE_SECONDS, self.interval))
            settled = self.snapshot()
            if settled == current:
                break
            current = settled
        self._seen = current
        result = await reload_content_async(self.engine, self.root, self.tests_dir)
        if not result.applied and self.on_refused is not None:
            try:
                await self.on_refused(result)
            except Exception:
                log.exception("could not report the refused reload")
        return result

    async def run(self) -> None:
        """Poll until cancelled; a failure in one poll is logged and the next poll goes on."""
        await periodic.every(self.interval, {"content watch": self.poll}, wait_first=True)

    def start(self) -> None:
        """Start polling in the background."""
        self._task = asyncio.create_task(self.run(), name="content-watcher")

    async def aclose(self) -> None:
        """Stop polling."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
