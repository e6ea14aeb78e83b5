"""UNHOOKED_DB as a URL: a path or sqlite:///path (SQLite), :memory:, or postgresql://; the pool settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings
from bot.database import Database, Pool
from bot.errors import ConfigError
from bot.store.backends import open_store
from bot.store.memory import MemoryStore
from bot.store.postgres import PostgresStore
from bot.store.sqlite import SqliteStore

PG = "postgresql://bot:hunter2@db.internal:6432/unhooked"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("", Path("data/unhooked.sqlite3")),
        ("/data/unhooked.sqlite3", Path("/data/unhooked.sqlite3")),
        ("sqlite:///data/bot.sqlite3", Path("data/bot.sqlite3")),
        ("sqlite:////srv/bot.sqlite3", Path("/srv/bot.sqlite3")),
        (":memory:", Path(":memory:")),
    ],
)
def test_a_path_or_a_sqlite_url_names_a_sqlite_file(text: str, path: Path) -> None:
    database = Database.parse(text)
    assert (database.path, database.url, database.is_postgres) == (path, None, False)


def test_a_postgresql_url_names_the_server_and_is_shown_without_its_password() -> None:
    database = Database.parse(PG)
    assert database.is_postgres and database.url == PG
    assert database.where == "postgresql://bot@db.internal:6432/unhooked"
    assert "hunter2" not in repr(Settings.from_env({"UNHOOKED_DB": PG, "UNHOOKED_SECRET": "s" * 32}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mysql://root@db/bot", "starts with mysql://, which is not a database Unhooked uses; set it to"),
        ("sqlite://", "has no file after sqlite:///"),
        ("postgresql://", "names no server or database"),
    ],
)
def test_a_wrong_database_setting_says_what_to_set(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        Settings.from_env({"UNHOOKED_DB": text})
    assert "postgresql://user@host:5432/dbname" in str(raised.value)


def test_replicas_on_postgresql_need_one_shared_secret() -> None:
    with pytest.raises(ConfigError, match="every replica must hash ids with the same key: set UNHOOKED_SECRET"):
        Settings.from_env({"UNHOOKED_DB": PG})


def test_the_pool_is_set_from_the_environment_and_checked() -> None:
    env = {"UNHOOKED_DB": PG, "UNHOOKED_SECRET": "s" * 32}
    assert Settings.from_env(env).pool == Pool()
    sized = Settings.from_env(
        {**env, "UNHOOKED_DB_POOL_MIN": "2", "UNHOOKED_DB_POOL_MAX": "20", "UNHOOKED_DB_TIMEOUT": "1.5"}
    )
    assert sized.database.pool == Pool(2, 20, 1.5)
    with pytest.raises(ConfigError, match=r"UNHOOKED_DB_POOL_MIN .* is above UNHOOKED_DB_POOL_MAX"):
        Settings.from_env({**env, "UNHOOKED_DB_POOL_MIN": "30"})
    with pytest.raises(ConfigError, match="UNHOOKED_DB_TIMEOUT must be a number"):
        Settings.from_env({**env, "UNHOOKED_DB_TIMEOUT": "soon"})


def test_the_setting_chooses_the_backend(tmp_path: Path) -> None:
    assert isinstance(open_store(Database.parse(":memory:")), MemoryStore)
    assert isinstance(open_store(Database.parse(f"sqlite:///{tmp_path}/x.sqlite3")), SqliteStore)
    assert isinstance(open_store(Database.parse(PG)), PostgresStore)
    assert Settings.from_env({}).with_db(PG).database.url == PG
