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


def test_an_in_memory_database_writes_no_secret_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(Settings.from_env({"UNHOOKED_DB": ":memory:"}).secret_key()) == 64
    assert list(tmp_path.iterdir()) == []


def test_the_reload_interval_is_read_and_checked() -> None:
    assert Settings.from_env({}).reload_seconds == 3.0
    assert Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "0"}).reload_seconds == 0
    assert Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "1.5"}).reload_seconds == 1.5
    with pytest.raises(ConfigError, match=r"UNHOOKED_RELOAD_SECONDS must be a number of seconds, e\.g\. .*=3"):
        Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "often"})
    with pytest.raises(ConfigError, match=r"UNHOOKED_RELOAD_SECONDS must be 0 \(off\) or a number of seconds"):
        Settings.from_env({"UNHOOKED_RELOAD_SECONDS": "-1"})
