"""Command line: ``python -m bot chat|match|check|escalations|purge``; the only place that exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bot import __version__, operators
from bot.adapters.terminal import TerminalChat, stderr_alerter
from bot.config import Settings
from bot.content import read_content
from bot.engine import Outcome
from bot.errors import BotError, ConfigError
from bot.models import Incoming, Level
from bot.service import running_engine
from bot.spool import Spool
from bot.store import MemoryStore

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
    "escalations": """examples:
  python -m bot escalations list --since 24h --unacked
  python -m bot escalations tail
  python -m bot escalations ack 3f2a9c1b0d4e --by sam
  python -m bot escalations stats --since 30d
  python -m bot escalations export --format csv > escalations.csv""",
    "purge": """examples:
  python -m bot purge
  UNHOOKED_RETENTION_DAYS=14 python -m bot purge --db /var/lib/unhooked/unhooked.sqlite3
  # from cron, every night at 03:15:
  15 3 * * * cd /srv/unhooked && .venv/bin/python -m bot purge""",
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
        return under.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=EXAMPLES[key or name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    def with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--db", type=Path, help="the bot's SQLite file (default: UNHOOKED_DB)")
        return parser

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
    purge.set_defaults(handler=_purge)
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
        print(
            f"{len(catalog.intents)} intents, {len(catalog.passages)} passages, "
            f"{len(catalog.safety_rules)} safety patterns: {errors} errors, {warnings} warnings"
        )
    else:
        print(f"content did not load: {errors} errors, {warnings} warnings")
    return 1 if errors else 0


def _operate(args: argparse.Namespace, work: Any) -> int:
    """Run ``work(store, spool)`` on the escalation log named by --db or UNHOOKED_DB and print what it returns."""
    settings = Settings.from_env().with_db(args.db)
    spool = Spool(settings.spool_path) if settings.spool_path else None

    async def run() -> None:
        async with operators.operator_log(settings.db_path) as store:
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

    async def work(store: Any, spool: Spool | None) -> None:
        print(f"following escalations in {store.path}; press Ctrl-C to stop", file=sys.stderr, flush=True)
        await operators.follow(store, write, last=max(args.last, 0), every=args.every, as_json=args.json)

    return _operate(args, work)


def _escalations_ack(args: argparse.Namespace) -> int:
    return _operate(args, lambda store, spool: operators.ack_text(store, args.id, args.by, time.time()))


def _escalations_stats(args: argparse.Namespace) -> int:
    return _operate(args, lambda store, spool: operators.stats_text(store, spool, args.since, as_json=args.json))


def _escalations_export(args: argparse.Namespace) -> int:
    async def work(store: Any, spool: Spool | None) -> str:
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
    return _operate(args, lambda store, spool: operators.purge_text(store, days, time.time()))


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("UNHOOKED_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
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
