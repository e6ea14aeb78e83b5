"""Bot processes the tests start: each is kept here, and whatever a test leaves running is killed at its end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

STARTED: list[asyncio.subprocess.Process] = []
"""Every bot process started by the current test (``tests.test_telegram_process.start``)."""


def kill_left_running() -> list[int]:
    """Kill the processes the test started that are still running (a failed test stops halfway); their pids."""
    killed = []
    for process in STARTED:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
                killed.append(process.pid)
    STARTED.clear()
    return killed


def ctrl_c_works() -> None:
    """``preexec_fn`` for a process a test stops with Ctrl-C: SIGINT's default action, whatever the suite inherited.

    A suite a script starts in the background (``make test &``) inherits SIGINT ignored, and so would each process
    it starts; the operator's terminal these tests stand for never ignores it.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
