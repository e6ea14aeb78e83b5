"""Replies as Telegram messages: escaped HTML, split at sentence ends under the length limit, topic buttons."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.adapters.telegram import texts
from bot.models import Escalation, Reply, Suggestion

MAX_CHARS = 4096
"""Telegram's limit for one message, counted in UTF-16 code units after the HTML is parsed."""
MAX_CALLBACK_BYTES = 64
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


@dataclass(frozen=True)
class Outgoing:
    """One Telegram message: HTML text and optional buttons."""

    html: str
    buttons: InlineKeyboardMarkup | None = None
    forwardable: bool = False
    """Sent without ``protect_content`` whatever the setting: the crisis card, so a person can pass it on."""


def units(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def _cut(text: str, limit: int) -> int:
    """Where to end the first piece of ``text``: a sentence end, else a space, else the limit itself."""
    best = 0
    for found in _SENTENCE_END.finditer(text):
        if units(text[: found.start()]) > limit:
            break
        best = found.end()
    if best:
        return best
    space = text.rfind(" ", 0, limit + 1)
    if space > 0 and units(text[:space]) <= limit:
        return space + 1
    end = limit
    while units(text[:end]) > limit:  # a long run of characters outside the Basic Multilingual Plane
        end -= 1
    return end


def split_text(text: str, limit: int = MAX_CHARS) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` units, at sentence ends where possible."""
    pieces = []
    rest = text.strip()
    while units(rest) > limit:
        end = _cut(rest, limit)
        pieces.append(rest[:end].strip())
        rest = rest[end:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def topic_buttons(suggestions: Sequence[Suggestion]) -> InlineKeyboardMarkup | None:
    """One button per suggested topic; a tap sends ``topic:<intent>``."""
    rows = [
        [InlineKeyboardButton(s.label, callback_data=f"topic:{s.intent}")]
        for s in suggestions
        if len(f"topic:{s.intent}".encode()) <= MAX_CALLBACK_BYTES
    ]
    return InlineKeyboardMarkup(rows) if rows else None


def render(reply: Reply) -> list[Outgoing]:
    """A reply as one or more messages; the source goes under the last piece, the buttons on it."""
    source = f"— {reply.source}" if reply.source else None
    pieces = split_text(reply.text) or [""]
    parts = [html.escape(piece, quote=False) for piece in pieces]
    if source is not None:
        if units(f"{pieces[-1]}\n\n{source}") <= MAX_CHARS:
            parts[-1] += f"\n\n<i>{html.escape(source, quote=False)}</i>"
        else:
            parts.append(f"<i>{html.escape(source, quote=False)}</i>")
    messages = [Outgoing(part) for part in parts]
    messages[-1] = Outgoing(messages[-1].html, topic_buttons(reply.suggestions))
    return messages


def plain(text: str, buttons: InlineKeyboardMarkup | None = None) -> Outgoing:
    """One of the bot's own lines, escaped."""
    return Outgoing(html.escape(text, quote=False), buttons)


def crisis_card() -> Outgoing:
    """Who to call or text: the one message sent forwardable, so the hotlines can go to a friend."""
    return Outgoing(html.escape(texts.CRISIS, quote=False), forwardable=True)


def forget_buttons() -> InlineKeyboardMarkup:
    """Yes and no for /forget."""
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(texts.FORGET_YES, callback_data="forget:yes")],
         [InlineKeyboardButton(texts.FORGET_NO, callback_data="forget:no")]]
    )  # fmt: skip


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def alert(escalation: Escalation) -> Outgoing:
    """The operators' alert: every field of the record (its last copy if nothing stored it), never the message."""
    button = InlineKeyboardButton(texts.ACKNOWLEDGE, callback_data=f"ack:{escalation.id}")
    return Outgoing("\n".join(_alert_lines(escalation)), InlineKeyboardMarkup([[button]]))


def alerts(escalations: Sequence[Escalation]) -> Outgoing:
    """Several escalations in one operators' alert, numbered, with one Acknowledge button each."""
    if len(escalations) == 1:
        return alert(escalations[0])
    blocks = [f"<b>{len(escalations)} escalations</b>"]
    buttons = []
    for number, escalation in enumerate(escalations, 1):
        blocks.append(f"{number}. " + "\n".join(_alert_lines(escalation)))
        buttons.append([InlineKeyboardButton(f"{texts.ACKNOWLEDGE} {number}", callback_data=f"ack:{escalation.id}")])
    return Outgoing("\n\n".join(blocks), InlineKeyboardMarkup(buttons))


def _alert_lines(escalation: Escalation) -> list[str]:
    e = escalation
    lines = [
        f"<b>Escalation: {html.escape(e.level.value.upper())}</b>",
        f"Category: {html.escape(e.category)}",
        f"Time: {_when(e.at)}",
        f"Person: <code>{html.escape(e.user_key[:12])}</code> (anonymous key)",
        f"Resources shown: {html.escape(', '.join(e.resources))}",
        f"Rule: {html.escape(e.rule)} ({html.escape(e.channel)})",
        f"Id: <code>{html.escape(e.id)}</code>",
    ]
    if e.excerpt:
        lines.append(f"Excerpt (operator opt-in): {html.escape(e.excerpt, quote=False)}")
    return lines


def reminder(escalation: Escalation, number: int, of: int) -> Outgoing:
    """A reminder of an alert nobody acknowledged: which reminder it is, then the alert with its button."""
    first = alert(escalation)
    return Outgoing(f"<b>Reminder {number} of {of}: not acknowledged yet</b>\n{first.html}", first.buttons)


def acknowledged(escalation: Escalation) -> str:
    """The alert once acknowledged: the same lines, and who acknowledged it when (no button)."""
    return f"{alert(escalation).html}\n\n{acknowledged_note(escalation)}"


def acknowledged_note(escalation: Escalation, *, named: bool = False) -> str:
    """Who acknowledged an escalation when; ``named`` says which (the line added to an alert of several)."""
    by = html.escape(escalation.acked_by or "someone")
    when = _when(escalation.acked_at) if escalation.acked_at is not None else "an unknown time"
    which = f"<code>{html.escape(escalation.id)}</code>: " if named else ""
    return f"✅ {which}Acknowledged by {by} at {when}"
