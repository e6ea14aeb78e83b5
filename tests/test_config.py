"""Settings: read once from the environment, with a sentence that says what to set."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings, default_content_dir
from bot.errors import ConfigError
from tests.conftest import REPO


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


def test_the_secret_is_generated_once_and_kept_private(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNHOOKED_DB": str(tmp_path / "db" / "bot.sqlite3")})
    first = settings.secret_key()
    assert len(first) == 64
    assert settings.secret_key() == first
    assert (tmp_path / "db" / "secret.key").stat().st_mode & 0o777 == 0o600


def test_a_given_secret_is_used_as_is(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNHOOKED_SECRET": "s" * 20, "UNHOOKED_DB": str(tmp_path / "bot.sqlite3")})
    assert settings.secret_key() == b"s" * 20
    assert not (tmp_path / "secret.key").exists()


def test_an_unwritable_data_folder_says_what_to_set(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where a folder should be")
    settings = Settings.from_env({"UNHOOKED_DB": str(tmp_path / "blocked" / "bot.sqlite3")})
    with pytest.raises(ConfigError, match=r"blocked/secret\.key: Not a directory; set UNHOOKED_SECRET"):
        settings.secret_key()


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


def test_another_database_keeps_the_other_settings(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNHOOKED_RETENTION_DAYS": "7", "UNHOOKED_ESCALATION_EXCERPTS": "yes"})
    moved = settings.with_db(tmp_path / "x.sqlite3")
    assert (moved.db_path, moved.retention_days, moved.escalation_excerpts) == (tmp_path / "x.sqlite3", 7, True)


def test_an_in_memory_database_writes_no_secret_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"UNHOOKED_DB": ":memory:"})
    assert len(settings.secret_key()) == 64
    assert list(tmp_path.iterdir()) == []
