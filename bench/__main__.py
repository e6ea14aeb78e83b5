"""Command line for the benchmarks: ``python -m bench engine [--json]``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sqlite3
import sys
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from bench.engine import TARGETS_MS, benchmark
from bot.config import default_content_dir

EXAMPLE = """examples:
  python -m bench engine
  python -m bench engine --runs 5 --messages 5000 --scales 1,10,100 --json > bench/engine.json
  python -m bench engine --scales 1 --runs 1 --messages 500      # a quick look"""


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
    engine.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
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
        verdict = "-" if target is None else f"p99 < {target} ms: {'met' if row['target_met'] else 'MISSED'}"
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


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark and print its results."""
    args = _parser().parse_args(argv)
    try:
        factors = [int(part) for part in args.scales.split(",") if part.strip()]
    except ValueError:
        print(f"bench: --scales must be whole numbers separated by commas, e.g. 1,10,100; it is {args.scales!r}")
        return 2
    if not factors or min(factors) < 1 or args.runs < 1 or args.messages < 1 or args.users < 1:
        print("bench: --scales, --runs, --messages and --users must all be 1 or more")
        return 2
    logging.basicConfig(level=logging.WARNING, handlers=[logging.FileHandler(os.devnull)])
    info = machine()
    progress = (lambda line: print(line, file=sys.stderr)) if args.json else print
    progress(f"engine benchmark: scales {factors}, {args.runs} runs of {args.messages} messages, {args.users} people")
    scales = benchmark(default_content_dir(), factors, args.runs, args.messages, args.users, progress)
    results = [scale.summary() for scale in scales]
    if args.json:
        command = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
        info["load_average_after"] = _load()
        print(json.dumps({"machine": info, "command": command, "targets_ms": TARGETS_MS, "results": results}, indent=2))
    else:
        print()
        print(_table(info, results))
    missed = [row for row in results if row["target_met"] is False]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
