"""Secrets from files: TELEGRAM_BOT_TOKEN_FILE and friends (Docker secrets), and systemd credentials."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings, TelegramSettings
from bot.errors import ConfigError

TOKEN = "123456789:AAE-abc_DEF"  # noqa: S105 - a made-up token


def test_the_token_and_the_secrets_come_from_files(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "secret").write_text("s" * 32 + "\n")
    (tmp_path / "hook").write_text("w" * 20)
    telegram = TelegramSettings.from_env(
        {"TELEGRAM_BOT_TOKEN_FILE": str(tmp_path / "token"), "UNHOOKED_WEBHOOK_SECRET_FILE": str(tmp_path / "hook")}
    )
    assert (telegram.token, telegram.webhook_secret) == (TOKEN, "w" * 20)
    assert Settings.from_env({"UNHOOKED_SECRET_FILE": str(tmp_path / "secret")}).secret == "s" * 32


def test_systemd_credentials_are_read_when_no_variable_is_set(tmp_path: Path) -> None:
    (tmp_path / "telegram_bot_token").write_text(TOKEN)
    (tmp_path / "unhooked_secret").write_text("c" * 20)
    env = {"CREDENTIALS_DIRECTORY": str(tmp_path)}
    assert TelegramSettings.from_env(env).token == TOKEN
    assert Settings.from_env(env).secret == "c" * 20
    assert TelegramSettings.from_env({**env, "TELEGRAM_BOT_TOKEN": "1:other"}).token == "1:other"  # noqa: S105


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_BOT_TOKEN_FILE": "/x"}, "both TELEGRAM_BOT_TOKEN and"),
        ({"TELEGRAM_BOT_TOKEN_FILE": "/nonexistent/token"}, r"TELEGRAM_BOT_TOKEN_FILE names /nonexistent/token, which"),
        ({"TELEGRAM_BOT_TOKEN_FILE": "EMPTY"}, r"\(TELEGRAM_BOT_TOKEN_FILE\) is empty"),
    ],
)
def test_a_bad_secret_file_says_what_to_fix(tmp_path: Path, env: dict[str, str], message: str) -> None:
    (tmp_path / "empty").write_text("\n")
    env = {key: str(tmp_path / "empty") if value == "EMPTY" else value for key, value in env.items()}
    with pytest.raises(ConfigError, match=message):
        TelegramSettings.from_env(env)
