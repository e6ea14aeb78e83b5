"""The operators' escalation log on the command line: list, tail, ack, stats, export and purge."""

from __future__ import annotations

import csv
import io
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.models import Escalation, Level
from bot.operators import parse_since
from bot.spool import Spool
from bot.store.sqlite import SqliteStore
from tests.conftest import REPO
from tests.processes import ctrl_c_works

NOW = time.time()
HOUR = 3600.0
DAY = 24 * HOUR
RECENT = min(1.0, NOW % DAY / HOUR / 3)
"""Hours ago for today's escalations: within today's UTC day even when the suite runs just after midnight."""


def escalation(escalation_id: str, hours_ago: float, **changes) -> Escalation:
    fields = {
        "id": escalation_id,
        "at": NOW - hours_ago * HOUR,
        "user_key": "9a1b2c3d" + "0" * 24,
        "level": Level.CRISIS,
        "category": "suicidal",
        "rule": "suicidal.want_to_die",
        "channel": "telegram",
        "resources": ("lifeline", "outside_us"),
    }
    return Escalation(**{**fields, **changes})


@pytest.fixture
async def log(tmp_path: Path) -> Path:
    """A database with three escalations: two crisis (one 3 days old), one imminent; and two concerns today."""
    path = tmp_path / "data" / "bot.sqlite3"
    async with SqliteStore(path) as store:
        await store.record_escalations(
            [
                escalation("aaaaaa111111" + "0" * 20, 72),
                escalation(
                    "bbbbbb222222" + "0" * 20,
                    2 * RECENT,
                    level=Level.IMMINENT,
                    category="partner_danger",
                    rule="partner.strangled",
                    resources=("emergency", "dv_hotline", "lifeline", "outside_us"),
                ),
                escalation("cccccc333333" + "0" * 20, RECENT, excerpt="I want to die, my name is [name]"),
            ]
        )
        await store.add_counts({(time.strftime("%Y-%m-%d", time.gmtime(NOW)), "concerns"): 2})
    return path


def run(*args: str, db: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "UNHOOKED_DB": str(db), **(env or {})},
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_list_shows_a_table_oldest_first_with_a_summary(log: Path) -> None:
    result = run("escalations", "list", db=log)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["ID", "WHEN", "(UTC)", "LEVEL"]
    assert [line.split()[0] for line in lines[1:4]] == ["aaaaaa111111", "bbbbbb222222", "cccccc333333"]
    assert "imminent  partner_danger  partner.strangled" in lines[2]
    assert "9a1b2c3d" in lines[1] and "9a1b2c3d0000" not in lines[1]
    assert lines[4] == "    excerpt: I want to die, my name is [name]"
    assert lines[-1] == "3 escalations, 3 not acknowledged"


def test_list_filters_by_time_level_and_acknowledgement(log: Path) -> None:
    assert run("escalations", "list", "--since", "24h", db=log).stdout.splitlines()[-1].startswith("2 escalations")
    imminent = run("escalations", "list", "--level", "imminent", "--json", db=log).stdout.splitlines()
    assert [json.loads(line)["id"][:6] for line in imminent] == ["bbbbbb"]
    run("escalations", "ack", "bbbbbb", "--by", "sam", db=log)
    unacked = run("escalations", "list", "--unacked", "--json", db=log).stdout.splitlines()
    assert [json.loads(line)["id"][:6] for line in unacked] == ["aaaaaa", "cccccc"]


def test_list_json_has_stable_fields_and_no_text_unless_opted_in(log: Path) -> None:
    rows = [json.loads(line) for line in run("escalations", "list", "--json", db=log).stdout.splitlines()]
    assert set(rows[0]) == {
        "id", "at", "level", "category", "rule", "channel", "user_key", "resources", "excerpt",
        "alerted_at", "acked_by", "acked_at", "stored",
    }  # fmt: skip
    assert rows[0]["excerpt"] is None and rows[0]["at"].endswith("Z") and rows[0]["stored"] == "database"
    assert rows[1]["resources"] == ["emergency", "dv_hotline", "lifeline", "outside_us"]


def test_list_says_when_there_is_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite3"
    sqlite3_touch(path)
    assert run("escalations", "list", db=path).stdout == "no escalations\n"


def sqlite3_touch(path: Path) -> None:
    import asyncio

    async def make() -> None:
        async with SqliteStore(path):
            pass

    asyncio.run(make())


def test_list_shows_escalations_still_waiting_in_the_spool(log: Path) -> None:
    Spool(log.parent / "escalations.spool.jsonl").append(escalation("dddddd444444" + "0" * 20, 0.5))
    result = run("escalations", "list", db=log)
    assert "dddddd444444" in result.stdout and "(spooled: not in the database yet)" in result.stdout
    assert result.stdout.splitlines()[-1].endswith("1 waiting in the spool until the bot next starts")


def test_ack_by_prefix_and_the_first_acknowledgement_stays(log: Path) -> None:
    first = run("escalations", "ack", "cccccc333", "--by", "sam", db=log)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("acknowledged cccccc333333 (crisis, suicidal, ") and first.stdout.endswith(
        "by sam\n"
    )
    again = run("escalations", "ack", "cccccc333333", "--by", "kim", db=log)
    assert "was already acknowledged by sam" in again.stdout
    listed = run("escalations", "list", "--json", db=log).stdout.splitlines()
    assert json.loads(listed[2])["acked_by"] == "sam"


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        ("abc", "give at least 6 characters"),
        ("ffffff", "no escalation id starts with 'ffffff'"),
    ],
)
def test_ack_explains_what_went_wrong(log: Path, prefix: str, message: str) -> None:
    result = run("escalations", "ack", prefix, "--by", "sam", db=log)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_ack_refuses_an_ambiguous_prefix(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "bot.sqlite3"

    async def make() -> None:
        async with SqliteStore(path) as store:
            await store.record_escalations([escalation("abcdef1" + "0" * 25, 1), escalation("abcdef2" + "0" * 25, 2)])

    asyncio.run(make())
    result = run("escalations", "ack", "abcdef", "--by", "sam", db=path)
    assert result.returncode == 1 and "2 escalations start with 'abcdef'" in result.stderr


def test_stats_counts_by_day_level_and_category(log: Path) -> None:
    result = run("escalations", "stats", db=log)
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["DAY", "CONCERN", "CRISIS", "IMMINENT", "CATEGORIES"]
    assert lines[-1].split()[:4] == ["total", "2", "2", "1"]
    data = json.loads(run("escalations", "stats", "--json", "--since", "24h", db=log).stdout)
    today = data["days"][-1]
    assert (today["concern"], today["crisis"], today["imminent"]) == (2, 1, 1)
    assert today["categories"] == {"partner_danger": 1, "suicidal": 1}


def test_export_csv_and_jsonl(log: Path, tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run("escalations", "export", "--format", "csv", db=log).stdout)))
    assert [row["id"][:6] for row in rows] == ["aaaaaa", "bbbbbb", "cccccc"]
    assert rows[1]["resources"] == "emergency;dv_hotline;lifeline;outside_us"
    lines = run("escalations", "export", "--format", "jsonl", "--level", "imminent", db=log).stdout.splitlines()
    assert [json.loads(line)["rule"] for line in lines] == ["partner.strangled"]
    target = tmp_path / "out.csv"
    result = run("escalations", "export", "--output", str(target), db=log)
    assert result.stderr == f"wrote 3 escalations to {target}\n"
    assert target.stat().st_mode & 0o777 == 0o600 and target.read_text().startswith("id,at,level")


def test_a_missing_database_is_named_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite3"
    for verb in ("list", "stats", "export"):
        result = run("escalations", verb, db=missing)
        assert result.returncode == 1 and "there is no database at" in result.stderr and "UNHOOKED_DB" in result.stderr
    assert run("purge", db=missing).returncode == 1
    assert not missing.exists()


def test_a_bad_since_is_explained(log: Path) -> None:
    result = run("escalations", "list", "--since", "yesterday", db=log)
    assert result.returncode == 2 and "use a time like 24h, 90m, 7d, 2w or 2026-11-01" in result.stderr


def test_parse_since() -> None:
    assert parse_since("24h", now=100_000.0) == 100_000.0 - DAY
    assert parse_since("90m", now=10_000.0) == 10_000.0 - 5400
    assert parse_since("2w", now=2_000_000.0) == 2_000_000.0 - 14 * DAY
    assert parse_since("1970-01-02") == DAY
    with pytest.raises(ValueError, match="use a time like"):
        parse_since("soon")


def read_until(process: subprocess.Popen[bytes], needle: str, timeout: float = 15.0) -> str:
    """Read the process's stdout as it comes (unbuffered) until ``needle`` appears."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle.encode() not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{needle!r} not seen; got {seen.decode()!r}"
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"tail ended early; got {seen.decode()!r}"
            seen += chunk
    return seen.decode()


def start_tail(log: Path, *options: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "escalations", "tail", "--every", "0.1", "--db", str(log), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        preexec_fn=ctrl_c_works,
    )


def stop(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Press Ctrl-C, as an operator would, and wait for the process to end."""
    process.send_signal(signal.SIGINT)
    try:
        _, errors = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return process.returncode, errors.decode()


async def test_tail_follows_new_escalations_and_stops_cleanly_on_ctrl_c(log: Path) -> None:
    process = start_tail(log, "--last", "1")
    try:
        shown = read_until(process, "cccccc333333")
        assert "aaaaaa111111" not in shown
        async with SqliteStore(log) as store:
            await store.record_escalations([escalation("eeeeee555555" + "0" * 20, 0, category="farewell")])
            await store.record_escalations([escalation("ffffff666666" + "0" * 20, 80)])  # an old one, replayed
        later = read_until(process, "ffffff666666")
        assert "eeeeee555555" in later and "farewell" in later
    finally:
        returncode, errors = stop(process)
    assert returncode == 0, errors
    assert "Traceback" not in errors and "press Ctrl-C to stop" in errors


def test_tail_json_prints_one_object_per_line(log: Path) -> None:
    process = start_tail(log, "--json")
    try:
        shown = read_until(process, "cccccc333333")
    finally:
        returncode, _ = stop(process)
    assert returncode == 0
    assert [json.loads(line)["id"][:6] for line in shown.splitlines()] == ["aaaaaa", "bbbbbb", "cccccc"]


def test_purge_keeps_an_unacknowledged_escalation_and_says_so(log: Path) -> None:
    kept = run("purge", db=log, env={"UNHOOKED_RETENTION_DAYS": "2"})
    assert kept.returncode == 0, kept.stderr
    assert "kept 1 unacknowledged escalation past retention" in kept.stdout
    assert len(run("escalations", "list", "--json", db=log).stdout.splitlines()) == 3
    forced = run("purge", "--include-unacked", db=log, env={"UNHOOKED_RETENTION_DAYS": "2"})
    assert "1 escalation folded into anonymous daily counts" in forced.stdout and "kept" not in forced.stdout
    assert len(run("escalations", "list", "--json", db=log).stdout.splitlines()) == 2


def test_purge_folds_old_details_into_counts_and_is_safe_to_repeat(log: Path) -> None:
    assert run("escalations", "ack", "aaaaaa", "--by", "sam", db=log).returncode == 0
    result = run("purge", db=log, env={"UNHOOKED_RETENTION_DAYS": "2"})
    assert result.returncode == 0, result.stderr
    assert "(retention 2 days): 1 escalation folded into anonymous daily counts" in result.stdout
    assert "0 idle sessions deleted" in result.stdout
    again = run("purge", db=log, env={"UNHOOKED_RETENTION_DAYS": "2"})
    assert again.returncode == 0 and again.stdout.startswith("nothing to purge")
    listed = run("escalations", "list", "--json", db=log).stdout.splitlines()
    assert [json.loads(line)["id"][:6] for line in listed] == ["bbbbbb", "cccccc"]
    stats = json.loads(run("escalations", "stats", "--json", db=log).stdout)
    assert sum(day["crisis"] + day["imminent"] for day in stats["days"]) == 3  # the purged one is still counted


def test_purge_days_option_and_a_bad_setting(log: Path) -> None:
    assert "retention 1 day)" in run("purge", "--days", "1", db=log).stdout
    bad = run("purge", db=log, env={"UNHOOKED_RETENTION_DAYS": "forever"})
    assert bad.returncode == 1 and bad.stderr.startswith("unhooked: UNHOOKED_RETENTION_DAYS must be a whole number")


def test_read_commands_never_migrate_and_migrate_does_it_once(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    connection.execute("INSERT INTO _migrations VALUES ('0001_sessions', 'then')")
    connection.commit()
    refused = run("escalations", "list", db=db)
    assert refused.returncode == 1
    assert "lacks migrations 0002_escalations" in refused.stderr and "python -m bot migrate" in refused.stderr
    assert [row[0] for row in connection.execute("SELECT name FROM _migrations")] == ["0001_sessions"]
    connection.execute("DROP TABLE _migrations")
    connection.commit()
    fresh = tmp_path / "fresh.sqlite3"
    first = run("migrate", db=fresh)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"applied 11 migrations to {fresh}: 0001_sessions, ")
    again = run("migrate", db=fresh)
    assert again.stdout == f"{fresh} is up to date; nothing to migrate\n"
    assert run("escalations", "list", db=fresh).stdout == "no escalations\n"


def test_every_command_refuses_a_database_from_a_newer_version(log: Path) -> None:
    connection = sqlite3.connect(log)
    connection.execute("INSERT INTO _migrations VALUES ('0999_from_a_newer_version', 'later')")
    connection.commit()
    for command in (("escalations", "list"), ("migrate",), ("purge",)):
        result = run(*command, db=log)
        assert result.returncode == 1
        assert "has migration 0999_from_a_newer_version, which this version of Unhooked does not know" in result.stderr
