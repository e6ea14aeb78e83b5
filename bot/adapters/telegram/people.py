"""Handlers for people: their messages and commands, the topic and /forget buttons, and the silence in groups."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from telegram import CallbackQuery, InlineKeyboardMarkup, Update
from telegram.constants import ChatType
from telegram.error import BadRequest, Forbidden
from telegram.ext import ContextTypes

from bot.adapters.telegram import texts
from bot.adapters.telegram.inbound import STORE_TIMEOUT, Journal
from bot.adapters.telegram.outbound import CRISIS
from bot.adapters.telegram.render import crisis_card, forget_buttons, plain, topic_buttons
from bot.adapters.telegram.replies import CHANNEL, Replies, Turn
from bot.errors import StoreError
from bot.models import Detection, Level, ReplyKind, Suggestion

log = logging.getLogger("unhooked.telegram")


def _is_crisis_command(update: Update) -> bool:
    """Whether a new message is ``/crisis`` (or ``/crisis@thebot``, as groups send commands)."""
    text = update.message.text if update.message is not None else None
    return bool(text) and text.split(maxsplit=1)[0].split("@", 1)[0].lower() == "/crisis"


class People:
    """The handlers for people: each sends its replies (``Replies``) before returning."""

    def __init__(self, replies: Replies, journal: Journal) -> None:
        self.replies = replies
        self.journal = journal
        """Groups told, chats' message ids for /erase, and the sessions waiting to be written with their marks."""
        self._told_groups: set[str] = set()

    async def on_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A typed message, or a caption (a photo's words pass the crisis screen too)."""
        message = update.effective_message
        await self.replies.answer(update, message.text or message.caption or "")

    def _screen(self, update: Update) -> Detection | None:
        """The engine's one crisis screen (floor, moderators' rules and model) on a message's words or caption."""
        message = update.effective_message
        text = (message.text or message.caption) if message is not None else None
        if not text:
            return None
        return self.replies.engine.screen.detect(text)

    async def on_edit(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An edited message is answered again only if the crisis screen sees something in the new words."""
        chat = update.effective_chat
        if chat is not None and chat.type != ChatType.PRIVATE:
            await self.on_group(update, context)
        elif self._screen(update) is not None:
            message = update.effective_message
            await self.replies.answer(update, message.text or message.caption)

    async def on_other(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stickers, photos, voice, locations...: a kind line saying the bot reads text."""
        message = update.effective_message
        if message is None or message.effective_attachment is None:
            return  # a service message (e.g. a pinned message): nothing to answer
        text = texts.NO_LOCATION if message.location or message.venue or message.contact else texts.NON_TEXT
        await self.replies.send(update, [plain(text)])

    async def on_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """In a group the bot says once that it only talks in private, then stays silent, except for a crisis."""
        chat = update.effective_chat
        if chat is None or chat.id == self.replies.telegram.operator_chat_id:
            return
        detection = self._screen(update)
        if _is_crisis_command(update) or (detection is not None and detection.level.rank >= Level.CRISIS.rank):
            # The crisis screen outranks the silence. The engine's crisis reply would speak to one person
            # in front of others, so the group gets the neutral resources card; nothing is stored. /crisis
            # asked in a group gets the same card, and nothing is stored either.
            await self.replies.send(update, [crisis_card()], CRISIS, ReplyKind.CRISIS.value)
            return
        if update.edited_message is not None:
            return
        key = self.replies.key(chat.id)
        if key in self._told_groups:
            return
        self._told_groups.add(key)
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                first = await self.journal.store.tell_group_once(key, self.replies.clock())
        except (StoreError, TimeoutError):
            first = True
        if first:
            await self.replies.send(update, [plain(texts.GROUP)])

    async def on_start(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """The welcome, then the topics."""
        await self.replies.send(update, [plain(texts.WELCOME, self._topics())])

    async def on_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """What the bot does and its commands, with an example."""
        await self.replies.send(update, [plain(texts.HELP)])

    async def on_topics(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Every topic as a button."""
        buttons = self._topics(every=True)
        await self.replies.send(update, [plain(texts.TOPICS if buttons else texts.NO_TOPICS, buttons)])

    def _topics(self, *, every: bool = False) -> InlineKeyboardMarkup | None:
        catalog = self.replies.engine.catalog
        if catalog is None:
            return None
        menu = [Suggestion(intent.id, intent.title or intent.id) for intent in catalog.menu()]
        return topic_buttons(menu if every else menu[:3])

    async def on_crisis(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Crisis resources, whenever asked, ahead of every other reply."""
        await self.replies.send(update, [crisis_card()], CRISIS)

    async def on_privacy(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """What is stored, for how long, and how to delete it."""
        await self.replies.send(update, [plain(texts.PRIVACY)])

    async def on_forget(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Ask before deleting."""
        await self.replies.send(update, [plain(texts.FORGET_ASK, forget_buttons())])

    async def on_erase(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Delete this chat's messages of the last 48 hours on Telegram, and say what could not go."""
        replies = self.replies
        chat_id = update.effective_chat.id
        turn = replies.turns.get(update.update_id) or Turn(replies.key(chat_id))
        store = self.journal.store
        try:
            known = await store.message_ids(replies.key(chat_id))
        except StoreError as error:
            log.error("could not read message ids for /erase: %s", error)
            known = []
        deleted = failed = 0
        for message_id in dict.fromkeys([*known, *turn.message_ids]):
            try:
                await replies.application.bot.delete_message(chat_id, message_id)
                deleted += 1
            except BadRequest:  # older than 48 hours, or already deleted
                failed += 1
            except Forbidden:
                replies.blocked(chat_id, turn)
                return
        turn.message_ids.clear()
        with contextlib.suppress(StoreError):
            await store.drop_message_ids(replies.key(chat_id))
        await replies.send(update, [plain(texts.erase_done(deleted, failed))])

    async def topic(self, update: Update, intent_id: str) -> None:
        """A topic button: answered as if the person had written the topic's title."""
        catalog = self.replies.engine.catalog
        intent = catalog.intents.get(intent_id) if catalog is not None else None
        label = (intent.title or intent_id) if intent is not None else intent_id
        await self.replies.answer(update, label, topic=intent_id)

    async def forget(self, query: CallbackQuery, confirmed: bool) -> None:
        """/forget's yes or no: delete what is kept about the person, and say what was deleted."""
        text = texts.FORGET_KEPT
        if confirmed:
            try:
                async with asyncio.timeout(STORE_TIMEOUT * 2):
                    await self.journal.forget(self.replies.key(query.from_user.id))
                    text = texts.forget_done(await self.replies.engine.forget(CHANNEL, str(query.from_user.id)))
            except (StoreError, TimeoutError) as error:
                log.error("/forget failed: %s", type(error).__name__)
                text = texts.FORGET_FAILED
        await query.edit_message_text(plain(text).html, reply_markup=None)
