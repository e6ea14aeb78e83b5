"""Replies to one chat: each update's turn, sending in order, and what a person blocking the bot stops."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from telegram import LinkPreviewOptions, Update
from telegram.constants import ChatType, ParseMode
from telegram.error import BadRequest, Forbidden
from telegram.ext import Application

from bot.adapters.telegram.health import TelegramMetrics
from bot.adapters.telegram.outbound import CRISIS, Send
from bot.adapters.telegram.render import Outgoing, render
from bot.config import TelegramSettings
from bot.engine import Engine
from bot.models import Incoming, ReplyKind, Session

log = logging.getLogger("unhooked.telegram")

CHANNEL = "telegram"
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


@dataclass
class Turn:
    """What answering one update did, so the journal can cross it off with the session and the ids for /erase."""

    chat_key: str | None
    """The chat's keyed hash in a private chat; ``None`` elsewhere (nothing to erase there)."""
    message_ids: list[int] = field(default_factory=list)
    blocked: bool = False
    session: Session | None = None
    """The session the engine's answer left, written with the update's answered mark (after the replies went)."""


class Replies:
    """Sends to an update's chat, keeps each update's turn, and runs people's words through the engine."""

    def __init__(
        self,
        engine: Engine,
        telegram: TelegramSettings,
        application: Application,
        *,
        clock: Callable[[], float] = time.time,
        metrics: TelegramMetrics | None = None,
    ) -> None:
        self.engine = engine
        self.telegram = telegram
        self.application = application
        self.clock = clock
        self.metrics = metrics
        self.turns: dict[int, Turn] = {}

    def key(self, telegram_id: int) -> str:
        """The keyed hash for a Telegram user or chat id; private chats share the id of their person."""
        return self.engine.user_key(CHANNEL, str(telegram_id))

    def begin(self, update: Update) -> Turn:
        """Start the update's turn (its own message id counts among the messages /erase deletes)."""
        chat = update.effective_chat
        turn = Turn(self.key(chat.id) if chat is not None and chat.type == ChatType.PRIVATE else None)
        if update.message is not None and turn.chat_key is not None:
            turn.message_ids.append(update.message.message_id)
        self.turns[update.update_id] = turn
        return turn

    async def send(
        self, update: Update, messages: Sequence[Outgoing], how: Send | None = None, kind: str = "command"
    ) -> None:
        """Send to the update's chat in order; stop if the person blocked the bot, skip what Telegram refuses.

        ``kind`` labels the messages in ``unhooked_replies_sent_total``: a reply's kind, or ``command``.
        """
        chat_id = update.effective_chat.id
        turn = self.turns.get(update.update_id)
        for message in messages:
            if turn is not None and turn.blocked:
                break
            try:
                message_id = await self._send_one(chat_id, message, how)
            except Forbidden:
                self.blocked(chat_id, turn)
                break
            except BadRequest as error:
                log.error("Telegram refused a message to %s: %s", self.key(chat_id)[:8], error)
                continue
            self.engine.metrics.replies.inc(kind)
            if turn is not None and turn.chat_key is not None:
                turn.message_ids.append(message_id)

    async def _send_one(self, chat_id: int, message: Outgoing, how: Send | None) -> int:
        """``sendMessage`` with the bot's defaults; returns the new message's id.

        Through ``do_api_request`` rather than ``send_message``: the answer is read for its message id
        alone instead of being built into a ``Message`` (about a tenth of the bot's cost per reply in
        ``python -m bench telegram``). ``Defaults`` do not apply there, so they are spelled out.
        """
        done = await self.application.bot.do_api_request(
            "sendMessage",
            {
                "chat_id": chat_id,
                "text": message.html,
                "parse_mode": ParseMode.HTML,
                "reply_markup": message.buttons,
                "protect_content": self.telegram.protect_content and not message.forwardable,
                "link_preview_options": NO_PREVIEW,
            },
            rate_limit_args=how,
        )
        return int(done["message_id"])

    def blocked(self, chat_id: int, turn: Turn | None) -> None:
        """The person blocked the bot: nothing more goes to them in this turn, and it is counted."""
        if turn is not None:
            turn.blocked = True
        self.engine.sessions.count("blocked", self.clock())
        if self.metrics is not None:
            self.metrics.blocked.inc()
        log.info("%s has blocked the bot; not retrying", self.key(chat_id)[:8])

    async def answer(self, update: Update, text: str, topic: str | None = None) -> None:
        """Run a person's words through the engine (crisis screen first) and send its replies.

        The session the engine left goes with the turn: it is written with the update's answered mark.
        """
        outcome = await self.engine.handle(Incoming(str(update.effective_user.id), text, CHANNEL, topic=topic))
        turn = self.turns.get(update.update_id)
        if turn is not None:
            turn.session = outcome.session
        for reply in outcome.replies:
            how = CRISIS if reply.kind is ReplyKind.CRISIS else None
            await self.send(update, render(reply), how, reply.kind.value)
