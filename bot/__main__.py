"""Command line: ``python -m bot chat|match|check|eval|run``; the only place that exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot import __version__, evaluate
from bot.adapters.terminal import TerminalChat, stderr_alerter, stderr_content_alert
from bot.config import Settings, TelegramSettings
from bot.content import read_content
from bot.conversations import KNOWN_FAILURES, read_sentences
from bot.engine import Engine, Outcome
from bot.errors import BotError, ConfigError, ContentError
from bot.lint import TESTS_DIR, lint
from bot.matcher import tokens_of
from bot.models import Incoming, Match
from bot.service import running_engine
from bot.store import MemoryStore

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
  python -m bot check --tests ../my-content/tests/conversations""",
    "eval": """examples:
  python -m bot eval
  python -m bot eval --json > eval.json
  python -m bot eval --update-known-failures""",
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
        help="serve Telegram webhooks on UNHOOKED_WEBHOOK_LISTEN:UNHOOKED_WEBHOOK_PORT instead of polling",
    )
    run.set_defaults(handler=_run)

    check = command("check", "Check the content files and print every problem as path:line: level: message.")
    tests_help = "the folder of test sentences (default: tests/conversations in the content folder)"
    check.add_argument("--tests", type=Path, metavar="DIR", help=tests_help)
    check.set_defaults(handler=_check)

    run_eval = command("eval", "Run every test sentence: accuracy per intent, confusions, and a threshold sweep.")
    run_eval.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    run_eval.add_argument("--tests", type=Path, metavar="DIR", help=tests_help)
    run_eval.add_argument(
        "--update-known-failures",
        action="store_true",
        help=f"rewrite {KNOWN_FAILURES} to list exactly the sentences failing now (review the diff)",
    )
    run_eval.set_defaults(handler=_eval)
    return parser


def _chat(args: argparse.Namespace) -> int:
    settings = Settings.from_env().with_db(args.db)

    async def talk() -> None:
        alerts = {"alerter": stderr_alerter(sys.stderr), "content_alert": stderr_content_alert(sys.stderr)}
        async with running_engine(settings, **alerts) as engine:
            interactive = sys.stdin.isatty() and sys.stdout.isatty()
            chat = TerminalChat(engine, user=args.user, stdin=sys.stdin, stdout=sys.stdout, interactive=interactive)
            await chat.run()

    asyncio.run(talk())
    return 0


def _run(args: argparse.Namespace) -> int:
    from bot.adapters.telegram_run import run_telegram  # imports python-telegram-bot only for this command

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


def _as_json(text: str, outcome: Outcome, explained: Match | None = None) -> dict[str, Any]:
    match, detection = outcome.match, outcome.detection
    fields = {
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
    if explained is not None:
        fields["normalized"] = " ".join(tokens_of(text))
        fields["candidates"] = [
            {"intent": c.intent, "score": c.score, "example": c.example} for c in explained.candidates
        ]
    return fields


def _as_text(text: str, outcome: Outcome, explained: Match | None = None) -> str:
    match, detection = outcome.match, outcome.detection
    lines = [f"message:   {text}"]
    if explained is not None:
        lines.append(f"matcher saw: {' '.join(tokens_of(text)) or '(nothing)'}")
    if detection:
        lines.append(f"crisis:    {detection.level.value} ({detection.category}, rule {detection.rule})")
    if match:
        lines.append(f"intent:    {match.intent or '(none: ' + match.reason + ')'}  score {match.score:.1f}")
        lines.append(f"runner-up: {match.runner_up or '-'}  score {match.runner_up_score:.1f}")
    if explained is not None:
        note = "" if match else " (not used: the crisis screen answered first)"
        lines.append(f"top intents{note}:" if explained.candidates else "top intents: none came near")
        for rank, c in enumerate(explained.candidates, 1):
            what = c.example if c.example.startswith("keyword:") else repr(c.example)
            lines.append(f"  {rank}. {c.intent:<22} {c.score:5.1f}  {what}")
    lines += [f"reply:     {reply.text}" for reply in outcome.replies]
    return "\n".join(lines) + "\n"


def _explain(engine: Engine, text: str, outcome: Outcome) -> Match | None:
    """The matcher's view of a message: the engine's match, or for a crisis message what it would have been."""
    if outcome.match is not None:
        return outcome.match
    return engine.matcher.match(text) if engine.matcher else None


def _match(args: argparse.Namespace) -> int:
    settings = replace(Settings.from_env(), reload_seconds=0)

    async def run() -> None:
        async with running_engine(settings, MemoryStore()) as engine:
            for number, text in enumerate(_lines(args.text)):
                outcome = await engine.handle(Incoming(f"match-{number}", text, "match"))
                explained = _explain(engine, text, outcome) if args.explain else None
                sys.stdout.write(
                    json.dumps(_as_json(text, outcome, explained), ensure_ascii=False) + "\n"
                    if args.json
                    else _as_text(text, outcome, explained)
                )

    asyncio.run(run())
    return 0


def _here(path: Path) -> Path:
    """``path`` relative to the working folder when it lies inside it, so problems read ``intents/x.yml:3``."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def _check(args: argparse.Namespace) -> int:
    root = _here(Settings.from_env().content_dir)
    catalog, problems = read_content(root)
    if catalog is not None:
        problems += lint(catalog, root, args.tests)
    for problem in sorted(problems, key=lambda p: (str(p.path), p.line)):
        print(problem)
    counts = {level: sum(p.level == level for p in problems) for level in ("error", "warning", "note")}
    summary = f"{counts['error']} errors, {counts['warning']} warnings" + (
        f", {counts['note']} notes" if counts["note"] else ""
    )
    if catalog is not None:
        print(f"{len(catalog.intents)} intents, {len(catalog.passages)} passages: {summary}")
    else:
        print(f"content did not load: {summary}")
    return 1 if counts["error"] else 0


def _eval(args: argparse.Namespace) -> int:
    root = _here(Settings.from_env().content_dir)
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
    print(f"running {len(sentences.sentences) + len(sentences.out_of_scope)} sentences...", file=sys.stderr)
    result = asyncio.run(evaluate.evaluate(catalog, sentences))
    rows = evaluate.sweep(catalog, result)
    sys.stdout.write(evaluate.as_json(result, rows) if args.json else evaluate.report(result, rows))
    if args.update_known_failures:
        text, count = evaluate.known_failures_yaml(result)
        (folder / KNOWN_FAILURES).write_text(text, encoding="utf-8")
        print(f"wrote {folder / KNOWN_FAILURES}: {count} known failures", file=sys.stderr)
    return 0


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
