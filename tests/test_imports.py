"""The package's shape: no import cycles (counting ``TYPE_CHECKING`` and relative imports), small modules, and
no side effects at import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "bot"
MAX_LINES = 500


def module_names(package: Path) -> dict[str, Path]:
    """Every module under ``package`` by its dotted name (a package by its own name, for its __init__.py)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    """Which of the package's modules each one imports anywhere in it: under ``TYPE_CHECKING``, in functions too.

    ``from a import b`` counts as importing the module ``a.b`` when there is one, else ``a``; the parent
    packages that Python initialises on the way are not counted.
    """
    modules = module_names(package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                origin = ".".join([*base, *([node.module] if node.module else [])])
                imported.update(
                    f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin for alias in node.names
                )
        graph[name] = {other for other in imported if other in modules and other != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import one another, round in a circle (Tarjan's strongly connected components)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def long_modules(package: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """Modules over ``limit`` lines, by their path from the repository root."""
    lengths = {
        path.relative_to(package.parent).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in module_names(package).values()
    }
    return {path: lines for path, lines in lengths.items() if lines > limit}


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert "bot.adapters.telegram.people" in graph["bot.adapters.telegram.app"], "the graph misses imports"
    assert cycles(graph) == []


def test_a_cycle_behind_type_checking_or_a_relative_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from pkg.sub.a import A\n")
    (package / "sub" / "a.py").write_text("from . import b\nA = 1\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..sub.a import A\n"
    )
    (package / "c.py").write_text("def late():\n    import pkg.d\n")
    (package / "d.py").write_text("from pkg import c\n")
    (package / "e.py").write_text("from pkg.sub import a\n")  # imports a, not back into e: no cycle
    assert cycles(import_graph(package)) == [["pkg.c", "pkg.d"], ["pkg.sub.a", "pkg.sub.b"]]


def test_no_module_is_over_500_lines() -> None:
    assert long_modules(PACKAGE) == {}


def test_a_long_module_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "long.py").write_text("x = 1\n" * 501)
    (package / "short.py").write_text("x = 1\n" * 500)
    assert long_modules(package) == {"pkg/long.py": 501}


IMPORT_EVERYTHING = """
import importlib, json, os, sys, warnings
import telegram, telegram.ext, telegram.warnings, tornado.web, yaml, aiosqlite, rapidfuzz, numpy  # third-party first
before = (dict(os.environ), list(warnings.filters))
imported, missing = [], {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:  # an optional dependency this environment lacks
        if error.name is None or error.name.split(".")[0] == "bot":
            raise
        missing[name] = error.name
    else:
        imported.append(name)
after = (dict(os.environ), list(warnings.filters))
changed = sorted(set(after[0].items()) ^ set(before[0].items()))
print(json.dumps({"environ": changed, "filters": before[1] == after[1], "imported": imported, "missing": missing}))
"""


def test_importing_every_module_leaves_the_environment_and_the_warning_filters_alone() -> None:
    names = sorted(module_names(PACKAGE))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}  # no PTB_TIMEDELTA, as a fresh process has
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING, *names],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=True,
    )
    found = json.loads(result.stdout)
    assert {"bot", "bot.__main__", "bot.adapters.telegram", "bot.adapters.telegram.outbound"} <= set(found["imported"])
    assert set(found["imported"]) | set(found["missing"]) == set(names)
    assert (found["environ"], found["filters"]) == ([], True)


def test_starting_the_bot_sets_what_importing_no_longer_does() -> None:
    script = (
        "import os, warnings\n"
        "from telegram.warnings import PTBUserWarning\n"
        "from bot.adapters.telegram.app import settle_process\n"
        "settle_process()\n"
        "warnings.warn(\"Please use 'Bot.sendMessage' instead\", PTBUserWarning, stacklevel=1)\n"
        "print(os.environ['PTB_TIMEDELTA'])\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, cwd=REPO, env=env, timeout=60
    )
    assert (result.returncode, result.stdout) == (0, "true\n"), result.stderr
