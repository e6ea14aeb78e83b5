"""Redacted excerpts: stored only when an operator opts in, and stripped of what could identify anyone."""

from __future__ import annotations

import json
import logging

import pytest

from bot.content import Catalog
from bot.engine import Engine
from bot.escalation import log_line
from bot.redact import EXCERPT_CHARS, excerpt, redact
from bot.store.memory import MemoryStore
from tests.conftest import SECRET, Chat


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name is Sarah Jones and I want to die", "My name is [name] and I want to die"),
        ("i am called jess, his name is tom", "i am called [name], his name is [name]"),
        ("call me at 555-123-4567 or +1 (555) 123 4567", "call me at [number] or [number]"),
        ("write to sarah.j@example.com", "write to [email]"),
        ("my insta is @sarah_j", "my insta is [handle]"),
        ("see https://example.com/x?y=1 and www.site.org", "see [link] and [link]"),
        ("I live at 12 Oak Street", "I live at [number] [name]"),
        ("yesterday Mark hit me", "yesterday [name] hit me"),
        ("I want to die", "I want to die"),
        ("I WANT TO DIE", "I WANT TO DIE"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_an_excerpt_is_capped_at_a_word() -> None:
    cut = excerpt("I want to die " * 40)
    assert len(cut) <= EXCERPT_CHARS and cut.endswith("…") and not cut.endswith(" …")


def test_no_digit_survives() -> None:
    assert not any(ch.isdigit() for ch in redact("pin 1234, 5 pills, 2026-11-29, room 12b, 1-800-799-7233"))


async def test_excerpts_are_stored_only_when_opted_in(catalog: Catalog, clock, caplog) -> None:
    text = "My name is Ana, I'm at 14 Elm St and I want to kill myself"
    plain, opted = MemoryStore(), MemoryStore()
    for store, excerpts in ((plain, False), (opted, True)):
        engine = Engine(store, SECRET, catalog, clock=clock, excerpts=excerpts)
        with caplog.at_level(logging.WARNING, logger="unhooked.escalations"):
            await Chat(engine).say(text)
        await engine.aclose()
    assert (await plain.escalations())[0].excerpt is None
    stored = (await opted.escalations())[0].excerpt
    assert stored == "My name is [name], I'm at [number] [name] and I want to kill myself"
    assert "Ana" not in caplog.text and "kill myself" not in caplog.text and "excerpt" not in caplog.text
    assert "excerpt" not in json.loads(log_line((await opted.escalations())[0]))
