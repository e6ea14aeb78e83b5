"""``migrate``, ``migrate-store``, ``start-afresh``: update a schema, move SQLite to PostgreSQL, start anew."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from bot.backups import start_afresh
from bot.cli import subcommand
from bot.config import Settings
from bot.database import Database
from bot.errors import ConfigError, DatabaseFault
from bot.service import migrate

MIGRATE_EXAMPLES = """examples:
  python -m bot migrate
  UNHOOKED_DB=/data/unhooked.sqlite3 python -m bot migrate"""
MOVE_EXAMPLES = """examples:
  systemctl stop unhooked
  python -m bot migrate-store /var/lib/unhooked/unhooked.sqlite3 postgresql://unhooked@db.internal/unhooked
  UNHOOKED_DB=postgresql://unhooked@db.internal/unhooked systemctl start unhooked

Stop the bot first: what it writes during the move is not copied. People's sessions are kept under
keyed hashes: run the bot on PostgreSQL with the same key (UNHOOKED_SECRET, or the contents of the
secret.key file beside the SQLite database)."""
AFRESH_EXAMPLES = """examples:
  systemctl stop unhooked
  UNHOOKED_DB=/var/lib/unhooked/unhooked.sqlite3 python -m bot start-afresh
  python -m bot start-afresh --force   # a corrupt database file: moved aside, an empty one made in its place
  systemctl start unhooked

Only when no backup is to be restored (python -m bot restore): the next start creates an empty database and
replays the spooled escalations into it; what the lost database held is gone."""


def register(commands: Any) -> None:
    """Add ``migrate`` and ``migrate-store`` to the command line."""
    run_migrate = subcommand(
        commands,
        "migrate",
        "Apply the migrations this version has and the database lacks, then stop.",
        MIGRATE_EXAMPLES,
    )
    run_migrate.add_argument(
        "--db", help="the bot's database: a SQLite file or a PostgreSQL URL (default: UNHOOKED_DB)"
    )
    run_migrate.set_defaults(handler=_migrate)
    move = subcommand(
        commands,
        "migrate-store",
        "Copy a SQLite database (sessions, escalations, counts, the Telegram journal) into a PostgreSQL one.",
        MOVE_EXAMPLES,
    )
    move.add_argument("source", help="the SQLite database file the bot used (a path or sqlite:///path)")
    move.add_argument("target", help="the PostgreSQL database, postgresql://user@host:5432/dbname")
    move.add_argument("--force", action="store_true", help="empty a target that already holds rows, then copy")
    move.set_defaults(handler=_move)
    afresh = subcommand(
        commands,
        "start-afresh",
        "Say a fresh start is intended where the database was lost, so the next start creates an empty one.",
        AFRESH_EXAMPLES,
    )
    afresh.add_argument("--db", help="the SQLite database file (default: UNHOOKED_DB)")
    afresh.add_argument("--force", action="store_true", help="move a database file that is there (corrupt) aside")
    afresh.set_defaults(handler=_afresh)


def _migrate(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)
    if settings.database.in_memory:
        raise ConfigError("an in-memory database has no schema to migrate; set UNHOOKED_DB or --db to the database")
    try:
        print(asyncio.run(migrate(settings)))
    except DatabaseFault as fault:
        raise ConfigError(
            f"{fault}; restore a backup (python -m bot restore BACKUP), or run python -m bot start-afresh first "
            "if a fresh database is intended"
        ) from None
    return 0


def _move(args: argparse.Namespace) -> int:
    source, target = Database.parse(args.source), Database.parse(args.target)
    if source.is_postgres or source.in_memory:
        raise ConfigError(f"the source must be a SQLite database file; {args.source} is not one")
    if target.url is None:
        raise ConfigError(
            f"the target must be a PostgreSQL URL such as postgresql://user@host/db; {args.target} is not"
        )
    try:
        from bot.store.transfer import move_to_postgres
    except ImportError:
        raise ConfigError("moving to PostgreSQL needs asyncpg: pip install 'unhooked[postgres]'") from None
    done = asyncio.run(move_to_postgres(Path(source.path), target.url, force=args.force, where=target.where))
    if done.replaced:
        print(f"emptied {target.where} first ({done.replaced} rows were there)")
    copied = ", ".join(f"{count} {table}" for table, count in done.rows.items())
    print(f"copied {source.where} to {target.where}: {copied}")
    print(
        f"Run the bot on it with the same key: UNHOOKED_SECRET, or the contents of {source.path.parent / 'secret.key'}"
    )
    return 0


def _afresh(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)
    if settings.database.in_memory or settings.database.is_postgres:
        raise ConfigError("start-afresh is for a SQLite database file; set UNHOOKED_DB or --db to it")
    moved = start_afresh(settings.db_path, force=args.force)
    for path in moved:
        print(f"moved {path.name.split('.before-fresh-start-')[0]} aside to {path}")
    print(f"the next start creates an empty database at {settings.db_path} and replays the spooled escalations into it")
    return 0
