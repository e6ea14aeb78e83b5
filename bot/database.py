"""Which database ``UNHOOKED_DB`` names: a SQLite file (a path or ``sqlite:///path``), memory, or a PostgreSQL URL."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bot.errors import ConfigError

DEFAULT_PATH = Path("data/unhooked.sqlite3")
_POSTGRES = ("postgresql", "postgres")
_SHAPES = "a SQLite file path, sqlite:///path/to/file.sqlite3, or postgresql://user@host:5432/dbname"


@dataclass(frozen=True)
class Pool:
    """The PostgreSQL connection pool: its sizes and how long to wait (set in ``Settings.from_env``)."""

    min_size: int = 1
    max_size: int = 10
    timeout: float = 5.0
    """Seconds to wait for a connection, and for one statement."""


@dataclass(frozen=True)
class Database:
    """Where the store lives; ``url`` is set for PostgreSQL, ``path`` (or ``:memory:``) for SQLite."""

    path: Path = DEFAULT_PATH
    url: str | None = None
    pool: Pool = field(default_factory=Pool)

    @classmethod
    def parse(cls, text: str, pool: Pool | None = None) -> Database:
        """Read ``UNHOOKED_DB``; raise ``ConfigError`` with what to set."""
        text = text.strip()
        if not text:
            return cls(pool=pool or Pool())
        scheme = text.partition("://")[0].lower() if "://" in text else ""
        if scheme in _POSTGRES:
            parts = urlsplit(text)
            if not parts.hostname and not parts.path.strip("/"):
                raise ConfigError(f"UNHOOKED_DB names no server or database; set it to {_SHAPES}")
            return cls(url=text, pool=pool or Pool())
        if scheme == "sqlite":
            path = text[len("sqlite:///") :] if text.lower().startswith("sqlite:///") else ""
            if not path:
                raise ConfigError(f"UNHOOKED_DB has no file after sqlite:///; set it to {_SHAPES}")
            return cls(path=Path(path), pool=pool or Pool())
        if scheme:
            raise ConfigError(
                f"UNHOOKED_DB starts with {scheme}://, which is not a database Unhooked uses; set it to {_SHAPES}"
            )
        return cls(path=Path(text), pool=pool or Pool())

    @property
    def is_postgres(self) -> bool:
        """Whether this is a PostgreSQL server rather than a SQLite file."""
        return self.url is not None

    @property
    def in_memory(self) -> bool:
        """Whether nothing is kept (``:memory:``)."""
        return self.url is None and str(self.path) == ":memory:"

    @property
    def where(self) -> str:
        """The database for messages: the file, or the URL without its password."""
        if self.url is None:
            return str(self.path)
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        user = f"{parts.username}@" if parts.username else ""
        port = f":{parts.port}" if parts.port else ""
        return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, "", ""))
