"""The benchmark keeps working (it is not a timed test: it only has to run and report), and its synthetic
content is valid, deterministic and as large as asked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.synthetic import message_mix, scaled_content
from bot.content import load_catalog, read_content
from tests.conftest import REPO


def test_synthetic_content_is_valid_deterministic_and_scaled(tmp_path: Path) -> None:
    shipped = load_catalog(REPO)
    root = scaled_content(REPO, 3, tmp_path / "a")
    catalog, problems = read_content(root)
    assert problems == [] and catalog is not None
    assert len(catalog.intents) == 3 * len(shipped.intents)
    again = scaled_content(REPO, 3, tmp_path / "b")
    assert [p.read_text() for p in sorted((root / "intents").glob("*.yml"))] == [
        p.read_text() for p in sorted((again / "intents").glob("*.yml"))
    ]


def test_the_message_mix_has_every_kind_and_is_repeatable() -> None:
    catalog = load_catalog(REPO)
    mix = message_mix(catalog, 2000, 100)
    assert mix == message_mix(catalog, 2000, 100)
    assert {m.kind for m in mix} == {"question", "button", "fallback", "crisis", "long"}
    assert len({m.user for m in mix}) > 50


BENCH = [sys.executable, "-m", "bench", "engine"]
"""Without a model: embedding two catalogues' examples is for the benchmark itself, not for a test."""


def test_the_engine_benchmark_runs_and_reports_json() -> None:
    result = subprocess.run(
        [*BENCH, "--scales", "1,2", "--runs", "2", "--messages", "60", "--json", "--model", "off"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert {"cpu", "cores", "python", "date"} <= set(report["machine"])
    assert report["meaning"] is False and "meaning-based matching off" in result.stderr
    first = report["results"][0]
    assert [row["factor"] for row in report["results"]] == [1, 2]
    assert first["runs"] == 2 and first["best"]["p99_ms"] <= first["median"]["p99_ms"]
    assert first["target_p99_ms"] == 10.0 and isinstance(first["target_met"], bool)
    assert sum(first["outcomes"].values()) == 60
    assert "x1 run 2/2" in result.stderr


def test_bench_help_has_an_example() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "engine", "--help"], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert "python -m bench engine" in result.stdout


def bench_telegram(*options: str) -> subprocess.CompletedProcess[str]:
    """``python -m bench telegram`` on a small load, with ``options``."""
    command = ["-m", "bench", "telegram", "--runs", "1", "--messages", "60", "--users", "10", "--paced", "10"]
    return subprocess.run(
        [sys.executable, *command, "--rate", "50", "--json", *options],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def test_the_telegram_benchmark_runs_both_bots_and_reports_json() -> None:
    result = bench_telegram()
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert {"cpu", "cores", "python", "date", "load_average"} <= set(report["machine"])
    assert set(report["bots"]) == {"echo", "unhooked"}
    ours = report["bots"]["unhooked"]
    assert ours["delivery"] == {"lost": 0, "duplicated": 0, "reordered": 0}
    assert ours["best_messages_per_second"] > 0 and ours["peak_rss_mb"] > 10
    assert set(report["verdict"]["met"]) == {"throughput", "memory", "startup", "delivery"}
    assert [run["bot"] for run in report["all_runs"]] == ["echo", "unhooked"]
    assert "unhooked run 1/1" in result.stderr
    assert report["setup"] == "sqlite polling"


async def test_the_telegram_benchmark_runs_replicas_on_postgresql_and_drops_its_schema(pg_server: str) -> None:
    import asyncpg

    result = bench_telegram("--db", pg_server, "--webhook", "--replicas", "2")
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["setup"] == "postgres webhook x2"
    assert report["bots"]["unhooked"]["delivery"] == {"lost": 0, "duplicated": 0, "reordered": 0}
    ours = report["all_runs"][1]
    assert len(ours["replica_cpu_seconds"]) == 2 and min(ours["replica_cpu_seconds"]) > 0
    connection = await asyncpg.connect(pg_server)
    try:
        left = await connection.fetch("SELECT 1 FROM pg_namespace WHERE nspname LIKE 'unhooked_bench_%'")
    finally:
        await connection.close()
    assert left == []


def test_bench_telegram_refuses_replicas_without_webhook_and_postgresql() -> None:
    result = bench_telegram("--replicas", "3")
    assert result.returncode == 2
    assert "--replicas above 1 needs --webhook and --db" in result.stdout


def test_bench_telegram_help_has_an_example() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "telegram", "--help"], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert "python -m bench telegram" in result.stdout


def test_the_crisis_benchmark_runs_and_reports_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "crisis", "--backlog", "60", "--crisis", "3", "--spacing", "0.05", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["crisis"] == 3 and report["backlog"] == 60
    assert 0 < report["latency_s"]["p50"] <= report["latency_s"]["p99"] <= report["latency_s"]["max"]
    assert report["operator_alerts"] >= 1
