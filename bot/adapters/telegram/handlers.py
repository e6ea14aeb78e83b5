"""Unhooked on Telegram: the handlers that turn updates into engine calls and replies."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from telegram import CallbackQuery, InlineKeyboardMarkup, LinkPreviewOptions, Update
from telegram.constants import ChatType, ParseMode
from telegram.error import BadRequest, Forbidden, TelegramError
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, MessageHandler, filters
from telegram.warnings import PTBUserWarning

from bot import safety
from bot.adapters.telegram import texts
from bot.adapters.telegram.health import TelegramMetrics
from bot.adapters.telegram.inbound import STORE_TIMEOUT, Journal
from bot.adapters.telegram.outbound import ALERT, CRISIS, Send
from bot.adapters.telegram.render import (
    Outgoing,
    acknowledged,
    alert,
    forget_buttons,
    plain,
    render,
    topic_buttons,
)
from bot.config import Settings, TelegramSettings
from bot.engine import APOLOGY, Engine
from bot.errors import StoreError
from bot.escalation import Alerter
from bot.models import Detection, Escalation, Incoming, Level, ReplyKind, Suggestion
from bot.reload import ContentAlert, Reload, reload_content_async
from bot.sessions import day_of

log = logging.getLogger("unhooked.telegram")

CHANNEL = "telegram"
COMMANDS = (
    ("start", "Start, and what this bot is"),
    ("topics", "Pick a topic"),
    ("crisis", "Who to call or text, any time"),
    ("privacy", "What is kept, and for how long"),
    ("forget", "Delete what is kept about you"),
    ("erase", "Delete our recent messages"),
    ("help", "How this works"),
)
"""The command menu people see (``setMyCommands``); admin commands are left out on purpose."""
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

NO_PREVIEW = LinkPreviewOptions(is_disabled=True)

# ``TelegramBot._send_one`` and ``inbound._fetch`` call do_api_request("sendMessage"/"getUpdates") on
# purpose; PTB would warn at every call. (pyproject.toml's pytest filterwarnings repeats this, since pytest puts
# its own filters first.)
warnings.filterwarnings(
    "ignore", message=r"Please use 'Bot\.(sendMessage|getUpdates)' instead", category=PTBUserWarning
)


@dataclass
class Turn:
    """What answering one update sent, so the journal can cross it off with the message ids for /erase."""

    chat_key: str | None
    """The chat's keyed hash in a private chat; ``None`` elsewhere (nothing to erase there)."""
    message_ids: list[int] = field(default_factory=list)
    blocked: bool = False


class TelegramBot:
    """The handlers: each turns an update into engine calls and sends the replies before returning."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        telegram: TelegramSettings,
        application: Application,
        journal: Journal,
        *,
        clock: Callable[[], float] = time.time,
        metrics: TelegramMetrics | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.telegram = telegram
        self.application = application
        self.journal = journal
        self._clock = clock
        self._turns: dict[int, Turn] = {}
        self._told_groups: set[str] = set()
        self.answered = 0
        """Updates answered since start."""
        self.telegram_metrics = metrics
        """The adapter's own metrics (blocked people), beside the engine's."""
        self.install()

    def key(self, telegram_id: int) -> str:
        """The keyed hash for a Telegram user or chat id; private chats share the id of their person."""
        return self.engine.user_key(CHANNEL, str(telegram_id))

    def install(self) -> None:
        """Register the handlers, in the order they are tried."""
        private = filters.ChatType.PRIVATE
        admins = filters.User(user_id=set(self.telegram.admin_ids))
        admin_chats = private
        if self.telegram.operator_chat_id is not None:
            admin_chats = private | filters.Chat(chat_id=self.telegram.operator_chat_id)
        commands = {
            "start": self.on_start,
            "help": self.on_help,
            "topics": self.on_topics,
            "crisis": self.on_crisis,
            "privacy": self.on_privacy,
            "forget": self.on_forget,
            "erase": self.on_erase,
        }
        self.application.add_handlers(
            [
                MessageHandler(filters.UpdateType.EDITED_MESSAGE, self.on_edit),
                CommandHandler("stats", self.on_stats, filters=admins & admin_chats),
                CommandHandler("reload", self.on_reload, filters=admins & admin_chats),
                MessageHandler(~private, self.on_group),
                *(CommandHandler(name, callback) for name, callback in commands.items()),
                MessageHandler(filters.TEXT | filters.CAPTION, self.on_text),
                MessageHandler(filters.ALL, self.on_other),
                CallbackQueryHandler(self.on_callback),
            ]
        )
        self.application.add_error_handler(self.on_error)

    async def handle(self, update: Update) -> None:
        """Answer one update completely, then cross it off the journal (not if cancelled half-way)."""
        chat = update.effective_chat
        turn = Turn(self.key(chat.id) if chat is not None and chat.type == ChatType.PRIVATE else None)
        if update.message is not None and turn.chat_key is not None:
            turn.message_ids.append(update.message.message_id)
        self._turns[update.update_id] = turn
        try:
            await self.application.process_update(update)
        finally:
            del self._turns[update.update_id]
        await self.journal.answered(update, turn.chat_key, turn.message_ids)
        self.answered += 1

    async def send(
        self, update: Update, messages: Sequence[Outgoing], how: Send | None = None, kind: str = "command"
    ) -> None:
        """Send to the update's chat in order; stop if the person blocked the bot, skip what Telegram refuses.

        ``kind`` labels the messages in ``unhooked_replies_sent_total``: a reply's kind, or ``command``.
        """
        chat_id = update.effective_chat.id
        turn = self._turns.get(update.update_id)
        for message in messages:
            if turn is not None and turn.blocked:
                break
            try:
                message_id = await self._send_one(chat_id, message, how)
            except Forbidden:
                self._blocked(chat_id, turn)
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
                "protect_content": self.telegram.protect_content,
                "link_preview_options": NO_PREVIEW,
            },
            rate_limit_args=how,
        )
        return int(done["message_id"])

    def _blocked(self, chat_id: int, turn: Turn | None) -> None:
        if turn is not None:
            turn.blocked = True
        self.engine.sessions.count("blocked", self._clock())
        if self.telegram_metrics is not None:
            self.telegram_metrics.blocked.inc()
        log.info("%s has blocked the bot; not retrying", self.key(chat_id)[:8])

    async def answer(self, update: Update, incoming: Incoming) -> None:
        """Run a message through the engine (crisis screen first) and send its replies."""
        outcome = await self.engine.handle(incoming)
        for reply in outcome.replies:
            how = CRISIS if reply.kind is ReplyKind.CRISIS else None
            await self.send(update, render(reply), how, reply.kind.value)

    def _incoming(self, update: Update, text: str, topic: str | None = None) -> Incoming:
        return Incoming(str(update.effective_user.id), text, CHANNEL, topic=topic)

    async def on_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A typed message, or a caption (a photo's words pass the crisis screen too)."""
        message = update.effective_message
        await self.answer(update, self._incoming(update, message.text or message.caption or ""))

    @staticmethod
    def _screen(update: Update) -> Detection | None:
        """The crisis screen on a message's words (a caption too); a failing screen counts as a crisis."""
        message = update.effective_message
        text = (message.text or message.caption) if message is not None else None
        if not text:
            return None
        try:
            return safety.detect(text)
        except Exception:
            return safety.SCREEN_FAILED

    async def on_edit(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An edited message is answered again only if the crisis screen sees something in the new words."""
        chat = update.effective_chat
        if chat is not None and chat.type != ChatType.PRIVATE:
            await self.on_group(update, context)
        elif self._screen(update) is not None:
            message = update.effective_message
            await self.answer(update, self._incoming(update, message.text or message.caption))

    async def on_other(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stickers, photos, voice, locations...: a kind line saying the bot reads text."""
        message = update.effective_message
        if message is None or message.effective_attachment is None:
            return  # a service message (e.g. a pinned message): nothing to answer
        text = texts.NO_LOCATION if message.location or message.venue or message.contact else texts.NON_TEXT
        await self.send(update, [plain(text)])

    async def on_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """In a group the bot says once that it only talks in private, then stays silent, except for a crisis."""
        chat = update.effective_chat
        if chat is None or chat.id == self.telegram.operator_chat_id:
            return
        detection = self._screen(update)
        if detection is not None and detection.level.rank >= Level.CRISIS.rank:
            # The crisis screen outranks the silence. The engine's crisis reply would speak to one person
            # in front of others, so the group gets the neutral resources card; nothing is stored.
            await self.send(update, [plain(texts.CRISIS)], CRISIS, ReplyKind.CRISIS.value)
            return
        if update.edited_message is not None:
            return
        key = self.key(chat.id)
        if key in self._told_groups:
            return
        self._told_groups.add(key)
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                first = await self.engine.sessions.store.tell_group_once(key, self._clock())
        except (StoreError, TimeoutError):
            first = True
        if first:
            await self.send(update, [plain(texts.GROUP)])

    async def on_start(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """The welcome, then the topics."""
        await self.send(update, [plain(texts.WELCOME, self._topics())])

    async def on_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """What the bot does and its commands, with an example."""
        await self.send(update, [plain(texts.HELP)])

    async def on_topics(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Every topic as a button."""
        buttons = self._topics(every=True)
        await self.send(update, [plain(texts.TOPICS if buttons else texts.NO_TOPICS, buttons)])

    def _topics(self, *, every: bool = False) -> InlineKeyboardMarkup | None:
        catalog = self.engine.catalog
        if catalog is None:
            return None
        menu = [Suggestion(intent.id, intent.title or intent.id) for intent in catalog.menu()]
        return topic_buttons(menu if every else menu[:3])

    async def on_crisis(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Crisis resources, whenever asked, ahead of every other reply."""
        await self.send(update, [plain(texts.CRISIS)], CRISIS)

    async def on_privacy(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """What is stored, for how long, and how to delete it."""
        await self.send(update, [plain(texts.PRIVACY)])

    async def on_forget(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Ask before deleting."""
        await self.send(update, [plain(texts.FORGET_ASK, forget_buttons())])

    async def on_erase(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Delete this chat's messages of the last 48 hours on Telegram, and say what could not go."""
        chat_id = update.effective_chat.id
        turn = self._turns.get(update.update_id) or Turn(self.key(chat_id))
        store = self.engine.sessions.store
        try:
            known = await store.message_ids(self.key(chat_id))
        except StoreError as error:
            log.error("could not read message ids for /erase: %s", error)
            known = []
        deleted = failed = 0
        for message_id in dict.fromkeys([*known, *turn.message_ids]):
            try:
                await self.application.bot.delete_message(chat_id, message_id)
                deleted += 1
            except BadRequest:  # older than 48 hours, or already deleted
                failed += 1
            except Forbidden:
                self._blocked(chat_id, turn)
                return
        turn.message_ids.clear()
        with contextlib.suppress(StoreError):
            await store.drop_message_ids(self.key(chat_id))
        await self.send(update, [plain(texts.erase_done(deleted, failed))])

    async def on_callback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A button: a topic, /forget's yes or no, or an operator's Acknowledge."""
        query = update.callback_query
        kind, _, value = (query.data or "").partition(":")
        note = None
        try:
            if kind == "ack":
                note = await self._acknowledge(query, value)
            elif query.message is None or query.message.chat.type != ChatType.PRIVATE:
                pass
            elif kind == "topic":
                catalog = self.engine.catalog
                intent = catalog.intents.get(value) if catalog is not None else None
                label = (intent.title or value) if intent is not None else value
                await self.answer(update, self._incoming(update, label, topic=value))
            elif kind == "forget":
                await self._forget(query, value == "yes")
        finally:
            try:
                await query.answer(note)
            except TelegramError as error:
                log.info("could not answer a button tap: %s", type(error).__name__)

    async def _forget(self, query: CallbackQuery, confirmed: bool) -> None:
        text = texts.FORGET_KEPT
        if confirmed:
            try:
                async with asyncio.timeout(STORE_TIMEOUT * 2):
                    text = texts.forget_done(await self.engine.forget(CHANNEL, str(query.from_user.id)))
            except (StoreError, TimeoutError) as error:
                log.error("/forget failed: %s", type(error).__name__)
                text = texts.FORGET_FAILED
        await query.edit_message_text(plain(text).html, reply_markup=None)

    async def _acknowledge(self, query: CallbackQuery, escalation_id: str) -> str | None:
        chat = query.message.chat if query.message is not None else None
        if chat is None or self.telegram.operator_chat_id is None or chat.id != self.telegram.operator_chat_id:
            log.warning("an Acknowledge tap from outside the operators' chat was ignored")
            return None
        user = query.from_user
        by = f"telegram:{user.id}" + (f" @{user.username}" if user.username else "")
        try:
            escalation = await self.engine.sessions.store.acknowledge(escalation_id, by, self._clock())
        except StoreError as error:
            log.error("could not record an acknowledgement: %s", error)
            return "Not recorded: the database is not answering. Please try again."
        if escalation is None:
            return "This escalation is no longer in the log."
        with contextlib.suppress(BadRequest):  # already edited by an earlier tap
            await query.edit_message_text(acknowledged(escalation), reply_markup=None)
        return "Acknowledged."

    async def on_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Admins: today's counts."""
        day = day_of(self._clock())
        try:
            await self.engine.sessions.flush()
            counts = await self.engine.sessions.store.counts(day)
        except StoreError as error:
            await self.send(update, [plain(f"The database is not answering: {error}")])
            return
        lines = [f"Today ({day}, UTC):"]
        lines += [f"{label}: {counts.pop(name, 0)}" for name, label in STATS_FIRST]
        lines += [f"{name}: {value}" for name, value in sorted(counts.items())]
        await self.send(update, [plain("\n".join(lines))])

    async def on_reload(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Admins: load the content again and report its problems."""
        result = await reload_content_async(self.engine, self.settings.content_dir)
        catalog = self.engine.catalog
        if result.applied and catalog is not None:
            lines = [f"Content reloaded: {len(catalog.intents)} intents, {len(catalog.passages)} passages."]
        else:
            lines = [f"Reload refused ({len(result.errors)} errors); the previous content keeps serving."]
        lines += [str(problem) for problem in result.problems[:MAX_PROBLEMS_SHOWN]]
        if len(result.problems) > MAX_PROBLEMS_SHOWN:
            lines.append(f"... and {len(result.problems) - MAX_PROBLEMS_SHOWN} more")
        await self.send(update, [plain("\n".join(lines))])

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Log the traceback (never the message or the error's text), and apologise instead of silence."""
        error = context.error
        frames = "".join(traceback.format_tb(error.__traceback__)) if error is not None else ""
        update_id = update.update_id if isinstance(update, Update) else None
        log.error("update %s: %s in a handler\n%s", update_id, type(error).__name__, frames.rstrip())
        if isinstance(update, Update) and update.effective_chat and update.effective_chat.type == ChatType.PRIVATE:
            try:
                await self.send(update, [plain(APOLOGY)], kind=ReplyKind.NOTICE.value)
            except TelegramError as failure:
                log.error("could not send the apology either: %s", type(failure).__name__)


def telegram_content_alert(application: Application, chat_id: int) -> ContentAlert:
    """Refused content reloads to the operators' chat, with the ``check`` lines that refused them."""

    async def send_content_alert(result: Reload) -> None:
        text = result.describe()
        if len(text) > MAX_ALERT_CHARS:
            text = text[:MAX_ALERT_CHARS].rsplit("\n", 1)[0] + "\n... (run `python -m bot check` for the rest)"
        await application.bot.send_message(chat_id, plain(text).html, rate_limit_args=ALERT)

    return send_content_alert


def telegram_alerter(application: Application, chat_id: int) -> Alerter:
    """Escalation alerts to the operators' chat, with an Acknowledge button."""

    async def send_alert(escalation: Escalation) -> None:
        message = alert(escalation)
        await application.bot.send_message(chat_id, message.html, reply_markup=message.buttons, rate_limit_args=ALERT)

    return send_alert
