"""Command line: ``python -m bot chat|match|check|backup``; the only place that exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bot import __version__
from bot.adapters.terminal import TerminalChat, stderr_alerter
from bot.config import Settings
from bot.content import read_content
from bot.engine import Outcome
from bot.errors import BotError, ConfigError
from bot.models import Incoming
from bot.service import running_engine
from bot.store import Backup, MemoryStore, SqliteStore

EXAMPLES = {
    "chat": """examples:
  python -m bot chat
  printf 'hi\\nwhy do I miss him\\n' | python -m bot chat --db :memory:""",
    "match": """examples:
  python -m bot match "why do I miss him if it was so bad"
  python -m bot match --json "should I go back" "hello"
  python -m bot match --json < sentences.txt""",
    "check": """examples:
  python -m bot check
  UNHOOKED_CONTENT_DIR=../my-content python -m bot check""",
    "backup": """examples:
  python -m bot backup backups/unhooked-$(date +%F).sqlite3
  UNHOOKED_DB=/data/unhooked.sqlite3 python -m bot backup /data/backups/latest.sqlite3 --force""",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="Unhooked: a support chatbot for people recovering from a trauma bond.",
        epilog="example:\n  python -m bot chat\n\nEach command has its own --help with examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"unhooked {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    chat = command("chat", "Talk to the bot in this terminal, on the shipped content; no token needed.")
    chat.add_argument("--db", type=Path, help="SQLite file for sessions, or :memory: (default: UNHOOKED_DB)")
    chat.add_argument("--user", default="local", help="who you are to the bot; another name starts afresh")
    chat.set_defaults(handler=_chat)

    match = command("match", "Show how messages are understood: intent, score, runner-up and reply.")
    match.add_argument("text", nargs="*", help="messages to try; without any, one per line from stdin")
    match.add_argument("--json", action="store_true", help="print one JSON object per message")
    match.set_defaults(handler=_match)

    check = command("check", "Check the content files and print every problem as path:line: level: message.")
    check.set_defaults(handler=_check)

    backup = command(
        "backup",
        "Copy the database to PATH while the bot keeps running (SQLite's online backup); "
        "an existing file is never replaced without --force.",
    )
    backup.add_argument("path", type=Path, help="the backup file to write, e.g. backups/unhooked-2025-01-31.sqlite3")
    backup.add_argument("--force", action="store_true", help="replace PATH if it already exists")
    backup.add_argument("--db", type=Path, help="the database to back up (default: UNHOOKED_DB)")
    backup.set_defaults(handler=_backup)
    return parser


def _chat(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)

    async def talk() -> None:
        async with running_engine(settings, alerter=stderr_alerter(sys.stderr)) as engine:
            interactive = sys.stdin.isatty() and sys.stdout.isatty()
            chat = TerminalChat(engine, user=args.user, stdin=sys.stdin, stdout=sys.stdout, interactive=interactive)
            await chat.run()

    asyncio.run(talk())
    return 0


def _lines(texts: list[str]) -> Iterator[str]:
    if texts:
        yield from texts
        return
    for line in sys.stdin:
        if line.strip():
            yield line.rstrip("\n")


def _as_json(text: str, outcome: Outcome) -> dict[str, Any]:
    match, detection = outcome.match, outcome.detection
    return {
        "text": text,
        "intent": match.intent if match else None,
        "score": match.score if match else None,
        "runner_up": match.runner_up if match else None,
        "runner_up_score": match.runner_up_score if match else None,
        "reason": match.reason if match else ("crisis" if detection else None),
        "crisis": (
            {"level": detection.level.value, "category": detection.category, "rule": detection.rule}
            if detection
            else None
        ),
        "replies": [reply.text for reply in outcome.replies],
    }


def _as_text(text: str, outcome: Outcome) -> str:
    match, detection = outcome.match, outcome.detection
    lines = [f"message:   {text}"]
    if detection:
        lines.append(f"crisis:    {detection.level.value} ({detection.category}, rule {detection.rule})")
    if match:
        lines.append(f"intent:    {match.intent or '(none: ' + match.reason + ')'}  score {match.score:.1f}")
        lines.append(f"runner-up: {match.runner_up or '-'}  score {match.runner_up_score:.1f}")
    lines += [f"reply:     {reply.text}" for reply in outcome.replies]
    return "\n".join(lines) + "\n"


def _match(args: argparse.Namespace) -> int:
    settings = Settings.from_env()

    async def run() -> None:
        async with running_engine(settings, MemoryStore()) as engine:
            for number, text in enumerate(_lines(args.text)):
                outcome = await engine.handle(Incoming(f"match-{number}", text, "match"))
                sys.stdout.write(
                    json.dumps(_as_json(text, outcome), ensure_ascii=False) + "\n"
                    if args.json
                    else _as_text(text, outcome)
                )

    asyncio.run(run())
    return 0


def _check(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    catalog, problems = read_content(settings.content_dir)
    for problem in problems:
        print(problem)
    errors = sum(problem.level == "error" for problem in problems)
    warnings = len(problems) - errors
    if catalog is not None:
        print(f"{len(catalog.intents)} intents, {len(catalog.passages)} passages: {errors} errors, {warnings} warnings")
    else:
        print(f"content did not load: {errors} errors, {warnings} warnings")
    return 1 if errors else 0


QUIET_LOGGERS = ("aiosqlite", "httpx", "httpcore", "telegram", "apscheduler")
"""Libraries whose chatty levels echo payloads: SQL parameters, request URLs with the bot token, whole
updates with message text and user ids. They log at WARNING or above whatever ``UNHOOKED_LOG_LEVEL`` says."""


def configure_logging(level: str) -> None:
    """Log to stderr at ``level``; the libraries in ``QUIET_LOGGERS`` never below WARNING."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    floor = max(logging.getLogger().getEffectiveLevel(), logging.WARNING)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(floor)


def _size(size: int) -> str:
    if size < 1000:
        return f"{size} bytes"
    return f"{size / 1e3:.1f} KB" if size < 1_000_000 else f"{size / 1e6:.1f} MB"


def _backup(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)
    if str(settings.db_path) == ":memory:":
        raise ConfigError("an in-memory database has nothing to back up; set UNHOOKED_DB or --db to the database file")

    async def run() -> Backup:
        async with SqliteStore(settings.db_path, migrate=False) as store:
            return await store.backup(args.path, overwrite=args.force)

    print(f"backing up {settings.db_path} to {args.path} ...", flush=True)
    done = asyncio.run(run())
    rows = ", ".join(f"{table.replace('_', ' ')} {count}" for table, count in done.rows.items())
    latest = done.migrations[-1] if done.migrations else "none"
    print(f"wrote {done.path}: {_size(done.size)}, {rows}; migrations up to {latest}; integrity check ok")
    print(
        "Keep it where only operators can read it. Restored, its sessions link to people only with the same "
        "UNHOOKED_SECRET (or the secret.key beside the database)."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit status."""
    args = _parser().parse_args(argv)
    configure_logging(os.environ.get("UNHOOKED_LOG_LEVEL", "WARNING"))
    try:
        return args.handler(args)
    except BotError as error:
        print(f"unhooked: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
