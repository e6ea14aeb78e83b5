"""``python -m bot check``: load what loads, run every check that can run on it, report as text or JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from bot.content import Catalog, read_content
from bot.lint import lint
from bot.meaning import Vectors
from bot.models import Problem
from bot.rules import check_floor

LEVELS = ("error", "warning", "note")


@dataclass(frozen=True)
class Report:
    """Every problem found, sorted by file and line, and what loaded."""

    problems: tuple[Problem, ...]
    catalog: Catalog | None
    """What loaded; ``None`` only when the content folders are missing."""

    def count(self, level: str) -> int:
        """How many problems of this level."""
        return sum(problem.level == level for problem in self.problems)

    def exit_code(self, *, fail_on_warnings: bool = False) -> int:
        """1 on any error (or warning, with ``fail_on_warnings``), else 0."""
        return 1 if self.count("error") or (fail_on_warnings and self.count("warning")) else 0

    def summary(self) -> str:
        """The last line: what loaded and how many problems of each level."""
        counts = f"{self.count('error')} errors, {self.count('warning')} warnings"
        if self.count("note"):
            counts += f", {self.count('note')} notes"
        if self.catalog is None:
            return f"content did not load: {counts}"
        c = self.catalog
        return f"{len(c.intents)} intents, {len(c.passages)} passages, {len(c.safety_rules)} safety patterns: {counts}"

    def as_text(self) -> str:
        """One ``path:line: level: message`` line per problem, then the summary."""
        return "".join(f"{problem}\n" for problem in self.problems) + self.summary() + "\n"

    def as_json(self) -> str:
        """One JSON document: each problem, the counts, and what loaded."""
        c = self.catalog
        document = {
            "problems": [
                {"path": str(p.path), "line": p.line, "level": p.level, "message": p.message} for p in self.problems
            ],
            "counts": {level: self.count(level) for level in LEVELS},
            "loaded": None
            if c is None
            else {"intents": len(c.intents), "passages": len(c.passages), "safety_patterns": len(c.safety_rules)},
            "served": self.count("error") == 0,
        }
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _here(path: Path) -> Path:
    """``path`` relative to the working folder when it lies inside it, so a floor problem reads ``bot/floor/...``."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def check(root: Path, tests_dir: Path | None = None, vectors: Vectors | None = None) -> Report:
    """Compile the floor and try its examples, load the content under ``root`` and check every file that loaded.

    ``vectors`` (the example vectors of meaning-based matching) lets the near-collision check match as the bot does.
    """
    catalog, problems = read_content(root, partial=True)
    problems += [replace(problem, path=_here(problem.path)) for problem in check_floor()]
    if catalog is not None:
        complete = not any(problem.level == "error" for problem in problems)
        problems += lint(catalog, root, tests_dir, complete=complete, vectors=vectors)
    return Report(tuple(sorted(problems, key=lambda p: (str(p.path), p.line))), catalog)
