"""The wheel as a container installs it: built from this checkout, installed with its dependencies into a fresh
virtual environment in a temporary folder, and run from there with no checkout in sight.

This is the slowest test of the suite (marked ``wheel``; ``pytest -m "not wheel"`` leaves it out while you
iterate). It installs the dependencies from the package registry through pip's cache, so after the first run
it takes seconds. A failure prints pip's or the bot's whole output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.wheel

CONTENT_FOLDERS = ("intents", "responses", "source", "tests/conversations")


def sh(*command: str | Path, cwd: Path, stdin: str = "", env: dict[str, str] | None = None) -> str:
    """Run a command; on failure, fail the test with the command and everything it printed."""
    result = subprocess.run(
        [str(part) for part in command],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(
            f"`{' '.join(map(str, command))}` exited {result.returncode}\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}",
            pytrace=False,
        )
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the python of a fresh virtual environment that has it installed)."""
    folder = tmp_path_factory.mktemp("wheel")
    dist = folder / "dist"
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", dist, REPO, cwd=folder)
    wheels = list(dist.glob("unhooked-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {dist}, found {wheels}"
    venv = folder / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=folder)
    python = venv / "bin" / "python"
    # The pip of this environment installs into the new one, reusing pip's cache for the dependencies.
    sh(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", wheels[0], cwd=folder)
    return wheels[0], python


def in_venv(python: Path, *args: str | Path, tmp: Path, stdin: str = "") -> str:
    """Run the venv's python with ``args`` from an empty folder, no checkout on the path, no bot settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNHOOKED_", "PYTHON"))}
    return sh(python, *args, cwd=tmp, stdin=stdin, env={**env, "UNHOOKED_DB": str(tmp / "data" / "unhooked.sqlite3")})


def test_the_wheel_holds_every_content_file(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = [
        path.relative_to(REPO).as_posix()
        for folder in CONTENT_FOLDERS
        for path in (REPO / folder).rglob("*")
        if path.is_file()
    ]
    assert shipped, "no content files found in the checkout"
    missing = [name for name in shipped if f"bot/_content/{name}" not in names]
    assert missing == [], f"content files left out of the wheel: {missing}"


def test_the_installed_bot_runs_from_its_own_files(installed: tuple[Path, Path], tmp_path: Path) -> None:
    _, python = installed
    script = "import bot, bot.config; print(bot.__file__); print(bot.config.default_content_dir())"
    where = in_venv(python, "-c", script, tmp=tmp_path).splitlines()
    site = python.parent.parent.resolve()
    assert all(Path(line).resolve().is_relative_to(site) for line in where), f"not run from the venv: {where}"
    assert where[1].endswith("_content")


def test_check_passes_on_the_shipped_content(installed: tuple[Path, Path], tmp_path: Path) -> None:
    _, python = installed
    out = in_venv(python, "-m", "bot", "check", tmp=tmp_path)
    assert " 0 errors" in out, out


def test_a_scripted_chat_answers_and_catches_the_crisis(installed: tuple[Path, Path], tmp_path: Path) -> None:
    _, python = installed
    out = in_venv(python, "-m", "bot", "chat", tmp=tmp_path, stdin="hi\nwhy do I miss him\nI want to die\n")
    greeting = out.find("I'm Unhooked")
    passage = out.find("It was telling me my brain was hooked.")
    crisis = out.find("call or text 988")
    assert -1 < greeting < passage < crisis, out
    assert (tmp_path / "data" / "unhooked.sqlite3").is_file()


def test_the_console_script_is_installed(installed: tuple[Path, Path], tmp_path: Path) -> None:
    _, python = installed
    out = in_venv(
        python, "-c", "import sys; from bot.__main__ import main; sys.exit(main(['--version']))", tmp=tmp_path
    )
    assert out.startswith("unhooked ")
    out = sh(python.parent / "unhooked", "--version", cwd=tmp_path)
    assert out.startswith("unhooked ")


def test_eval_runs_from_the_installed_wheel_on_its_own_test_sentences(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    out = in_venv(python, "-m", "bot", "eval", tmp=tmp_path)
    assert "accuracy" in out.lower(), out


def test_the_documentation_the_unit_names_is_installed(installed: tuple[Path, Path]) -> None:
    _, python = installed
    prefix = python.parent.parent
    unit = (REPO / "deploy" / "unhooked.service").read_text()
    named = [word for line in unit.splitlines() if line.startswith("Documentation=") for word in line[14:].split()]
    assert named, "the unit has no Documentation="
    for uri in named:
        path = Path(uri.removeprefix("file://").replace("/opt/unhooked", str(prefix), 1))
        assert path.is_file(), f"{uri} is not installed with the wheel"
