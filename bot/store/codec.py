"""The one escalation record format (a dict of plain values, its JSON line, its database row), and session rows."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.models import Escalation, Level, Session, Track

FIELDS = (
    "id",
    "at",
    "level",
    "category",
    "rule",
    "channel",
    "user_key",
    "resources",
    "excerpt",
    "alerted_at",
    "acked_by",
    "acked_at",
)
"""The record's fields, in the order exports show them and database statements name them."""


def to_record(escalation: Escalation) -> dict[str, Any]:
    """An escalation as plain values: the level as its name, the resources as a list."""
    record = {name: getattr(escalation, name) for name in FIELDS}
    record["level"] = escalation.level.value
    record["resources"] = list(escalation.resources)
    return record


def from_record(record: Mapping[str, Any]) -> Escalation:
    """The escalation ``to_record`` gave; raises ``ValueError`` on anything else."""
    try:
        values = {name: record[name] for name in FIELDS if name in record}
        values["level"] = Level(record["level"])
        values["resources"] = tuple(record["resources"])
        return Escalation(**values)
    except (KeyError, TypeError) as error:
        raise ValueError(f"not an escalation record: {error}") from error


def to_json(escalation: Escalation) -> str:
    """One escalation as one line of JSON, keys sorted."""
    return json.dumps(to_record(escalation), sort_keys=True)


def from_json(line: str) -> Escalation:
    """The escalation ``to_json`` wrote; raises ``ValueError`` on anything else."""
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError("not an object")
    return from_record(record)


def to_row(escalation: Escalation) -> tuple[Any, ...]:
    """An escalation as a database row in ``FIELDS`` order, its resources as JSON text."""
    record = to_record(escalation)
    record["resources"] = json.dumps(record["resources"])
    return tuple(record[name] for name in FIELDS)


def from_row(row: Sequence[Any]) -> Escalation:
    """The escalation of a database row in ``FIELDS`` order."""
    record = dict(zip(FIELDS, row, strict=True))
    record["resources"] = json.loads(record["resources"])
    return from_record(record)


def session_from_row(user_key: str, row: Sequence[Any]) -> Session:
    """The session of a row holding ``first_seen`` to ``crisis_track``."""
    first_seen, last_seen, turns, last_intent, shown, crisis_level, crisis_at, crisis_track = row
    return Session(
        user_key=user_key,
        first_seen=first_seen,
        last_seen=last_seen,
        turns=turns,
        last_intent=last_intent,
        shown=set(json.loads(shown)),
        crisis_level=Level(crisis_level) if crisis_level else None,
        crisis_at=crisis_at,
        crisis_track=Track(crisis_track) if crisis_track else None,
    )


def session_to_row(session: Session) -> tuple[Any, ...]:
    """A session as a row: its key, then ``first_seen`` to ``crisis_track``; the shown passages as JSON text."""
    return (
        session.user_key,
        session.first_seen,
        session.last_seen,
        session.turns,
        session.last_intent,
        json.dumps(sorted(session.shown)),
        session.crisis_level.value if session.crisis_level else None,
        session.crisis_at,
        session.crisis_track.value if session.crisis_track else None,
    )


def reminders(rows: Sequence[Sequence[Any]]) -> dict[str, list[float]]:
    """(escalation id, time) rows, oldest reminder first within each escalation, as times by escalation id."""
    found: dict[str, list[float]] = {}
    for escalation_id, at in rows:
        found.setdefault(escalation_id, []).append(at)
    return found
