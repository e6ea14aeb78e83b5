"""Command line: every ``python -m bot`` command (chat, match, check, eval, run, ...); the only place that exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot import __version__, backups, checking, evaluate, explain, operators, safety_cli, store_cli, understanding
from bot.adapters.terminal import TerminalChat, stderr_alerter, stderr_content_alert, stderr_notice
from bot.cli import subcommand
from bot.config import Settings, TelegramSettings, log_format
from bot.content import read_content
from bot.conversations import KNOWN_FAILURES, read_sentences
from bot.errors import BotError, ConfigError, ContentError
from bot.lint import TESTS_DIR
from bot.logs import configure_logging
from bot.meaning import vectors_for
from bot.models import Incoming, Level
from bot.service import existing_store, running_service
from bot.spool import Spools
from bot.store.backup import Backup
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore

EXAMPLES = {
    "chat": """examples:
  python -m bot chat
  printf 'hi\\nwhy do I miss him\\n' | python -m bot chat --db :memory:""",
    "match": """examples:
  python -m bot match "why do I miss him if it was so bad"
  python -m bot match --json "should I go back" "hello"
  python -m bot match --json < sentences.txt
  python -m bot match --explain 'i keep checking her instagram'""",
    "run": """examples:
  TELEGRAM_BOT_TOKEN=123456789:AAE... python -m bot run
  python -m bot run --webhook   # needs UNHOOKED_WEBHOOK_URL and UNHOOKED_WEBHOOK_SECRET

Settings come from the environment; .env.example lists them all.
SIGTERM or Ctrl-C stops cleanly: updates already fetched are answered first.""",
    "check": """examples:
  python -m bot check
  UNHOOKED_CONTENT_DIR=../my-content python -m bot check
  python -m bot check --tests ../my-content/tests/conversations
  python -m bot check --json --fail-on-warnings   # in CI""",
    "eval": """examples:
  python -m bot eval
  python -m bot eval --json > eval.json
  python -m bot eval --update-known-failures""",
    "escalations": """examples:
  python -m bot escalations list --since 24h --unacked
  python -m bot escalations tail
  python -m bot escalations ack 3f2a9c1b0d4e --by sam
  python -m bot escalations stats --since 30d
  python -m bot escalations export --format csv > escalations.csv""",
    "purge": """examples:
  python -m bot purge
  UNHOOKED_RETENTION_DAYS=14 python -m bot purge --db /var/lib/unhooked/unhooked.sqlite3
  python -m bot purge --include-unacked   # unacknowledged escalations too

A running bot purges by itself once a UTC day; this command is for a stopped bot or a one-off.""",
    "escalations list": """examples:
  python -m bot escalations list
  python -m bot escalations list --since 24h --level imminent --unacked
  python -m bot escalations list --json --since 2026-11-01""",
    "escalations tail": """examples:
  python -m bot escalations tail
  python -m bot escalations tail --json --last 0 | my-log-shipper""",
    "escalations ack": """examples:
  python -m bot escalations ack 3f2a9c1b0d4e --by sam""",
    "escalations stats": """examples:
  python -m bot escalations stats
  python -m bot escalations stats --since 7d --json""",
    "escalations export": """examples:
  python -m bot escalations export --format csv > escalations.csv
  python -m bot escalations export --format jsonl --since 30d --output escalations.jsonl""",
    "backup": """examples:
  python -m bot backup backups/unhooked-$(date +%F).sqlite3
  UNHOOKED_DB=/data/unhooked.sqlite3 python -m bot backup /data/backups/latest.sqlite3 --force""",
    "restore": """examples:
  systemctl stop unhooked
  UNHOOKED_DB=/var/lib/unhooked/unhooked.sqlite3 python -m bot restore backups/unhooked-2025-01-31.sqlite3 --force
  systemctl start unhooked""",
}


def _since(text: str) -> float:
    try:
        return operators.parse_since(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above zero, e.g. 1 or 0.5; it is {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="Unhooked: a support chatbot for people recovering from a trauma bond.",
        epilog="example:\n  python -m bot chat\n\nEach command has its own --help with examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"unhooked {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, under: Any = commands, key: str | None = None) -> argparse.ArgumentParser:
        return subcommand(under, name, summary, EXAMPLES[key or name])

    def with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--db", help="the bot's database: a SQLite file or a PostgreSQL URL (default: UNHOOKED_DB)")
        return parser

    chat = command("chat", "Talk to the bot in this terminal, on the shipped content; no token needed.")
    chat.add_argument("--db", help="SQLite file for sessions, or :memory: (default: UNHOOKED_DB)")
    chat.add_argument("--user", default="local", help="who you are to the bot; another name starts afresh")
    chat.set_defaults(handler=_chat)

    match = command("match", "Show how messages are understood: intent, score, runner-up and reply.")
    match.add_argument("text", nargs="*", help="messages to try; without any, one per line from stdin")
    match.add_argument("--json", action="store_true", help="print one JSON object per message")
    match.add_argument(
        "--explain",
        action="store_true",
        help="also show the normalised message and the top three intents with the example that matched each",
    )
    match.set_defaults(handler=_match)

    run = command("run", "Run the bot on Telegram: long polling, or webhook with --webhook.")
    run.add_argument(
        "--webhook",
        action="store_true",
        help="serve Telegram webhooks on UNHOOKED_HTTP_LISTEN:UNHOOKED_HTTP_PORT instead of polling",
    )
    run.set_defaults(handler=_run)

    check = command(
        "check",
        "Check the crisis screen's floor (bot/floor/floor.yml) and the content files, and print every problem as "
        "path:line: level: message.",
    )
    tests_help = "the folder of test sentences (default: tests/conversations in the content folder)"
    check.add_argument("--tests", type=Path, metavar="DIR", help=tests_help)
    check.add_argument("--json", action="store_true", help="print one JSON document: every problem and the counts")
    check.add_argument(
        "--fail-on-warnings", action="store_true", help="exit 1 on warnings too, not only on errors (for CI)"
    )
    check.set_defaults(handler=_check)

    run_eval = command("eval", "Run every test sentence: accuracy per intent, confusions, and a threshold sweep.")
    run_eval.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    run_eval.add_argument("--tests", type=Path, metavar="DIR", help=tests_help)
    run_eval.add_argument(
        "--update-known-failures",
        action="store_true",
        help=f"rewrite {KNOWN_FAILURES} to list exactly the sentences failing now (review the diff)",
    )
    blind_help = "the frozen blind set, shown as figures only (default: tests/understanding_blind under the content)"
    run_eval.add_argument("--blind", type=Path, metavar="DIR", help=blind_help)
    run_eval.set_defaults(handler=_eval)

    escalations = command("escalations", "Operators' escalation log: list, follow, acknowledge, count and export.")
    verbs = escalations.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = with_db(command("list", "List escalations, oldest first, as a table or JSON.", verbs, "escalations list"))
    listing.add_argument("--since", type=_since, help="only these: 24h, 90m, 7d, 2w ago, or a UTC date 2026-11-01")
    listing.add_argument("--level", choices=[Level.CRISIS.value, Level.IMMINENT.value], help="only this level")
    listing.add_argument("--unacked", action="store_true", help="only those nobody has acknowledged yet")
    listing.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    listing.set_defaults(handler=_escalations_list)
    tail = with_db(
        command(
            "tail",
            "Show the latest escalations, then each new one as it comes; Ctrl-C stops.",
            verbs,
            "escalations tail",
        )
    )
    tail.add_argument("--last", type=int, default=10, help="how many recent ones to show first (default 10)")
    tail.add_argument("--every", type=_positive, default=1.0, help="seconds between looks at the database (default 1)")
    tail.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    tail.set_defaults(handler=_escalations_tail)
    ack = with_db(
        command(
            "ack", "Record who acknowledged an escalation (the first acknowledgement stays).", verbs, "escalations ack"
        )
    )
    ack.add_argument("id", help="the escalation id, or its first 6 characters or more")
    ack.add_argument("--by", required=True, help="who is acknowledging it")
    ack.set_defaults(handler=_escalations_ack)
    stats = with_db(
        command("stats", "Count concerns and escalations by day, level and category.", verbs, "escalations stats")
    )
    stats.add_argument("--since", type=_since, help="only days from then: 24h, 7d, 2w ago, or 2026-11-01")
    stats.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    stats.set_defaults(handler=_escalations_stats)
    export = with_db(command("export", "Export escalations as CSV or JSON lines.", verbs, "escalations export"))
    export.add_argument("--format", choices=["csv", "jsonl"], default="csv", help="csv (default) or jsonl")
    export.add_argument("--since", type=_since, help="only these: 24h, 7d, 2w ago, or a UTC date 2026-11-01")
    export.add_argument("--level", choices=[Level.CRISIS.value, Level.IMMINENT.value], help="only this level")
    export.add_argument("--output", type=Path, help="write to this file (readable by its owner only), not stdout")
    export.set_defaults(handler=_escalations_export)

    purge = with_db(command("purge", "Delete escalation details and idle sessions past retention; keep daily counts."))
    purge.add_argument("--days", type=int, help="keep this many days (default: UNHOOKED_RETENTION_DAYS, or 30)")
    purge.add_argument(
        "--include-unacked",
        action="store_true",
        help="also delete escalations nobody has acknowledged (kept, and reported, without it)",
    )
    purge.set_defaults(handler=_purge)

    backup = command(
        "backup",
        "Copy the database to PATH while the bot keeps running (SQLite's online backup); "
        "an existing file is never replaced without --force.",
    )
    backup.add_argument("path", type=Path, help="the backup file to write, e.g. backups/unhooked-2025-01-31.sqlite3")
    backup.add_argument("--force", action="store_true", help="replace PATH if it already exists")
    backup.add_argument("--db", help="the SQLite database to back up (default: UNHOOKED_DB)")
    backup.set_defaults(handler=_backup)

    restore = command(
        "restore",
        "Put a backup back as the database (UNHOOKED_DB) while the bot is stopped: checked, the database it "
        "replaces kept beside it, then migrated forward.",
    )
    restore.add_argument("path", type=Path, help="the backup file, as `backup` wrote it")
    restore.add_argument("--force", action="store_true", help="replace an existing database (it is kept first)")
    restore.add_argument("--db", help="the SQLite database to restore to (default: UNHOOKED_DB)")
    restore.set_defaults(handler=_restore)
    safety_cli.register(commands)
    store_cli.register(commands)
    return parser


def _chat(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)

    async def talk() -> None:
        alerts = {
            "alerter": stderr_alerter(sys.stderr),
            "content_alert": stderr_content_alert(sys.stderr),
            "notice": stderr_notice(sys.stderr),
        }
        async with running_service(settings, **alerts) as service:
            engine = service.engine
            interactive = sys.stdin.isatty() and sys.stdout.isatty()
            chat = TerminalChat(engine, user=args.user, stdin=sys.stdin, stdout=sys.stdout, interactive=interactive)
            await chat.run()

    asyncio.run(talk())
    return 0


def _run(args: argparse.Namespace) -> int:
    from bot.adapters.telegram import run_telegram  # imports python-telegram-bot only for this command

    settings = Settings.from_env()
    telegram = TelegramSettings.from_env()
    if args.webhook:
        telegram.check_webhook()

    async def serve() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(number: signal.Signals) -> None:
            logging.getLogger("unhooked").warning("%s: answering what was fetched, then stopping", number.name)
            stop.set()
            loop.remove_signal_handler(number)  # a second signal stops at once

        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, on_signal, number)
        return await run_telegram(settings, telegram, webhook=args.webhook, stop=stop)

    asyncio.run(serve())
    return 0


def _lines(texts: list[str]) -> Iterator[str]:
    if texts:
        yield from texts
        return
    for line in sys.stdin:
        if line.strip():
            yield line.rstrip("\n")


def _match(args: argparse.Namespace) -> int:
    # An in-memory database: a random hashing key, no secret.key written, no spool.
    settings = replace(Settings.from_env().with_db(":memory:"), reload_seconds=0)
    # A try-out, not a conversation: its crisis detections are printed, never logged as escalations for operators.
    logging.getLogger("unhooked.escalations").disabled = True

    async def run() -> None:
        async with running_service(settings, MemoryStore(), meaning_first=True) as service:
            engine = service.engine
            for number, text in enumerate(_lines(args.text)):
                outcome = await engine.handle(Incoming(f"match-{number}", text, "match"))
                explained = explain.matcher_view(engine, text, outcome) if args.explain else None
                shown = (text, outcome, explained, engine.catalog, explain.weight_of(engine))
                sys.stdout.write(
                    json.dumps(explain.as_json(*shown), ensure_ascii=False) + "\n"
                    if args.json
                    else explain.as_text(*shown)
                )

    asyncio.run(run())
    return 0


def _check(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    root = explain.here(settings.content_dir)
    # the examples' vectors come from the model's folder; what `check` embeds besides stays in memory
    report = checking.check(root, args.tests, vectors_for(settings.meaning_folder))
    sys.stdout.write(report.as_json() if args.json else report.as_text())
    return report.exit_code(fail_on_warnings=args.fail_on_warnings)


def _eval(args: argparse.Namespace) -> int:
    root = explain.here(Settings.from_env().content_dir)
    catalog, problems = read_content(root)
    if catalog is None:
        raise ContentError(problems)
    folder = args.tests or root / TESTS_DIR
    sentences, problems = read_sentences(folder)
    if sentences is None or not sentences.sentences:
        raise ConfigError(f"there are no test sentences in {folder}; pass --tests DIR with the folder that has them")
    errors = [problem for problem in problems if problem.level == "error"]
    if errors:
        raise ContentError(errors)
    settings = Settings.from_env()
    vectors = vectors_for(settings.meaning_folder, settings.vector_cache)
    logging.getLogger("unhooked.escalations").disabled = True  # a try-out, as `match` is: nobody to alert
    print(f"running {len(sentences.sentences) + len(sentences.out_of_scope)} sentences...", file=sys.stderr)
    result = asyncio.run(evaluate.evaluate(catalog, sentences, vectors))
    sys.stdout.write(understanding.full_report(catalog, result, vectors, args.blind, as_json=args.json))
    if args.update_known_failures:
        text, count = evaluate.known_failures_yaml(result)
        (folder / KNOWN_FAILURES).write_text(text, encoding="utf-8")
        print(f"wrote {folder / KNOWN_FAILURES}: {count} known failures", file=sys.stderr)
    failing = result.gate()
    if failing:
        print(f"the accuracy gate fails: {'; '.join(failing)}", file=sys.stderr)
    return 1 if failing else 0


def _operate(args: argparse.Namespace, work: Any) -> int:
    """Run ``work(store, spool)`` on the escalation log named by --db or UNHOOKED_DB and print what it returns."""
    settings = Settings.from_env().with_db(args.db)
    spool = Spools(settings.spool_paths) if settings.spool_paths else None

    async def run() -> None:
        async with existing_store(settings) as store:
            output = await work(store, spool)
        if output:
            sys.stdout.write(output)

    asyncio.run(run())
    return 0


def _level(args: argparse.Namespace) -> Level | None:
    return Level(args.level) if args.level else None


def _escalations_list(args: argparse.Namespace) -> int:
    return _operate(
        args,
        lambda store, spool: operators.list_text(
            store, spool, since=args.since, level=_level(args), unacked=args.unacked, as_json=args.json
        ),
    )


def _escalations_tail(args: argparse.Namespace) -> int:
    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    async def work(store: Any, spool: Spools | None) -> None:
        print(f"following escalations in {store.where}; press Ctrl-C to stop", file=sys.stderr, flush=True)
        await operators.follow(store, write, last=max(args.last, 0), every=args.every, as_json=args.json)

    return _operate(args, work)


def _escalations_ack(args: argparse.Namespace) -> int:
    return _operate(args, lambda store, spool: operators.ack_text(store, args.id, args.by, time.time()))


def _escalations_stats(args: argparse.Namespace) -> int:
    return _operate(args, lambda store, spool: operators.stats_text(store, spool, args.since, as_json=args.json))


def _escalations_export(args: argparse.Namespace) -> int:
    async def work(store: Any, spool: Spools | None) -> str:
        text, count = await operators.export_text(store, spool, args.format, since=args.since, level=_level(args))
        if args.output is None:
            return text
        operators.write_private(args.output, text)
        print(f"wrote {count} escalations to {args.output}", file=sys.stderr)
        return ""

    return _operate(args, work)


def _purge(args: argparse.Namespace) -> int:
    days = Settings.from_env().retention_days if args.days is None else args.days
    if days <= 0:
        raise ConfigError(f"--days must be greater than zero, e.g. --days 30; it is {days}")
    return _operate(
        args,
        lambda store, spool: operators.purge_text(store, days, time.time(), include_unacked=args.include_unacked),
    )


def _sqlite_file(settings: Settings, what: str, postgres: str) -> None:
    if settings.database.in_memory:
        raise ConfigError(f"an in-memory database has nothing to {what}; set UNHOOKED_DB or --db to the database file")
    if settings.database.is_postgres:
        raise ConfigError(f"{postgres} (see deploy/README.md)")


def _backup(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)
    _sqlite_file(settings, "back up", "backup copies a SQLite database; back up PostgreSQL with pg_dump")

    async def run() -> Backup:
        async with existing_store(settings) as store:
            if not isinstance(store, SqliteStore):
                raise ConfigError(f"{store.where} is not a SQLite database; set UNHOOKED_DB or --db to the file")
            return await store.backup(args.path, overwrite=args.force)

    print(f"backing up {settings.db_path} to {args.path} ...", flush=True)
    done = asyncio.run(run())
    print(f"wrote {done.path}: {backups.describe(done)}")
    print(f"Keep it where only operators can read it. {backups.SAME_KEY_NOTE}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)
    _sqlite_file(settings, "restore", "restore writes a SQLite database; restore PostgreSQL with pg_restore")
    done = asyncio.run(backups.restore(args.path, settings.db_path, force=args.force))
    print(backups.restore_report(done, args.path))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit status."""
    args = _parser().parse_args(argv)
    try:
        configure_logging(os.environ.get("UNHOOKED_LOG_LEVEL", "WARNING"), log_format())
        return args.handler(args)
    except BotError as error:
        print(f"unhooked: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
