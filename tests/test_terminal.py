"""The terminal adapter: interactive chat in a real pseudo-terminal, and rendering."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.adapters.terminal import FAREWELL, PROMPT, WELCOME, render
from bot.models import Reply, Suggestion
from tests.conftest import REPO
from tests.processes import ctrl_c_works


class Terminal:
    """``python -m bot chat`` on a pseudo-terminal, as a person would run it."""

    def __init__(self, tmp_path: Path) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "UNHOOKED_DB": str(tmp_path / "bot.sqlite3"), "COLUMNS": "100"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", "chat"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=REPO,
            env=env,
            preexec_fn=ctrl_c_works,
        )
        os.close(slave)
        self.seen = ""

    def read_until(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"never saw {text!r}; the terminal shows:\n{self.seen}")
            if select.select([self.master], [], [], remaining)[0]:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break
        return self.seen

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        try:
            return self.process.wait(timeout=20)
        finally:
            os.close(self.master)


@pytest.fixture
def terminal(tmp_path: Path):
    made = Terminal(tmp_path)
    yield made
    if made.process.poll() is None:
        made.process.kill()
        made.close()


def test_an_interactive_chat_ends_cleanly_on_ctrl_d(terminal: Terminal) -> None:
    terminal.read_until(WELCOME)
    terminal.read_until(PROMPT)
    terminal.type("what is a trauma bond\n")
    terminal.read_until("neurochemical attachment")
    terminal.read_until(PROMPT)
    terminal.type("\x04")
    terminal.read_until(FAREWELL)
    assert terminal.close() == 0


def test_an_interactive_chat_ends_cleanly_on_ctrl_c(terminal: Terminal) -> None:
    terminal.read_until(PROMPT)
    terminal.process.send_signal(signal.SIGINT)
    assert terminal.close() == 0
    assert "Traceback" not in terminal.seen


def test_render_shows_source_and_numbered_topics() -> None:
    reply = Reply("Some text.", source="From the article", suggestions=(Suggestion("a", "Topic A"),))
    assert render(reply, None) == "Some text.\n  — From the article\n  [1] Topic A   (type a number to choose)"


def test_render_wraps_to_the_terminal() -> None:
    lines = render(Reply("word " * 40), 30).splitlines()
    assert len(lines) > 1 and all(len(line) <= 30 for line in lines)
