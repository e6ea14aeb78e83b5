"""What operators do with the escalation log: list, follow, acknowledge, count, export and purge."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from bot.errors import BotError
from bot.models import Escalation, Level
from bot.spool import Spools
from bot.store import EscalationLog, Purged, codec, day_of

_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
SHORT_ID = 12
"""How many characters of an escalation id the table shows; ``ack`` accepts any unique prefix."""
MIN_PREFIX = 6
FEED_PAGE = 1000


class OperatorError(BotError):
    """An operator command cannot do what was asked; the message says why."""


def parse_since(text: str, now: float | None = None) -> float:
    """A point in time from ``24h``, ``90m``, ``7d``, ``2w`` (ago) or a UTC date/time like ``2026-11-01``."""
    now = time.time() if now is None else now
    found = _RELATIVE.match(text.strip().lower())
    if found:
        return now - int(found.group(1)) * _UNITS[found.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"use a time like 24h, 90m, 7d, 2w or 2026-11-01; {text!r} is none of these") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def when(at: float | None, *, seconds: bool = False) -> str:
    """A timestamp as UTC text, e.g. ``2026-11-29 16:05``; empty for ``None``."""
    if at is None:
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def _iso(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Entry:
    """An escalation as operators see it, and where it is kept."""

    escalation: Escalation
    spooled: bool = False
    """Still in the spool file, waiting to be replayed into the database at the bot's next start."""


async def entries(
    store: EscalationLog,
    spool: Spools | None,
    *,
    since: float | None = None,
    level: Level | None = None,
    unacked: bool = False,
) -> list[Entry]:
    """Stored escalations plus spooled ones not yet in the database, oldest first, filtered."""
    stored = await store.escalations(since=since, level=level, unacked=unacked)
    known = {escalation.id for escalation in await store.escalations(since=since)}
    waiting = [
        escalation
        for escalation in (spool.read() if spool else [])
        if escalation.id not in known
        and (since is None or escalation.at >= since)
        and (level is None or escalation.level is level)
    ]
    found = [Entry(e) for e in stored] + [Entry(e, spooled=True) for e in waiting]
    return sorted(found, key=lambda entry: (entry.escalation.at, entry.escalation.id))


def as_record(entry: Entry) -> dict[str, Any]:
    """One escalation for machines: stable keys, ISO 8601 UTC times, no message text unless opted in."""
    e = entry.escalation
    record = codec.to_record(e)
    record.update(at=_iso(e.at), alerted_at=_iso(e.alerted_at), acked_at=_iso(e.acked_at))
    record["stored"] = "spool" if entry.spooled else "database"
    return record


COLUMNS = ("ID", "WHEN (UTC)", "LEVEL", "CATEGORY", "RULE", "CHANNEL", "PERSON", "ALERTED", "ACK")


def _row(entry: Entry) -> tuple[str, ...]:
    e = entry.escalation
    if entry.spooled:
        ack = "(spooled: not in the database yet)"
    elif e.acked_by:
        ack = f"{e.acked_by} {when(e.acked_at)}"
    else:
        ack = "-"
    return (
        e.id[:SHORT_ID],
        when(e.at),
        e.level.value,
        e.category,
        e.rule,
        e.channel,
        e.user_key[:8],
        "yes" if e.alerted_at else "no",
        ack,
    )


FOLLOW_WIDTHS = (SHORT_ID, 16, 8, 22, 30, 8, 8, 7, 0)
"""Column widths for ``tail``, whose rows come a few at a time and should still line up."""


def table(found: list[Entry], *, header: bool = True, minimum: tuple[int, ...] = ()) -> str:
    """Escalations as an aligned text table, one per line, a redacted excerpt under its row when stored."""
    rows = [_row(entry) for entry in found]
    least = minimum or tuple(len(title) for title in COLUMNS)
    widths = [max([least[i], *(len(row[i]) for row in rows)]) for i in range(len(COLUMNS))]
    lines = []
    if header:
        lines.append("  ".join(title.ljust(width) for title, width in zip(COLUMNS, widths, strict=True)).rstrip())
    for entry, row in zip(found, rows, strict=True):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if entry.escalation.excerpt:
            lines.append(f"    excerpt: {entry.escalation.excerpt}")
    return "\n".join(lines)


def summary(found: list[Entry]) -> str:
    """The line under a listing: how many, how many still need someone to look."""
    if not found:
        return "no escalations"
    unacked = sum(1 for entry in found if not entry.escalation.acked_by)
    spooled = sum(1 for entry in found if entry.spooled)
    parts = [f"{len(found)} escalation{'s' if len(found) != 1 else ''}", f"{unacked} not acknowledged"]
    if spooled:
        parts.append(f"{spooled} waiting in the spool until the bot next starts")
    return ", ".join(parts)


async def acknowledge(store: EscalationLog, prefix: str, by: str, now: float) -> tuple[Escalation, bool]:
    """Acknowledge the escalation whose id starts with ``prefix``; return it and whether it was already acked."""
    prefix = prefix.strip().lower()
    if len(prefix) < MIN_PREFIX:
        raise OperatorError(f"give at least {MIN_PREFIX} characters of the escalation id (see `escalations list`)")
    if not by.strip():
        raise OperatorError("--by needs the name of the person acknowledging, e.g. --by sam")
    matches = [e for e in await store.escalations() if e.id.startswith(prefix)]
    if not matches:
        raise OperatorError(f"no escalation id starts with {prefix!r}; check `escalations list`")
    if len(matches) > 1:
        ids = ", ".join(e.id[:SHORT_ID] for e in matches[:5])
        raise OperatorError(f"{len(matches)} escalations start with {prefix!r} ({ids}); give more characters")
    before = matches[0]
    after = await store.acknowledge(before.id, by.strip(), now)
    if after is None:  # deleted between the two calls, e.g. by a purge
        raise OperatorError(f"escalation {before.id[:SHORT_ID]} is gone; it may have just been purged")
    return after, before.acked_by is not None


@dataclass
class DayStats:
    """The counts of one UTC day: concerns (counted only), and escalations by level and category."""

    day: str
    concern: int = 0
    levels: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)


async def stats(store: EscalationLog, spool: Spools | None, since: float | None = None) -> list[DayStats]:
    """Counts by day, level and category: stored and spooled escalations plus those already folded by a purge."""
    first_day = day_of(since) if since is not None else None
    days: dict[str, DayStats] = defaultdict(lambda: DayStats(""))

    def day(name: str) -> DayStats:
        found = days[name]
        found.day = name
        return found

    for entry in await entries(store, spool, since=since):
        e = entry.escalation
        day(day_of(e.at)).levels[e.level.value] += 1
        day(day_of(e.at)).categories[e.category] += 1
    for (when_, name), value in (await store.all_counts(first_day)).items():
        parts = name.split(".")
        if name == "concerns":
            day(when_).concern += value
        elif len(parts) == 3 and parts[0] == "escalations":
            day(when_).levels[parts[1]] += value
            day(when_).categories[parts[2]] += value
    return [days[name] for name in sorted(days)]


def stats_table(rows: list[DayStats]) -> str:
    """Counts as a table for people, with a total line."""
    if not rows:
        return "no concerns or escalations counted"
    header = f"{'DAY':<10}  {'CONCERN':>7}  {'CRISIS':>6}  {'IMMINENT':>8}  CATEGORIES"
    lines = [header]
    total = DayStats("total")
    for row in rows:
        total.concern += row.concern
        total.levels.update(row.levels)
        total.categories.update(row.categories)
    for row in [*rows, total]:
        categories = ", ".join(f"{name} {count}" for name, count in row.categories.most_common()) or "-"
        lines.append(
            f"{row.day:<10}  {row.concern:>7}  {row.levels['crisis']:>6}  {row.levels['imminent']:>8}  {categories}"
        )
    return "\n".join(lines)


def stats_json(rows: list[DayStats]) -> str:
    """Counts for machines: one object with a list of days."""
    return json.dumps(
        {
            "days": [
                {
                    "day": row.day,
                    "concern": row.concern,
                    "crisis": row.levels["crisis"],
                    "imminent": row.levels["imminent"],
                    "categories": dict(sorted(row.categories.items())),
                }
                for row in rows
            ]
        },
        sort_keys=True,
    )


EXPORT_FIELDS = tuple(as_record(Entry(Escalation("", 0.0, "", Level.CRISIS, "", "", "", ()))))


def export(found: list[Entry], out: TextIO, fmt: str) -> None:
    """Write escalations as CSV (a header row, resources joined with ``;``) or JSON lines."""
    if fmt == "jsonl":
        for entry in found:
            out.write(json.dumps(as_record(entry), ensure_ascii=False) + "\n")
        return
    writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS, lineterminator="\n")
    writer.writeheader()
    for entry in found:
        record = as_record(entry)
        record["resources"] = ";".join(record["resources"])
        writer.writerow(record)


def render_export(found: list[Entry], fmt: str) -> str:
    """The export as one string."""
    buffer = io.StringIO()
    export(found, buffer, fmt)
    return buffer.getvalue()


async def follow(
    store: EscalationLog,
    write: Callable[[str], None],
    *,
    last: int = 10,
    every: float = 1.0,
    as_json: bool = False,
    stop: asyncio.Event | None = None,
) -> None:
    """Print the last ``last`` escalations, then each new one as it is stored, until cancelled or ``stop`` is set."""
    recent: list[tuple[int, Escalation]] = []
    position = 0
    while page := await store.escalation_feed(position, FEED_PAGE):
        recent = (recent + page)[-last:] if last else []
        position = page[-1][0]
    printed_header = False

    def show(batch: list[tuple[int, Escalation]]) -> None:
        nonlocal printed_header
        found = [Entry(escalation) for _, escalation in batch]
        if as_json:
            text = "".join(json.dumps(as_record(entry), ensure_ascii=False) + "\n" for entry in found)
        else:
            text = table(found, header=not printed_header, minimum=FOLLOW_WIDTHS) + "\n"
            printed_header = True
        write(text)

    if recent:
        show(recent)
    stop = stop or asyncio.Event()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every)
        batch = await store.escalation_feed(position, FEED_PAGE)
        if batch:
            position = batch[-1][0]
            show(batch)


def purge_report(result: Purged, before: float, days: int) -> str:
    """What a purge did, in one or two sentences."""
    cutoff = f"older than {when(before)} UTC (retention {days} day{'s' if days != 1 else ''})"
    if not result.escalations and not result.sessions and not result.kept:
        return f"nothing to purge: no escalation details or idle sessions {cutoff}"
    folded = ""
    if result.escalations:
        span = result.days[0] if len(result.days) == 1 else f"{result.days[0]} to {result.days[-1]}"
        folded = (
            f"{result.escalations} escalation{'s' if result.escalations != 1 else ''} folded into anonymous "
            f"daily counts ({span}) and deleted; "
        )
    sessions = f"{result.sessions} idle session{'s' if result.sessions != 1 else ''} deleted"
    kept = ""
    if result.kept:
        kept = (
            f"; kept {result.kept} unacknowledged escalation{'s' if result.kept != 1 else ''} past retention"
            " (acknowledge them with `escalations ack`, or purge them anyway with --include-unacked)"
        )
    return f"purged records {cutoff}: {folded}{sessions}{kept}"


def retention_cutoff(now: float, days: int) -> float:
    """The moment before which details are purged."""
    return (datetime.fromtimestamp(now, UTC) - timedelta(days=days)).timestamp()


async def list_text(
    store: EscalationLog,
    spool: Spools | None,
    *,
    since: float | None = None,
    level: Level | None = None,
    unacked: bool = False,
    as_json: bool = False,
) -> str:
    """``escalations list``: a table and a summary line, or one JSON object per line."""
    found = await entries(store, spool, since=since, level=level, unacked=unacked)
    if as_json:
        return "".join(json.dumps(as_record(entry), ensure_ascii=False) + "\n" for entry in found)
    return (table(found) + "\n" if found else "") + summary(found) + "\n"


async def ack_text(store: EscalationLog, prefix: str, by: str, now: float) -> str:
    """``escalations ack``: what was acknowledged, or who had already done it."""
    escalation, already = await acknowledge(store, prefix, by, now)
    what = f"{escalation.id[:SHORT_ID]} ({escalation.level.value}, {escalation.category}, {when(escalation.at)} UTC)"
    if already:
        return f"{what} was already acknowledged by {escalation.acked_by} at {when(escalation.acked_at)} UTC\n"
    return f"acknowledged {what} by {escalation.acked_by}\n"


async def stats_text(store: EscalationLog, spool: Spools | None, since: float | None, *, as_json: bool = False) -> str:
    """``escalations stats``: a table with totals, or one JSON object."""
    rows = await stats(store, spool, since)
    return (stats_json(rows) if as_json else stats_table(rows)) + "\n"


async def export_text(
    store: EscalationLog, spool: Spools | None, fmt: str, *, since: float | None = None, level: Level | None = None
) -> tuple[str, int]:
    """``escalations export``: the text and how many escalations it holds."""
    found = await entries(store, spool, since=since, level=level)
    return render_export(found, fmt), len(found)


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read: an export may hold excerpts."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


async def purge_text(store: EscalationLog, days: int, now: float, *, include_unacked: bool = False) -> str:
    """``purge``: fold and delete what is past retention (unacknowledged escalations only if asked), and say so."""
    before = retention_cutoff(now, days)
    return purge_report(await store.purge(before, keep_unacked=not include_unacked), before, days) + "\n"
