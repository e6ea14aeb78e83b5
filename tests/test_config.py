"""Settings: read once from the environment, with a sentence that says what to set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import Settings, TelegramSettings, default_content_dir
from bot.errors import ConfigError
from tests.conftest import REPO, mode


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert settings.db_path == Path("data/unhooked.sqlite3")
    assert settings.content_dir == default_content_dir() == REPO
    assert settings.secret is None


def test_a_missing_content_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"UNHOOKED_CONTENT_DIR points to .* which is not a folder"):
        Settings.from_env({"UNHOOKED_CONTENT_DIR": str(tmp_path / "nope")})


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        Settings.from_env({"UNHOOKED_SECRET": "tooshort"})


def test_the_secret_is_generated_once_and_kept_private(tmp_path: Path, umask_022: None) -> None:
    settings = Settings.from_env({"UNHOOKED_DB": str(tmp_path / "data" / "db" / "bot.sqlite3")})
    first = settings.secret_key()
    assert len(first) == 64
    assert settings.secret_key() == first
    assert mode(tmp_path / "data" / "db" / "secret.key") == 0o600
    assert mode(tmp_path / "data" / "db") == mode(tmp_path / "data") == 0o700  # the folders it made, too


def test_a_secret_key_readable_by_others_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "secret.key").write_text("k" * 64)
    (tmp_path / "secret.key").chmod(0o644)  # as an earlier version may have left it
    settings = Settings.from_env({"UNHOOKED_DB": str(tmp_path / "bot.sqlite3")})
    assert settings.secret_key() == b"k" * 64
    assert mode(tmp_path / "secret.key") == 0o600


def test_a_given_secret_is_used_as_is(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNHOOKED_SECRET": "s" * 20, "UNHOOKED_DB": str(tmp_path / "bot.sqlite3")})
    assert settings.secret_key() == b"s" * 20
    assert not (tmp_path / "secret.key").exists()


def test_an_unwritable_data_folder_says_what_to_set(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where a folder should be")
    settings = Settings.from_env({"UNHOOKED_DB": str(tmp_path / "blocked" / "bot.sqlite3")})
    with pytest.raises(ConfigError, match=r"blocked/secret\.key: Not a directory; set UNHOOKED_SECRET"):
        settings.secret_key()


def test_the_reload_interval_is_read_and_checked() -> None:
    assert Settings.from_env({}).reload_seconds == 3.0
    assert Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "0"}).reload_seconds == 0
    assert Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "1.5"}).reload_seconds == 1.5
    with pytest.raises(ConfigError, match=r"UNHOOKED_RELOAD_SECONDS must be a number of seconds, e\.g\. .*=3"):
        Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "often"})
    with pytest.raises(ConfigError, match=r"UNHOOKED_RELOAD_SECONDS must be 0 \(off\) or more"):
        Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "-1"})


TOKEN_ENV = {"TELEGRAM_BOT_TOKEN": "123456789:AAE-abc_DEF"}


def test_telegram_settings_read_every_variable() -> None:
    settings = TelegramSettings.from_env(
        {
            **TOKEN_ENV,
            "TELEGRAM_API_BASE_URL": "http://127.0.0.1:8081",
            "UNHOOKED_OPERATOR_CHAT_ID": "-1001234",
            "UNHOOKED_ADMIN_IDS": "11, 22,33",
            "UNHOOKED_PROTECT_CONTENT": "no",
            "UNHOOKED_WEBHOOK_URL": "https://bot.example.org/hook/tg",
            "UNHOOKED_WEBHOOK_SECRET": "x" * 20,
            "UNHOOKED_HTTP_PORT": "9000",
            "UNHOOKED_HTTP_LISTEN": "10.0.0.5",
            "UNHOOKED_POLL_TIMEOUT": "2.5",
            "UNHOOKED_SENDS_PER_SECOND": "10",
            "UNHOOKED_MAX_CONCURRENT_CHATS": "4",
        }
    )
    assert settings.api_base_url == "http://127.0.0.1:8081/bot"
    assert settings.operator_chat_id == -1001234 and settings.admin_ids == {11, 22, 33}
    assert settings.protect_content is False and settings.http_port == 9000 and settings.http_listen == "10.0.0.5"
    assert settings.server_port(webhook=False) == settings.server_port(webhook=True) == 9000
    assert settings.poll_timeout == 2.5 and settings.sends_per_second == 10.0 and settings.max_concurrent_chats == 4
    assert settings.webhook_path == "/hook/tg"
    settings.check_webhook()


def test_telegram_defaults_and_the_token_stays_out_of_the_repr() -> None:
    settings = TelegramSettings.from_env(TOKEN_ENV)
    assert (settings.api_base_url, settings.operator_chat_id, settings.admin_ids) == (None, None, frozenset())
    assert settings.protect_content is True and settings.poll_timeout == 30.0
    assert "AAE-abc_DEF" not in repr(settings)
    assert (settings.http_listen, settings.server_port(webhook=False), settings.server_port(webhook=True)) == (
        "127.0.0.1",
        None,
        8080,
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("http", "UNHOOKED_HTTP_PORT must be a whole number, e.g. UNHOOKED_HTTP_PORT=8080"),
        ("0", "UNHOOKED_HTTP_PORT must be greater than zero"),
        ("70000", "UNHOOKED_HTTP_PORT must be a port number from 1 to 65535"),
    ],
)
def test_a_bad_http_port_says_what_to_set(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        TelegramSettings.from_env({**TOKEN_ENV, "UNHOOKED_HTTP_PORT": raw})


def test_the_webhook_cannot_take_the_health_or_metrics_path() -> None:
    settings = TelegramSettings.from_env(
        {**TOKEN_ENV, "UNHOOKED_WEBHOOK_URL": "https://x.org/healthz", "UNHOOKED_WEBHOOK_SECRET": "x" * 20}
    )
    with pytest.raises(ConfigError, match="where the bot serves its health and metrics"):
        settings.check_webhook()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "TELEGRAM_BOT_TOKEN is not set; set it to the token @BotFather gave you"),
        ({"TELEGRAM_BOT_TOKEN": "'123:abc'"}, "TELEGRAM_BOT_TOKEN does not look like a bot token"),
        ({**TOKEN_ENV, "TELEGRAM_API_BASE_URL": "127.0.0.1:8081"}, "TELEGRAM_API_BASE_URL must start with http://"),
        ({**TOKEN_ENV, "UNHOOKED_OPERATOR_CHAT_ID": "@ops"}, "UNHOOKED_OPERATOR_CHAT_ID must be a numeric Telegram id"),
        ({**TOKEN_ENV, "UNHOOKED_PROTECT_CONTENT": "maybe"}, "UNHOOKED_PROTECT_CONTENT must be on or off"),
        (
            {**TOKEN_ENV, "UNHOOKED_POLL_TIMEOUT": "soon"},
            "UNHOOKED_POLL_TIMEOUT must be a number, e.g. UNHOOKED_POLL_TIMEOUT=30",
        ),
        ({**TOKEN_ENV, "UNHOOKED_SENDS_PER_SECOND": "0"}, "UNHOOKED_SENDS_PER_SECOND must be greater than zero"),
    ],
)
def test_a_bad_telegram_setting_says_what_to_set(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        TelegramSettings.from_env(env)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "webhook mode needs UNHOOKED_WEBHOOK_URL"),
        ({"UNHOOKED_WEBHOOK_URL": "bot.example.org"}, "UNHOOKED_WEBHOOK_URL must be a full address"),
        ({"UNHOOKED_WEBHOOK_URL": "https://x.org/t"}, "webhook mode needs UNHOOKED_WEBHOOK_SECRET"),
        (
            {"UNHOOKED_WEBHOOK_URL": "https://x.org/t", "UNHOOKED_WEBHOOK_SECRET": "a b"},
            "needs UNHOOKED_WEBHOOK_SECRET",
        ),
        ({"UNHOOKED_WEBHOOK_URL": "https://x.org/t", "UNHOOKED_WEBHOOK_SECRET": "short"}, "is 5 characters long"),
    ],
)
def test_webhook_mode_needs_an_address_and_a_secret(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        TelegramSettings.from_env({**TOKEN_ENV, **env}).check_webhook()


def test_every_setting_is_in_env_example_and_the_readme() -> None:
    read = set()
    for path in (REPO / "bot").rglob("*.py"):
        read |= set(re.findall(r"\b(?:UNHOOKED|TELEGRAM)_[A-Z_]+\b", path.read_text()))
    example = (REPO / ".env.example").read_text()
    readme = (REPO / "README.md").read_text()
    assert sorted(name for name in read if f"\n{name}=" not in example) == []
    assert sorted(name for name in read if f"`{name}`" not in readme) == []


def test_retention_and_excerpts_have_safe_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.retention_days == 30 and settings.escalation_excerpts is False


def test_retention_and_excerpts_are_read_and_checked() -> None:
    settings = Settings.from_env({"UNHOOKED_RETENTION_DAYS": "7", "UNHOOKED_ESCALATION_EXCERPTS": "on"})
    assert (settings.retention_days, settings.escalation_excerpts) == (7, True)
    assert Settings.from_env({"UNHOOKED_ESCALATION_EXCERPTS": "0"}).escalation_excerpts is False
    with pytest.raises(ConfigError, match="UNHOOKED_RETENTION_DAYS must be greater than zero"):
        Settings.from_env({"UNHOOKED_RETENTION_DAYS": "0"})
    with pytest.raises(ConfigError, match="UNHOOKED_ESCALATION_EXCERPTS must be on or off"):
        Settings.from_env({"UNHOOKED_ESCALATION_EXCERPTS": "maybe"})


def test_reminders_of_unacknowledged_escalations_are_read_and_checked() -> None:
    assert (Settings.from_env({}).realert_minutes, Settings.from_env({}).realert_times) == (15, 3)
    settings = Settings.from_env({"UNHOOKED_REALERT_MINUTES": "0", "UNHOOKED_REALERT_TIMES": "5"})
    assert (settings.realert_minutes, settings.realert_times) == (0, 5)
    with pytest.raises(ConfigError, match="UNHOOKED_REALERT_MINUTES must be a whole number of minutes"):
        Settings.from_env({"UNHOOKED_REALERT_MINUTES": "soon"})
    with pytest.raises(ConfigError, match="UNHOOKED_REALERT_TIMES must be greater than zero"):
        Settings.from_env({"UNHOOKED_REALERT_TIMES": "0"})


def test_another_database_keeps_the_other_settings(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNHOOKED_RETENTION_DAYS": "7", "UNHOOKED_ESCALATION_EXCERPTS": "yes"})
    moved = settings.with_db(tmp_path / "x.sqlite3")
    assert (moved.db_path, moved.retention_days, moved.escalation_excerpts) == (tmp_path / "x.sqlite3", 7, True)


def test_an_in_memory_database_writes_no_secret_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"UNHOOKED_DB": ":memory:"})
    assert len(settings.secret_key()) == 64
    assert list(tmp_path.iterdir()) == []
