"""One list of quieted libraries, used by every command and by the Telegram bot however it is started; and logs
as one JSON object per line (UNHOOKED_LOG_FORMAT=json), the escalation line included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot import __main__ as cli
from bot import logs
from bot.adapters.telegram import app
from tests.conftest import REPO
from tests.test_cli import run


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


def test_json_logs_are_one_object_per_line_and_the_escalation_is_one_of_them(tmp_path: Path) -> None:
    result = run(
        "chat",
        stdin="I want to kill myself tonight\n",
        env={"UNHOOKED_LOG_FORMAT": "json", "UNHOOKED_LOG_LEVEL": "INFO"},
        tmp=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # "[operator alert] ..." is the terminal's stand-in for the operators' chat, not a log line
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.strip() and not line.startswith("[")]
    escalations = [line for line in lines if line.get("event") == "escalation"]
    assert len(escalations) == 1
    line = escalations[0]
    assert line["logger"] == "unhooked.escalations" and line["severity"] == "WARNING"
    assert line["level"] == "imminent" and line["category"] and line["rule"] and len(line["user_key"]) == 32
    assert {"time", "id", "at"} <= line.keys() and "message" not in line
    assert "myself tonight" not in result.stderr


def test_text_logs_stay_the_default_and_a_wrong_format_is_explained(tmp_path: Path) -> None:
    text = run("chat", stdin="I want to kill myself tonight\n", tmp=tmp_path)
    assert ' WARNING unhooked.escalations: {"acked_at": null' in text.stderr
    wrong = run("chat", stdin="hi\n", env={"UNHOOKED_LOG_FORMAT": "yaml"}, tmp=tmp_path)
    assert wrong.returncode == 1
    assert "UNHOOKED_LOG_FORMAT must be text or json" in wrong.stderr
