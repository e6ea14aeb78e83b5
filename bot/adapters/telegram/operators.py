"""Operators on Telegram: admins' /stats and /reload, the Acknowledge button, and alerts to the operators' chat."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from telegram import CallbackQuery, InlineKeyboardMarkup, Update
from telegram.error import BadRequest
from telegram.ext import Application, ContextTypes

from bot.adapters.telegram.outbound import ALERT
from bot.adapters.telegram.render import acknowledged, acknowledged_note, alerts, plain, reminder
from bot.adapters.telegram.replies import Replies
from bot.config import Settings
from bot.errors import StoreError
from bot.escalation import Alerter, Reminder
from bot.models import Escalation
from bot.reload import ContentAlert, Reload, reload_content_async
from bot.sessions import day_of
from bot.store import EscalationLog
from bot.watchdog import Notice

log = logging.getLogger("unhooked.telegram")

STATS_FIRST = (
    ("messages", "messages"),
    ("answers", "answers"),
    ("fallbacks", "fallbacks"),
    ("escalations.crisis", "crisis escalations"),
    ("escalations.imminent", "imminent escalations"),
    ("concerns", "concerns"),
)
MAX_PROBLEMS_SHOWN = 20
MAX_ALERT_CHARS = 3500
"""A refused-reload alert is cut here, well under Telegram's 4096 characters."""


class Operators:
    """The handlers for admins and the operators' chat."""

    def __init__(self, replies: Replies, settings: Settings, escalation_log: EscalationLog) -> None:
        self.replies = replies
        self.settings = settings
        self.escalation_log = escalation_log

    async def acknowledge(self, query: CallbackQuery, escalation_id: str) -> str | None:
        """An operator's Acknowledge tap: record who, and mark the alert; returns the note the tap shows."""
        operator_chat_id = self.replies.telegram.operator_chat_id
        chat = query.message.chat if query.message is not None else None
        if chat is None or operator_chat_id is None or chat.id != operator_chat_id:
            log.warning("an Acknowledge tap from outside the operators' chat was ignored")
            return None
        user = query.from_user
        by = f"telegram:{user.id}" + (f" @{user.username}" if user.username else "")
        try:
            escalation = await self.escalation_log.acknowledge(escalation_id, by, self.replies.clock())
        except StoreError as error:
            log.error("could not record an acknowledgement: %s", error)
            return "Not recorded: the database is not answering. Please try again."
        if escalation is None:
            return "This escalation is no longer in the log."
        with contextlib.suppress(BadRequest):  # already edited by an earlier tap
            await _mark_acknowledged(query, escalation)
        return "Acknowledged."

    async def on_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Admins: today's counts."""
        day = day_of(self.replies.clock())
        sessions = self.replies.engine.sessions
        try:
            await sessions.flush()
            counts = await self.escalation_log.counts(day)
        except StoreError as error:
            await self.replies.send(update, [plain(f"The database is not answering: {error}")])
            return
        lines = [f"Today ({day}, UTC):"]
        lines += [f"{label}: {counts.pop(name, 0)}" for name, label in STATS_FIRST]
        lines += [f"{name}: {value}" for name, value in sorted(counts.items())]
        await self.replies.send(update, [plain("\n".join(lines))])

    async def on_reload(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Admins: load the content again and report its problems."""
        engine = self.replies.engine
        result = await reload_content_async(engine, self.settings.content_dir)
        catalog = engine.catalog
        if result.applied and catalog is not None:
            lines = [f"Content reloaded: {len(catalog.intents)} intents, {len(catalog.passages)} passages."]
        else:
            lines = [f"Reload refused ({len(result.errors)} errors); the previous content keeps serving."]
        lines += [str(problem) for problem in result.problems[:MAX_PROBLEMS_SHOWN]]
        if len(result.problems) > MAX_PROBLEMS_SHOWN:
            lines.append(f"... and {len(result.problems) - MAX_PROBLEMS_SHOWN} more")
        await self.replies.send(update, [plain("\n".join(lines))])


async def _mark_acknowledged(query: CallbackQuery, escalation: Escalation) -> None:
    """Edit the alert: one escalation's alert shows who acknowledged it; an alert of several loses that button."""
    markup = query.message.reply_markup if query.message is not None else None
    rows = markup.inline_keyboard if markup is not None else ()
    if len(rows) <= 1 or query.message is None:
        await query.edit_message_text(acknowledged(escalation), reply_markup=None)
        return
    left = [row for row in rows if all(button.callback_data != f"ack:{escalation.id}" for button in row)]
    await query.edit_message_text(
        f"{query.message.text_html}\n\n{acknowledged_note(escalation, named=True)}",
        reply_markup=InlineKeyboardMarkup(left) if left else None,
    )


def telegram_content_alert(application: Application, chat_id: int) -> ContentAlert:
    """Refused content reloads to the operators' chat, with the ``check`` lines that refused them."""

    async def send_content_alert(result: Reload) -> None:
        text = result.describe()
        if len(text) > MAX_ALERT_CHARS:
            text = text[:MAX_ALERT_CHARS].rsplit("\n", 1)[0] + "\n... (run `python -m bot check` for the rest)"
        await application.bot.send_message(chat_id, plain(text).html, rate_limit_args=ALERT)

    return send_content_alert


def telegram_notice(application: Application, chat_id: int) -> Notice:
    """Notices to the operators' chat, one plain message each (a database lost or unusable)."""

    async def send_notice(text: str) -> None:
        await application.bot.send_message(chat_id, plain(text).html, rate_limit_args=ALERT)

    return send_notice


def telegram_alerter(application: Application, chat_id: int) -> Alerter:
    """Escalation alerts to the operators' chat (several in one message), with an Acknowledge button each."""

    async def send_alert(escalations: Sequence[Escalation]) -> None:
        message = alerts(escalations)
        await application.bot.send_message(chat_id, message.html, reply_markup=message.buttons, rate_limit_args=ALERT)

    return send_alert


def telegram_reminder(application: Application, chat_id: int) -> Reminder:
    """Reminders of unacknowledged imminent escalations to the operators' chat, with the Acknowledge button."""

    async def send_reminder(escalation: Escalation, number: int, of: int) -> None:
        message = reminder(escalation, number, of)
        await application.bot.send_message(chat_id, message.html, reply_markup=message.buttons, rate_limit_args=ALERT)

    return send_reminder
