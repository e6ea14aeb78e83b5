"""Settings from environment variables, checked once at start with a sentence that says what to set."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from bot import private
from bot.database import Database, Pool
from bot.errors import ConfigError

PACKAGE_DIR = Path(__file__).resolve().parent
MIN_SECRET_CHARS = 16
Number = TypeVar("Number", int, float)
DEFAULT_RETENTION_DAYS = 30
DEFAULT_REALERT_MINUTES = 15
DEFAULT_REALERT_TIMES = 3
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def default_content_dir() -> Path:
    """The shipped content: inside the installed wheel, or the checkout this package runs from."""
    bundled = PACKAGE_DIR / "_content"
    return bundled if bundled.is_dir() else PACKAGE_DIR.parent


def _number(
    env: Mapping[str, str], name: str, default: Number, parse: Callable[[str], Number], kind: str, zero: str = ""
) -> Number:
    """A number setting; ``zero`` names what 0 means when 0 is allowed (e.g. "off")."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {kind}, e.g. {name}={default:g}; it is {raw!r}") from None
    if not (value >= 0 if zero else value > 0) or value == float("inf"):
        allowed = f"0 ({zero}) or more" if zero else "greater than zero"
        raise ConfigError(f"{name} must be {allowed}, e.g. {name}={default:g}; it is {raw}")
    return value


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    return _number(env, name, default, int, "a whole number")


def _positive_float(env: Mapping[str, str], name: str, default: float) -> float:
    return _number(env, name, default, float, "a number")


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    return _number(env, name, default, float, "a number of seconds", zero="off")


SECRET_FILES = ("TELEGRAM_BOT_TOKEN_FILE", "UNHOOKED_SECRET_FILE", "UNHOOKED_WEBHOOK_SECRET_FILE")
"""Files a secret setting may be read from instead (Docker secrets: ``/run/secrets/...``)."""


def secret_setting(env: Mapping[str, str], name: str) -> str | None:
    """A secret: ``name``, or the file ``name``_FILE names, or systemd's credential ``name.lower()``.

    The credential (``LoadCredential=telegram_bot_token:...`` puts it in ``$CREDENTIALS_DIRECTORY``) is read
    only when neither variable is set; setting both variables is refused, since it is unclear which is meant.
    """
    value = env.get(name, "").strip()
    file_name = f"{name}_FILE"
    raw_path = env.get(file_name, "").strip()
    if value and raw_path:
        raise ConfigError(f"both {name} and {file_name} are set; keep one of them (the file is the safer place)")
    credentials = env.get("CREDENTIALS_DIRECTORY", "").strip()
    if not value and not raw_path and credentials and (Path(credentials) / name.lower()).is_file():
        raw_path, file_name = str(Path(credentials) / name.lower()), f"the systemd credential {name.lower()}"
    if not raw_path:
        return value or None
    try:
        value = Path(raw_path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ConfigError(
            f"{file_name} names {raw_path}, which cannot be read ({reason}); "
            "check the path and that the bot's user may read it"
        ) from None
    if not value:
        raise ConfigError(f"{raw_path} ({file_name}) is empty; put the {name} value in it")
    return value


def _model_folder(env: Mapping[str, str], name: str, off: str, unset: str) -> str | None:
    """A model setting: unset (``None``), ``off``, or a folder that exists."""
    value = env.get(name, "").strip() or None
    if value not in (None, "off") and not Path(value).is_dir():
        raise ConfigError(
            f"{name} is {value!r}, which is not a folder; set it to a folder holding crisis.onnx, tokenizer.json"
            f" and card.json, to `off` to {off}, or unset it to use {unset}"
        )
    return value


@dataclass(frozen=True)
class Settings:
    """Everything the core needs to run, whatever the adapter."""

    db_path: Path
    """The SQLite file (``UNHOOKED_DB``); its folder also holds the generated secret and the spool, also when
    ``db_url`` names a PostgreSQL server (then ``data/`` by default)."""
    content_dir: Path
    """The folder holding ``intents/``, ``responses/`` and ``source/`` (``UNHOOKED_CONTENT_DIR``)."""
    secret: str | None = None
    """The key for hashing user ids (``UNHOOKED_SECRET``); generated into the data folder if unset."""
    reload_seconds: float = 3.0
    """How often a running bot looks for edited content files (``UNHOOKED_RELOAD_SECONDS``); 0 turns it off."""
    retention_days: int = DEFAULT_RETENTION_DAYS
    """Days escalation details and idle sessions are kept before ``purge`` (``UNHOOKED_RETENTION_DAYS``)."""
    realert_minutes: float = DEFAULT_REALERT_MINUTES
    """Minutes an imminent escalation waits unacknowledged before the operators' chat is reminded, and between
    reminders (``UNHOOKED_REALERT_MINUTES``); 0 sends no reminders."""
    realert_times: int = DEFAULT_REALERT_TIMES
    """At most this many reminders per escalation (``UNHOOKED_REALERT_TIMES``)."""
    escalation_excerpts: bool = False
    """Whether escalation records keep a redacted excerpt of the message (``UNHOOKED_ESCALATION_EXCERPTS``)."""
    meaning_model: str | None = None
    """Meaning-based matching (``UNHOOKED_MEANING_MODEL``): unset for the shipped model, ``off``, or a folder."""
    db_url: str | None = field(default=None, repr=False)
    """A PostgreSQL server (``UNHOOKED_DB=postgresql://...``) instead of the SQLite file; may hold a password."""
    pool: Pool = field(default_factory=Pool)
    """The PostgreSQL connection pool (``UNHOOKED_DB_POOL_MIN``, ``UNHOOKED_DB_POOL_MAX``, ``UNHOOKED_DB_TIMEOUT``)."""
    crisis_model: str | None = None
    """The learned crisis screen (``UNHOOKED_CRISIS_MODEL``): unset for the shipped model, ``off``, or a folder."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read and check the settings; raise ``ConfigError`` with what to set."""
        env = os.environ if env is None else env
        pool = Pool(
            min_size=_positive_int(env, "UNHOOKED_DB_POOL_MIN", Pool.min_size),
            max_size=_positive_int(env, "UNHOOKED_DB_POOL_MAX", Pool.max_size),
            timeout=_positive_float(env, "UNHOOKED_DB_TIMEOUT", Pool.timeout),
        )
        if pool.min_size > pool.max_size:
            raise ConfigError(
                f"UNHOOKED_DB_POOL_MIN ({pool.min_size}) is above UNHOOKED_DB_POOL_MAX ({pool.max_size}); "
                "set the minimum at or below the maximum"
            )
        database = Database.parse(env.get("UNHOOKED_DB", ""), pool)
        content_dir = Path(env.get("UNHOOKED_CONTENT_DIR", "").strip() or default_content_dir())
        if not content_dir.is_dir():
            raise ConfigError(
                f"UNHOOKED_CONTENT_DIR points to {str(content_dir)!r}, which is not a folder; "
                "set it to the folder that holds intents/ and responses/, or unset it to use the shipped content"
            )
        secret = secret_setting(env, "UNHOOKED_SECRET")
        if secret is not None and len(secret) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"UNHOOKED_SECRET is {len(secret)} characters long; set it to at least {MIN_SECRET_CHARS} random "
                "characters (e.g. the output of `python -c 'import secrets; print(secrets.token_hex(32))'`), "
                "or unset it to have one generated in the data folder"
            )
        if database.is_postgres and secret is None:
            raise ConfigError(
                "UNHOOKED_DB names a PostgreSQL server, so every replica must hash ids with the same key: set "
                "UNHOOKED_SECRET (at least 16 random characters) to the same value for each of them"
            )
        crisis_model = _model_folder(env, "UNHOOKED_CRISIS_MODEL", "screen with the lexicon alone", "the shipped model")
        meaning_model = _model_folder(env, "UNHOOKED_MEANING_MODEL", "match by rapidfuzz alone", "the screen's model")
        return cls(
            db_path=database.path,
            db_url=database.url,
            pool=pool,
            content_dir=content_dir,
            secret=secret,
            meaning_model=meaning_model,
            reload_seconds=_seconds(env, "UNHOOKED_RELOAD_SECONDS", cls.reload_seconds),
            retention_days=_positive_int(env, "UNHOOKED_RETENTION_DAYS", DEFAULT_RETENTION_DAYS),
            realert_minutes=_number(
                env, "UNHOOKED_REALERT_MINUTES", DEFAULT_REALERT_MINUTES, int, "a whole number of minutes", zero="off"
            ),
            realert_times=_positive_int(env, "UNHOOKED_REALERT_TIMES", DEFAULT_REALERT_TIMES),
            escalation_excerpts=_flag(env, "UNHOOKED_ESCALATION_EXCERPTS"),
            crisis_model=crisis_model,
        )

    @property
    def database(self) -> Database:
        """The database the store opens: the PostgreSQL server if one is set, else the SQLite file."""
        return Database(self.db_path, self.db_url, self.pool)

    @property
    def spool_path(self) -> Path | None:
        """Where escalations go when the database does not take them; none for an in-memory database."""
        if str(self.db_path) == ":memory:":
            return None
        return self.db_path.parent / "escalations.spool.jsonl"

    @property
    def meaning_folder(self) -> str | None:
        """The model that matches by meaning: ``UNHOOKED_MEANING_MODEL``, else the crisis screen's (one for both)."""
        if self.meaning_model is not None:
            return self.meaning_model
        return None if self.crisis_model == "off" else self.crisis_model

    @property
    def vector_cache(self) -> Path | None:
        """Where the examples' sentence embeddings are kept between starts; none for an in-memory database."""
        return None if self.spool_path is None else self.db_path.parent / "example-vectors.npz"

    def with_db(self, db: str | None) -> Settings:
        """The same settings with another database (a ``--db`` option: a file, ``sqlite:///...`` or a URL)."""
        if db is None:
            return self
        database = Database.parse(str(db), self.pool)
        return replace(self, db_path=database.path, db_url=database.url)

    def secret_key(self) -> bytes:
        """The hashing key: ``UNHOOKED_SECRET``, or a key kept in ``secret.key`` beside the database file."""
        if self.secret is not None:
            return self.secret.encode()
        if self.spool_path is None:  # an in-memory database keeps nothing, so neither does its key
            return secrets.token_hex(32).encode()
        path = self.db_path.parent / "secret.key"
        try:
            key = path.read_bytes().strip()
        except FileNotFoundError:
            pass
        except OSError as error:
            raise ConfigError(
                f"cannot read {path}: {error.strerror}; set UNHOOKED_SECRET or fix the file's permissions"
            ) from None
        else:
            private.restrict(path)  # an older version's key may be readable by others
            return key
        try:
            private.make_folder(path.parent)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, private.FILE_MODE)
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


LOG_FORMATS = ("text", "json")


def log_format(env: Mapping[str, str] | None = None) -> str:
    """``UNHOOKED_LOG_FORMAT``: ``text`` (the default) or ``json``, one object per line."""
    env = os.environ if env is None else env
    kind = env.get("UNHOOKED_LOG_FORMAT", "").strip().lower() or "text"
    if kind not in LOG_FORMATS:
        raise ConfigError(
            f"UNHOOKED_LOG_FORMAT must be text or json, e.g. UNHOOKED_LOG_FORMAT=json for one JSON object per line; "
            f"it is {kind!r}"
        )
    return kind


def _chat_id(env: Mapping[str, str], name: str, example: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(
            f"{name} must be a numeric Telegram id, e.g. {name}={example}; it is {raw!r} "
            "(a @username does not work here)"
        ) from None


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(
        f"{name} must be on or off (also 1/0, true/false, yes/no), e.g. {name}={'on' if default else 'off'}; "
        f"it is {raw!r}"
    )


def _port(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    port = _positive_int(env, name, DEFAULT_HTTP_PORT)
    if port > MAX_PORT:
        raise ConfigError(
            f"{name} must be a port number from 1 to {MAX_PORT}, e.g. {name}={DEFAULT_HTTP_PORT}; it is {port}"
        )
    return port


_TOKEN = re.compile(r"^\d+:[A-Za-z0-9_-]+$")
_WEBHOOK_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
MIN_WEBHOOK_SECRET_CHARS = 16
DEFAULT_HTTP_PORT = 8080
MAX_PORT = 65535
MONITORING_PATHS = ("/healthz", "/metrics")
"""Served by the bot's HTTP server beside the webhook, so the webhook cannot have these paths."""


@dataclass(frozen=True)
class TelegramSettings:
    """What the Telegram adapter needs on top of ``Settings``; the token never appears in a repr or a log."""

    token: str = field(repr=False)
    """The bot's token from @BotFather (``TELEGRAM_BOT_TOKEN``)."""
    api_base_url: str | None = None
    """A self-hosted Bot API server (``TELEGRAM_API_BASE_URL``), e.g. ``http://127.0.0.1:8081/bot``."""
    operator_chat_id: int | None = None
    """Where escalation alerts go (``UNHOOKED_OPERATOR_CHAT_ID``); none means no alerts."""
    admin_ids: frozenset[int] = frozenset()
    """Telegram user ids that may use /stats and /reload (``UNHOOKED_ADMIN_IDS``)."""
    protect_content: bool = True
    """Replies cannot be forwarded or saved (``UNHOOKED_PROTECT_CONTENT``)."""
    webhook_url: str | None = None
    """The public https address Telegram posts updates to (``UNHOOKED_WEBHOOK_URL``); webhook mode only."""
    webhook_secret: str | None = field(default=None, repr=False)
    """Sent by Telegram in ``X-Telegram-Bot-Api-Secret-Token`` (``UNHOOKED_WEBHOOK_SECRET``)."""
    http_listen: str = "127.0.0.1"
    """The address the bot's HTTP server binds (``UNHOOKED_HTTP_LISTEN``)."""
    http_port: int | None = None
    """The port of the bot's HTTP server: /healthz, /metrics, and the webhook (``UNHOOKED_HTTP_PORT``).
    Unset: no server when polling, ``DEFAULT_HTTP_PORT`` in webhook mode."""
    poll_timeout: float = 30.0
    """Seconds one long poll waits for updates (``UNHOOKED_POLL_TIMEOUT``)."""
    request_timeout: float = 10.0
    """Seconds to wait for Telegram to accept or answer one request (``UNHOOKED_REQUEST_TIMEOUT``)."""
    sends_per_second: float = 25.0
    """Outgoing requests per second for the whole bot, below Telegram's ~30 (``UNHOOKED_SENDS_PER_SECOND``)."""
    retry_max_delay: float = 30.0
    """The longest pause between retries of a failing request (``UNHOOKED_RETRY_MAX_DELAY``)."""
    max_concurrent_chats: int = 32
    """How many people are answered at the same time (``UNHOOKED_MAX_CONCURRENT_CHATS``)."""
    shutdown_grace: float = 10.0
    """Seconds a stop waits for replies still being sent (``UNHOOKED_SHUTDOWN_GRACE``)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TelegramSettings:
        """Read and check the Telegram settings; raise ``ConfigError`` with what to set."""
        env = os.environ if env is None else env
        token = secret_setting(env, "TELEGRAM_BOT_TOKEN") or ""
        if not token:
            raise ConfigError(
                "TELEGRAM_BOT_TOKEN is not set; set it to the token @BotFather gave you "
                "(it looks like 123456789:AAE...), e.g. in .env (see .env.example), or TELEGRAM_BOT_TOKEN_FILE "
                "to a file holding it"
            )
        if not _TOKEN.match(token):
            raise ConfigError(
                "TELEGRAM_BOT_TOKEN does not look like a bot token; set it to the whole token from @BotFather, "
                "digits, a colon, then letters (123456789:AAE...), without quotes or spaces"
            )
        base_url = env.get("TELEGRAM_API_BASE_URL", "").strip() or None
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"TELEGRAM_API_BASE_URL must start with http:// or https://, e.g. http://127.0.0.1:8081/bot; "
                f"it is {base_url!r}; unset it to use api.telegram.org"
            )
        if base_url is not None and urlsplit(base_url).path in {"", "/"}:
            base_url = base_url.rstrip("/") + "/bot"  # the Bot API path; PTB appends the token to it
        admins = set()
        for part in env.get("UNHOOKED_ADMIN_IDS", "").replace(",", " ").split():
            try:
                admins.add(int(part))
            except ValueError:
                raise ConfigError(
                    "UNHOOKED_ADMIN_IDS must be numeric Telegram user ids separated by commas, "
                    f"e.g. UNHOOKED_ADMIN_IDS=11111111,22222222; {part!r} is not one"
                ) from None
        return cls(
            token=token,
            api_base_url=base_url,
            operator_chat_id=_chat_id(env, "UNHOOKED_OPERATOR_CHAT_ID", "-1001234567890"),
            admin_ids=frozenset(admins),
            protect_content=_flag(env, "UNHOOKED_PROTECT_CONTENT", True),
            webhook_url=env.get("UNHOOKED_WEBHOOK_URL", "").strip() or None,
            webhook_secret=secret_setting(env, "UNHOOKED_WEBHOOK_SECRET"),
            http_listen=env.get("UNHOOKED_HTTP_LISTEN", "").strip() or "127.0.0.1",
            http_port=_port(env, "UNHOOKED_HTTP_PORT"),
            poll_timeout=_positive_float(env, "UNHOOKED_POLL_TIMEOUT", 30.0),
            request_timeout=_positive_float(env, "UNHOOKED_REQUEST_TIMEOUT", 10.0),
            sends_per_second=_positive_float(env, "UNHOOKED_SENDS_PER_SECOND", 25.0),
            retry_max_delay=_positive_float(env, "UNHOOKED_RETRY_MAX_DELAY", 30.0),
            max_concurrent_chats=_positive_int(env, "UNHOOKED_MAX_CONCURRENT_CHATS", 32),
            shutdown_grace=_positive_float(env, "UNHOOKED_SHUTDOWN_GRACE", 10.0),
        )

    def check_webhook(self) -> None:
        """Refuse webhook mode without a public https address and a long enough secret token."""
        if not self.webhook_url:
            raise ConfigError(
                "webhook mode needs UNHOOKED_WEBHOOK_URL: set it to the public https address Telegram should "
                "post updates to, e.g. UNHOOKED_WEBHOOK_URL=https://bot.example.org/telegram"
            )
        if not self.webhook_url.startswith(("https://", "http://")):
            raise ConfigError(
                f"UNHOOKED_WEBHOOK_URL must be a full address starting with https://; it is {self.webhook_url!r}"
            )
        if not self.webhook_secret or not _WEBHOOK_SECRET.match(self.webhook_secret):
            raise ConfigError(
                "webhook mode needs UNHOOKED_WEBHOOK_SECRET: set it to 16 to 256 letters, digits, _ or - "
                "(e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe(32))'`); "
                "Telegram sends it with every update and requests without it are refused"
            )
        if len(self.webhook_secret) < MIN_WEBHOOK_SECRET_CHARS:
            raise ConfigError(
                f"UNHOOKED_WEBHOOK_SECRET is {len(self.webhook_secret)} characters long; set it to at least "
                f"{MIN_WEBHOOK_SECRET_CHARS} random letters, digits, _ or -"
            )
        if self.webhook_path.rstrip("/") in MONITORING_PATHS:
            raise ConfigError(
                f"UNHOOKED_WEBHOOK_URL ends in {self.webhook_path}, where the bot serves its health and metrics; "
                "give the webhook another path, e.g. https://bot.example.org/telegram"
            )

    def server_port(self, webhook: bool) -> int | None:
        """The port of the bot's HTTP server, or ``None`` for no server (polling without UNHOOKED_HTTP_PORT)."""
        if self.http_port is None and webhook:
            return DEFAULT_HTTP_PORT
        return self.http_port

    @property
    def webhook_path(self) -> str:
        """The path part of ``webhook_url``, where the webhook server listens (``/`` if it has none)."""
        return urlsplit(self.webhook_url or "").path or "/"
