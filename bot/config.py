"""Settings from environment variables, checked once at start with a sentence that says what to set."""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.errors import ConfigError

PACKAGE_DIR = Path(__file__).resolve().parent
MIN_SECRET_CHARS = 16
DEFAULT_RETENTION_DAYS = 30
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def default_content_dir() -> Path:
    """The shipped content: inside the installed wheel, or the checkout this package runs from."""
    bundled = PACKAGE_DIR / "_content"
    return bundled if bundled.is_dir() else PACKAGE_DIR.parent


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, e.g. {name}={default}; it is {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be greater than zero, e.g. {name}={default}; it is {value}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", *_FALSE):
        return False
    if raw in _TRUE:
        return True
    raise ConfigError(f"{name} must be on or off (also 1/0, true/false, yes/no), e.g. {name}=off; it is {raw!r}")


@dataclass(frozen=True)
class Settings:
    """Everything the core needs to run, whatever the adapter."""

    db_path: Path
    """The SQLite file (``UNHOOKED_DB``); its folder also holds the generated secret."""
    content_dir: Path
    """The folder holding ``intents/``, ``responses/`` and ``source/`` (``UNHOOKED_CONTENT_DIR``)."""
    secret: str | None = None
    """The key for hashing user ids (``UNHOOKED_SECRET``); generated into the data folder if unset."""
    retention_days: int = DEFAULT_RETENTION_DAYS
    """Days escalation details and idle sessions are kept before ``purge`` (``UNHOOKED_RETENTION_DAYS``)."""
    escalation_excerpts: bool = False
    """Whether escalation records keep a redacted excerpt of the message (``UNHOOKED_ESCALATION_EXCERPTS``)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read and check the settings; raise ``ConfigError`` with what to set."""
        env = os.environ if env is None else env
        db_path = Path(env.get("UNHOOKED_DB", "").strip() or "data/unhooked.sqlite3")
        content_dir = Path(env.get("UNHOOKED_CONTENT_DIR", "").strip() or default_content_dir())
        if not content_dir.is_dir():
            raise ConfigError(
                f"UNHOOKED_CONTENT_DIR points to {str(content_dir)!r}, which is not a folder; "
                "set it to the folder that holds intents/ and responses/, or unset it to use the shipped content"
            )
        secret = env.get("UNHOOKED_SECRET", "").strip() or None
        if secret is not None and len(secret) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"UNHOOKED_SECRET is {len(secret)} characters long; set it to at least {MIN_SECRET_CHARS} random "
                "characters (e.g. the output of `python -c 'import secrets; print(secrets.token_hex(32))'`), "
                "or unset it to have one generated in the data folder"
            )
        return cls(
            db_path=db_path,
            content_dir=content_dir,
            secret=secret,
            retention_days=_positive_int(env, "UNHOOKED_RETENTION_DAYS", DEFAULT_RETENTION_DAYS),
            escalation_excerpts=_flag(env, "UNHOOKED_ESCALATION_EXCERPTS"),
        )

    @property
    def spool_path(self) -> Path | None:
        """Where escalations go when the database does not take them; none for an in-memory database."""
        if str(self.db_path) == ":memory:":
            return None
        return self.db_path.parent / "escalations.spool.jsonl"

    def with_db(self, db_path: Path | None) -> Settings:
        """The same settings with another database file (a ``--db`` option)."""
        if db_path is None:
            return self
        return dataclasses.replace(self, db_path=db_path)

    def secret_key(self) -> bytes:
        """The hashing key: ``UNHOOKED_SECRET``, or a key kept in ``secret.key`` beside the database."""
        if self.secret is not None:
            return self.secret.encode()
        if str(self.db_path) == ":memory:":
            return secrets.token_hex(32).encode()  # nothing is stored, so nothing needs the same key later
        path = self.db_path.parent / "secret.key"
        try:
            return path.read_bytes().strip()
        except FileNotFoundError:
            pass
        except OSError as error:
            raise ConfigError(
                f"cannot read {path}: {error.strerror}; set UNHOOKED_SECRET or fix the file's permissions"
            ) from None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_bytes().strip()
        except OSError as error:
            raise ConfigError(
                f"cannot create {path}: {error.strerror}; set UNHOOKED_SECRET or UNHOOKED_DB to a writable place"
            ) from None
        key = secrets.token_hex(32).encode()
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(key + b"\n")
        return key
