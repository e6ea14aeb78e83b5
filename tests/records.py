"""Sessions and escalations to store in tests: one of each with sensible values, changed by keyword."""

from __future__ import annotations

from bot.models import Escalation, Level, Session


def session(key: str = "k1", **changes) -> Session:
    base = Session(user_key=key, first_seen=100.0, last_seen=200.0, turns=3, last_intent="miss_them")
    base.shown = {"miss_them.hooked", "no_contact.purpose"}
    for name, value in changes.items():
        setattr(base, name, value)
    return base


def escalation(escalation_id: str, **changes) -> Escalation:
    fields = {
        "id": escalation_id,
        "at": 100.0,
        "user_key": "k1",
        "level": Level.CRISIS,
        "category": "suicidal",
        "rule": "suicide.word",
        "channel": "test",
        "resources": ("lifeline", "outside_us"),
    }
    return Escalation(**{**fields, **changes})
