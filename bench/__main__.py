"""Command line for the benchmarks: ``python -m bench engine|telegram|crisis [--json]``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sqlite3
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.engine import TARGETS_MS, Model, benchmark
from bot.config import default_content_dir
from bot.meaning import vectors_for

EXAMPLE = """examples:
  python -m bench engine
  python -m bench engine --runs 5 --messages 5000 --scales 1,10,100 --json > bench/engine.json
  python -m bench engine --scales 1 --runs 1 --messages 500      # a quick look"""
TELEGRAM_EXAMPLE = """examples:
  python -m bench telegram
  python -m bench telegram --runs 5 --messages 5000 --users 500 --json > bench/telegram.json
  python -m bench telegram --runs 1 --messages 500 --paced 100   # a quick look
  python -m bench telegram --db postgresql://postgres@127.0.0.1:5432/test --webhook --replicas 3"""
CRISIS_EXAMPLE = """examples:
  python -m bench crisis                                  # 3000 queued, 40 crisis messages, 25 sends/s
  python -m bench crisis --backlog 200 --crisis 5 --json  # a quick look"""


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "rapidfuzz": version("rapidfuzz"),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": _load(),
    }


def _load() -> str:
    """The 1, 5 and 15 minute load averages: how busy the machine was with other work."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks for Unhooked. Results are written up in bench/RESULTS.md.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    engine = commands.add_parser(
        "engine",
        help="per-message latency (p50, p99) and messages per second of the engine",
        description=(
            "Per-message latency and throughput of the engine (normalise, crisis screen, match, session in "
            "SQLite) on the shipped content and on synthetic catalogues that many times larger, with a "
            "realistic message mix. Each size is run several times; the best and the median are reported."
        ),
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    engine.add_argument("--scales", default="1,10,100", help="catalogue size factors, e.g. 1,10,100 (the default)")
    engine.add_argument("--runs", type=int, default=5, help="runs per size (default 5)")
    engine.add_argument("--messages", type=int, default=5000, help="messages per run (default 5000)")
    engine.add_argument("--users", type=int, default=1000, help="distinct people sending them (default 1000)")
    engine.add_argument(
        "--model",
        default=None,
        metavar="FOLDER",
        help="the learned model for the crisis screen and meaning-based matching (default: the shipped one; `off`)",
    )
    engine.add_argument(
        "--vector-cache", type=Path, metavar="FILE", help="keep the examples' vectors in FILE between runs of the bench"
    )
    engine.add_argument("--json", action="store_true", help="print one JSON document instead of a table")

    telegram = commands.add_parser(
        "telegram",
        help="end to end through python-telegram-bot and a fake Bot API server, beside a bare PTB echo bot",
        description=(
            "Unhooked (python -m bot run) and a bare python-telegram-bot echo bot, each in its own process, "
            "against a fake Bot API server on 127.0.0.1, alternating, on the same messages: start-up to first "
            "reply, throughput of a burst, latency percentiles (burst and paced), peak memory, and a check "
            "that no reply is lost, duplicated or reordered. Needs the dev extra (aiohttp)."
        ),
        epilog=TELEGRAM_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    telegram.add_argument("--runs", type=int, default=3, help="runs of each bot, alternating (default 3)")
    telegram.add_argument("--messages", type=int, default=5000, help="messages in the burst (default 5000)")
    telegram.add_argument("--users", type=int, default=500, help="distinct people sending them (default 500)")
    telegram.add_argument("--paced", type=int, default=1000, help="messages sent at a steady rate after (default 1000)")
    telegram.add_argument("--rate", type=float, default=100.0, help="the steady rate, messages/s (default 100)")
    telegram.add_argument(
        "--concurrency", type=int, default=32, help="updates handled at once by each bot (default 32, as shipped)"
    )
    telegram.add_argument(
        "--db",
        metavar="POSTGRESQL_URL",
        help="keep Unhooked's data on this PostgreSQL server (a fresh schema per run, dropped after) instead of a "
        "fresh SQLite file, e.g. postgresql://postgres@127.0.0.1:5432/test",
    )
    telegram.add_argument(
        "--webhook",
        action="store_true",
        help="run Unhooked in webhook mode behind a round-robin front the fake server posts updates to",
    )
    telegram.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="Unhooked processes behind the front (default 1; above 1 needs --webhook and --db)",
    )
    telegram.add_argument("--json", action="store_true", help="print one JSON document instead of a table")

    crisis = commands.add_parser(
        "crisis",
        help="crisis-reply latency while the bot works through a backlog, at the shipped send pacing",
        description=(
            "python -m bot run against a fake Bot API server: a backlog of ordinary messages queued at once, then "
            "crisis messages from other people while it drains; reports the crisis replies' latency (p50, p99, "
            "max), how many backlog replies went out first, and the operators' alerts (the operators' chat "
            "answers 429 past its limit, as a Telegram group does). Needs the dev extra (aiohttp)."
        ),
        epilog=CRISIS_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    crisis.add_argument("--backlog", type=int, default=3000, help="ordinary messages queued first (default 3000)")
    crisis.add_argument("--users", type=int, default=500, help="people sending the backlog (default 500)")
    crisis.add_argument("--crisis", type=int, default=40, help="crisis messages, each from someone new (default 40)")
    crisis.add_argument("--spacing", type=float, default=0.5, help="seconds between crisis messages (default 0.5)")
    crisis.add_argument("--rate", type=float, default=25.0, help="UNHOOKED_SENDS_PER_SECOND (default 25, as shipped)")
    crisis.add_argument(
        "--operator-limit", type=int, default=20, help="messages a minute the operators' chat takes (default 20)"
    )
    crisis.add_argument("--json", action="store_true", help="print one JSON document instead of a sentence")
    return parser


def _table(info: dict[str, object], results: list[dict[str, object]]) -> str:
    lines = [
        f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, SQLite {info['sqlite']}",
        f"date:    {info['date']}; load average before {info['load_average']}, after {_load()}",
        "",
        "size   intents examples load s | engine p50 ms   p99 ms (best/median)"
        "   msg/s (best/median) | screen+match p99 ms | target",
    ]
    for row in results:
        best, median = row["best"], row["median"]
        target = row["target_p99_ms"]
        verdict = "-" if target is None else f"p99 <= {target:g} ms: {'met' if row['target_met'] else 'MISSED'}"
        lines.append(
            f"x{row['factor']:<5} {row['intents']:>7} {row['examples']:>8} {row['load_seconds']:>6.2f} |"
            f" {best['p50_ms']:>6.3f}/{median['p50_ms']:<6.3f} {best['p99_ms']:>6.3f}/{median['p99_ms']:<6.3f}"
            f"          {best['messages_per_second']:>6.0f}/{median['messages_per_second']:<6.0f}      |"
            f" {best['core_p99_ms']:>6.3f}       | {verdict}"
        )
    lines.append("")
    for row in results:
        kinds = ", ".join(f"{kind} {value:.3f}" for kind, value in row["best_p99_ms_by_kind"].items())
        lines.append(f"x{row['factor']} best p99 ms by kind: {kinds}")
    lines.append("outcomes per run: " + "; ".join(f"x{row['factor']} {row['outcomes']}" for row in results))
    return "\n".join(lines)


def _telegram_table(info: dict[str, object], summary: dict[str, Any]) -> str:
    lines = [
        f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, SQLite {info['sqlite']}",
        f"date:    {info['date']}; load average before {info['load_average']}, after {_load()}",
        f"load:    {summary['messages']} messages from {summary['users']} people at once, then {summary['paced']}"
        f" at {summary['rate']:g}/s; Unhooked on {summary['setup']}",
        "",
        "bot       start-up s  msg/s (best/median)  burst p50/p99 ms  paced p50/p90/p99 ms  peak MB  CPU ms/msg",
    ]
    for bot, row in summary["bots"].items():
        burst, paced = row["median_burst_latency_ms"], row["median_paced_latency_ms"]
        lines.append(
            f"{bot:<9} {row['median_startup_seconds']:>9.2f}  {row['best_messages_per_second']:>8.0f}/"
            f"{row['median_messages_per_second']:<8.0f}   {burst['p50']:>7.0f}/{burst['p99']:<7.0f}"
            f"  {paced['p50']:>6.1f}/{paced['p90']:.1f}/{paced['p99']:<8.1f}  {row['peak_rss_mb']:>6.1f}"
            f"  {row['median_cpu_ms_per_message']:>8.2f}"
        )
    verdict, targets = summary["verdict"], summary["targets"]
    if verdict:
        met = verdict["met"]
        lines += [
            "",
            f"throughput: Unhooked/echo {verdict['throughput_ratio_median']:.2f} (median of paired runs;"
            f" target >= {targets['throughput_ratio']}): {'met' if met['throughput'] else 'MISSED'}",
            f"memory:     Unhooked peak {summary['bots']['unhooked']['peak_rss_mb']:.1f} MB,"
            f" {verdict['memory_ratio']:.2f}x the echo bot's (target <= {targets['peak_rss_mb']:g} MB):"
            f" {'met' if met['memory'] else 'MISSED'}",
            f"start-up:   {verdict['startup_seconds']:.2f} s to the first reply (target < "
            f"{targets['startup_seconds']:g} s): {'met' if met['startup'] else 'MISSED'}",
            f"delivery:   Unhooked: {'no reply lost, duplicated or reordered' if met['delivery'] else 'PROBLEMS'}"
            f" {summary['bots']['unhooked']['delivery']}",
            f"            echo bot: {summary['bots']['echo']['delivery']} (people whose replies came out of order:"
            " it handles updates at once with no order per chat)",
        ]
    return "\n".join(lines)


def _positive_counts(*values: float) -> bool:
    return all(value >= 1 for value in values)


def _engine(args: argparse.Namespace) -> int:
    try:
        factors = [int(part) for part in args.scales.split(",") if part.strip()]
    except ValueError:
        print(f"bench: --scales must be whole numbers separated by commas, e.g. 1,10,100; it is {args.scales!r}")
        return 2
    if not factors or min(factors) < 1 or not _positive_counts(args.runs, args.messages, args.users):
        print("bench: --scales, --runs, --messages and --users must all be 1 or more")
        return 2
    info = machine()
    progress = (lambda line: print(line, file=sys.stderr)) if args.json else print
    progress(f"engine benchmark: scales {factors}, {args.runs} runs of {args.messages} messages, {args.users} people")
    model = Model(args.model, vectors_for(args.model, args.vector_cache))
    progress(f"meaning-based matching {'on' if model.vectors else 'off'}")
    scales = benchmark(default_content_dir(), factors, args.runs, args.messages, args.users, progress, model)
    results = [scale.summary() for scale in scales]
    if args.json:
        info["load_average_after"] = _load()
        print(
            json.dumps(
                {
                    "machine": info,
                    "command": _command(),
                    "targets_ms": TARGETS_MS,
                    "meaning": model.vectors is not None,
                    "results": results,
                },
                indent=2,
            )
        )
    else:
        print()
        print(_table(info, results))
    missed = [row for row in results if row["target_met"] is False]
    return 1 if missed else 0


def _telegram(args: argparse.Namespace) -> int:
    from bench.telegram import Setup
    from bench.telegram import benchmark as telegram_benchmark  # needs aiohttp (the dev extra)

    if not _positive_counts(args.runs, args.messages, args.users, args.rate, args.concurrency) or args.paced < 0:
        print("bench: --runs, --messages, --users, --rate and --concurrency must be 1 or more, --paced 0 or more")
        return 2
    if args.db is not None and not args.db.startswith(("postgresql://", "postgres://")):
        print(
            f"bench: --db must be a PostgreSQL URL, e.g. postgresql://postgres@127.0.0.1:5432/test; it is {args.db!r}"
        )
        return 2
    try:
        setup = Setup(args.db, args.webhook, args.replicas)
    except ValueError as error:
        print(f"bench: {error}")
        return 2
    info = machine()
    progress = (lambda line: print(line, file=sys.stderr)) if args.json else print
    progress(
        f"telegram benchmark: {args.runs} runs of each bot, {args.messages} messages from {args.users} people,"
        f" then {args.paced} at {args.rate:g}/s; Unhooked on {setup.label}"
    )
    report = telegram_benchmark(
        args.messages, args.users, args.paced, args.rate, args.runs, args.concurrency, progress, setup
    )
    summary = report.summary()
    if args.json:
        info["load_average_after"] = _load()
        print(json.dumps({"machine": info, "command": _command(), **summary}, indent=2))
    else:
        print()
        print(_telegram_table(info, summary))
    met = summary["verdict"].get("met", {})
    return 0 if met and all(met.values()) else 1


def _crisis(args: argparse.Namespace) -> int:
    from bench.crisis import benchmark as crisis_benchmark  # needs aiohttp (the dev extra)

    if not _positive_counts(args.backlog, args.users, args.crisis, args.rate, args.operator_limit) or args.spacing < 0:
        print("bench: --backlog, --users, --crisis, --rate and --operator-limit must be 1 or more, --spacing 0 or more")
        return 2
    info = machine()
    result = crisis_benchmark(args.backlog, args.users, args.crisis, args.spacing, args.rate, args.operator_limit)
    if args.json:
        info["load_average_after"] = _load()
        print(json.dumps({"machine": info, "command": _command(), **asdict(result)}, indent=2))
    else:
        latency = result.latency_s
        print(
            f"{result.crisis} crisis replies behind {result.backlog} queued messages at {result.sends_per_second:g}"
            f" sends/s: p50 {latency['p50']:.2f} s, p99 {latency['p99']:.2f} s, max {latency['max']:.2f} s;"
            f" {result.backlog_replies_before_last_crisis_reply} backlog replies went out meanwhile;"
            f" {result.operator_alerts} operators' alerts told {result.escalations_told} escalations"
            f" ({result.operator_429s} answered 429)"
        )
    return 0


def _command() -> str:
    return "python -m bench " + " ".join(sys.argv[1:])


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark and print its results."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, handlers=[logging.FileHandler(os.devnull)])
    commands = {"engine": _engine, "telegram": _telegram, "crisis": _crisis}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
