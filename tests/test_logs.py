"""One list of quieted libraries, used by every command and by the Telegram bot however it is started."""

from __future__ import annotations

import subprocess
import sys

from bot import __main__ as cli
from bot import logs
from bot.adapters.telegram import app
from tests.conftest import REPO


def python(script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter (logging set up once, as the command line does)."""
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=True
    )


def test_the_command_line_and_the_telegram_bot_quiet_libraries_through_one_function() -> None:
    assert cli.configure_logging is logs.configure_logging
    assert app.quiet_library_logs is logs.quiet_library_logs


def test_every_quieted_library_stays_at_warning_when_we_log_at_debug() -> None:
    script = (
        "import logging\n"
        "from bot.logs import QUIET_LOGGERS, configure_logging\n"
        "configure_logging('DEBUG')\n"
        "print(logging.getLogger().getEffectiveLevel())\n"
        "print(*(logging.getLogger(name).getEffectiveLevel() for name in QUIET_LOGGERS))\n"
        "logging.getLogger('tornado.access').info('200 POST /telegram okapi')\n"
    )
    result = python(script)
    root, levels = result.stdout.splitlines()
    assert int(root) == 10
    assert {"tornado.access", "telegram", "httpx", "aiosqlite"} <= set(logs.QUIET_LOGGERS)
    assert [int(level) for level in levels.split()] == [30] * len(logs.QUIET_LOGGERS)
    assert "okapi" not in result.stderr


def test_starting_the_bot_keeps_a_quieted_library_at_the_level_asked_for_when_it_is_above_warning() -> None:
    script = (
        "import logging\n"
        "from bot.logs import configure_logging\n"
        "from bot.adapters.telegram.app import quiet_library_logs\n"
        "configure_logging('ERROR')\n"
        "quiet_library_logs()  # what run_telegram does first\n"
        "logging.getLogger('httpx').warning('POST https://api.telegram.org/bot123:SECRET/getUpdates')\n"
        "logging.getLogger('telegram.ext').warning('update %s', 'okapi')\n"
    )
    result = python(script)
    assert result.stderr == ""
