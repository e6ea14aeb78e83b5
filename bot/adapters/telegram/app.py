"""Running the Telegram bot: PTB's Application and our handlers on it, our sender, polling or webhook, a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
import traceback
import warnings
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from telegram import Bot, BotCommand, LinkPreviewOptions, Update
from telegram.constants import ChatType, ParseMode
from telegram.error import InvalidToken, TelegramError
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    Defaults,
    MessageHandler,
    filters,
)
from telegram.warnings import PTBUserWarning

from bot.adapters.telegram import health as telegram_health
from bot.adapters.telegram import texts
from bot.adapters.telegram.health import ACCESS, TELEGRAM, TelegramMetrics
from bot.adapters.telegram.inbound import ALLOWED_UPDATES, Intake, Journal, poll, until_stopped
from bot.adapters.telegram.lanes import Lanes, words_of
from bot.adapters.telegram.operators import (
    Operators,
    telegram_alerter,
    telegram_content_alert,
    telegram_notice,
    telegram_reminder,
)
from bot.adapters.telegram.outbound import Sender
from bot.adapters.telegram.people import People
from bot.adapters.telegram.render import plain
from bot.adapters.telegram.replicas import SharedLanes, claim_the_token
from bot.adapters.telegram.replies import Replies
from bot.adapters.telegram.webhook import WebhookHandler
from bot.config import Settings, TelegramSettings
from bot.engine import APOLOGY, Engine
from bot.errors import ConfigError
from bot.health import Health
from bot.http import HttpServer, serve_monitoring
from bot.logs import quiet_library_logs
from bot.metrics import Metrics
from bot.models import Level, ReplyKind
from bot.service import running_service
from bot.store import EscalationLog, Locks, Store

log = logging.getLogger("unhooked.telegram")

REFUSED_LOG_EVERY = 60.0
"""Seconds between the critical log lines of a bot whose token Telegram refuses."""

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


class TelegramBot:
    """The handlers on PTB's Application: each turns an update into engine calls and sends the replies."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        telegram: TelegramSettings,
        application: Application,
        journal: Journal,
        escalation_log: EscalationLog,
        *,
        clock: Callable[[], float] = time.time,
        metrics: TelegramMetrics | None = None,
        refused: asyncio.Event | None = None,
    ) -> None:
        self.engine = engine
        self.refused = refused or asyncio.Event()
        """Set once Telegram refuses the token: updates answered from then on are not crossed off."""
        self.settings = settings
        self.telegram = telegram
        self.application = application
        self.journal = journal
        self.escalation_log = escalation_log
        """The escalation log, for operators' taps and /stats."""
        self._clock = clock
        self.answered = 0
        """Updates answered since start."""
        self.left = 0
        """Updates left in the journal unanswered because the token was refused."""
        self.telegram_metrics = metrics
        """The adapter's own metrics (blocked people), beside the engine's."""
        self.replies = Replies(engine, telegram, application, clock=clock, metrics=metrics)
        self.people = People(self.replies, journal)
        self.operators = Operators(self.replies, settings, escalation_log)
        self.install()

    def install(self) -> None:
        """Register the handlers, in the order they are tried."""
        people, operators = self.people, self.operators
        private = filters.ChatType.PRIVATE
        admins = filters.User(user_id=set(self.telegram.admin_ids))
        admin_chats = private
        if self.telegram.operator_chat_id is not None:
            admin_chats = private | filters.Chat(chat_id=self.telegram.operator_chat_id)
        commands = {
            "start": people.on_start,
            "help": people.on_help,
            "topics": people.on_topics,
            "crisis": people.on_crisis,
            "privacy": people.on_privacy,
            "forget": people.on_forget,
            "erase": people.on_erase,
        }
        self.application.add_handlers(
            [
                MessageHandler(filters.UpdateType.EDITED_MESSAGE, people.on_edit),
                CommandHandler("stats", operators.on_stats, filters=admins & admin_chats),
                CommandHandler("reload", operators.on_reload, filters=admins & admin_chats),
                MessageHandler(~private, people.on_group),
                *(CommandHandler(name, callback) for name, callback in commands.items()),
                MessageHandler(filters.TEXT | filters.CAPTION, people.on_text),
                MessageHandler(filters.ALL, people.on_other),
                CallbackQueryHandler(self.on_callback),
            ]
        )
        self.application.add_error_handler(self.on_error)

    async def handle(self, update: Update) -> None:
        """Answer one update completely, then cross it off the journal with the session its answer left.

        Not if cancelled half-way: then neither is written, and the next start answers it from the session as it
        was. Once the token is refused nothing can be sent: the update is left in the journal for the next start.
        """
        if self.refused.is_set():
            self.left += 1
            return
        turn = self.replies.begin(update)
        try:
            await self.application.process_update(update)
        finally:
            del self.replies.turns[update.update_id]
        if self.refused.is_set():  # refused while answering: its replies did not go out
            self.left += 1
            return
        await self.journal.answered(update, turn.chat_key, turn.message_ids, turn.session)
        self.answered += 1

    async def on_callback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A button: a topic, /forget's yes or no, or an operator's Acknowledge."""
        query = update.callback_query
        kind, _, value = (query.data or "").partition(":")
        note = None
        try:
            if kind == "ack":
                note = await self.operators.acknowledge(query, value)
            elif query.message is None or query.message.chat.type != ChatType.PRIVATE:
                pass
            elif kind == "topic":
                await self.people.topic(update, value)
            elif kind == "forget":
                await self.people.forget(query, value == "yes")
        finally:
            try:
                await query.answer(note)
            except TelegramError as error:
                log.info("could not answer a button tap: %s", type(error).__name__)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Log the traceback (never the message or the error's text), and apologise instead of silence."""
        error = context.error
        frames = "".join(traceback.format_tb(error.__traceback__)) if error is not None else ""
        update_id = update.update_id if isinstance(update, Update) else None
        log.error("update %s: %s in a handler\n%s", update_id, type(error).__name__, frames.rstrip())
        self.engine.metrics.handler_errors.inc(TELEGRAM)
        if isinstance(update, Update) and update.effective_chat and update.effective_chat.type == ChatType.PRIVATE:
            try:
                await self.replies.send(update, [plain(APOLOGY)], kind=ReplyKind.NOTICE.value)
            except TelegramError as failure:
                log.error("could not send the apology either: %s", type(failure).__name__)


class CrisisFirst:
    """The engine's one crisis screen on updates' words as they arrive: a crisis or imminent one goes first."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def ahead(self, updates: Sequence[Update]) -> None:
        """Screen updates that arrived together in one pass, off the event loop; each verdict is kept for the lanes."""
        await self.engine.screen.prepare_apart([words for update in updates if (words := words_of(update))])

    def __call__(self, update: Update) -> bool:
        words = words_of(update)
        found = self.engine.screen.detect(words) if words else None
        return found is not None and found.level.rank >= Level.CRISIS.rank


def build_application(telegram: TelegramSettings, sender: Sender) -> Application:
    """PTB's Application without its Updater (we poll ourselves), with our sender and HTML defaults."""
    timeout = telegram.request_timeout
    builder = (
        Application.builder()
        .token(telegram.token)
        .updater(None)
        .rate_limiter(sender)
        .defaults(
            Defaults(
                parse_mode=ParseMode.HTML,
                protect_content=telegram.protect_content,
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            )
        )
        .connection_pool_size(sender.connections)  # the sender never has more requests under way
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .write_timeout(timeout)
        .pool_timeout(timeout)
        .get_updates_connect_timeout(timeout)
        .get_updates_read_timeout(timeout)
        .get_updates_pool_timeout(timeout)
    )
    if telegram.api_base_url:
        builder = builder.base_url(telegram.api_base_url)
    return builder.build()


def settle_process() -> None:
    """What the process needs of python-telegram-bot, set when the bot starts (never at import)."""
    # PTB 22.2+ warns on every read of a time period as a number, and ``RetryAfter.__init__`` reads its own
    # ``retry_after`` (telegram/error.py, class RetryAfter): without this, every 429 logs a deprecation warning
    # (and raises it under ``-W error``). PTB reads the variable at each use; opting in early is its own advice.
    os.environ.setdefault("PTB_TIMEDELTA", "true")
    # ``Replies._send_one`` and ``inbound._fetch`` call do_api_request("sendMessage"/"getUpdates") on purpose;
    # PTB would warn at every call. (pyproject.toml's pytest filterwarnings repeats this, since pytest puts its
    # own filters first.)
    warnings.filterwarnings(
        "ignore", message=r"Please use 'Bot\.(sendMessage|getUpdates)' instead", category=PTBUserWarning
    )


async def run_telegram(
    settings: Settings,
    telegram: TelegramSettings,
    *,
    webhook: bool = False,
    stop: asyncio.Event | None = None,
    store: Store | None = None,
    started: Callable[[TelegramBot, HttpServer | None], None] | None = None,
) -> int:
    """Run the bot until ``stop`` is set; return how many fetched updates were left for the next start.

    ``store`` replaces the configured database (tests, benchmarks); ``started`` is called once the bot
    takes updates, with the handlers and the HTTP server (webhook mode), e.g. to add routes to it.
    """
    settle_process()
    quiet_library_logs()
    if webhook:
        telegram.check_webhook()
    stop = stop or asyncio.Event()
    sender = Sender(telegram.sends_per_second, max_delay=telegram.retry_max_delay)
    application = build_application(telegram, sender)
    operators = telegram.operator_chat_id
    alerter = telegram_alerter(application, operators) if operators else None
    content_alert = telegram_content_alert(application, operators) if operators else None
    reminder = telegram_reminder(application, operators) if operators else None
    notice = telegram_notice(application, operators) if operators else None
    try:
        if await until_stopped(stop, application.initialize()):
            return 0
    except InvalidToken:  # PTB's own message repeats the token (telegram/_bot.py, Bot.initialize)
        raise ConfigError(
            "Telegram refused TELEGRAM_BOT_TOKEN; check it against the token @BotFather gave you"
        ) from None
    metrics = Metrics()
    try:
        async with running_service(
            settings, store, alerter, content_alert, metrics=metrics, reminder=reminder, notice=notice
        ) as service:
            engine = service.engine
            watched = TelegramMetrics(metrics, engine.faults)
            sender.watch(watched)
            journal = Journal(service.store, metrics=metrics, faults=engine.faults, on_saved=engine.sessions.saved)
            bot = TelegramBot(
                engine, settings, telegram, application, journal, service.store, metrics=watched, refused=sender.refused
            )
            locks = service.store.locks
            await claim_the_token(locks, webhook=webhook)
            limit, observe = telegram.max_concurrent_chats, watched.answering.observe
            first = CrisisFirst(engine)
            if webhook and locks.shared:
                lanes: Lanes | SharedLanes = SharedLanes(
                    bot.handle,
                    limit,
                    journal,
                    locks,
                    application.bot,
                    engine.sessions,
                    on_answered=observe,
                    urgent=first,
                )
            else:
                lanes = Lanes(bot.handle, limit, on_answered=observe, urgent=first)
            watched.pending.read = lambda: lanes.pending
            intake = Intake(journal, lanes, watched, ahead=first.ahead)
            health = service.health({TELEGRAM: telegram_health.LINK_GRACE, ACCESS: 0.0})
            return await _serve(bot, intake, health, locks, webhook=webhook, stop=stop, started=started)
    finally:
        await application.shutdown()


async def _serve(
    bot: TelegramBot,
    intake: Intake,
    health: Health,
    locks: Locks,
    *,
    webhook: bool,
    stop: asyncio.Event,
    started: Callable[[TelegramBot, HttpServer | None], None] | None,
) -> int:
    application, telegram = bot.application, bot.telegram
    server = None
    port = telegram.server_port(webhook)
    if port is not None:
        # health first: it answers while Telegram is still being reached
        server = await serve_monitoring(
            telegram.http_listen, port, health, bot.engine.metrics.registry, telegram.http_limits
        )
    await application.start()
    background = [asyncio.create_task(intake.journal.purge_forever(locks=locks), name="telegram-purge")]
    if isinstance(intake.lanes, SharedLanes):  # chats left waiting by a replica that died
        background.append(asyncio.create_task(intake.lanes.sweep_forever(), name="telegram-sweep"))
    try:
        if await _prepare(application.bot, telegram, intake, server if webhook else None, stop):
            # What start-up made (modules, the content and its indexes, PTB's objects) stays for the life of
            # the process: out of the cyclic collector's sight, each full collection stops walking it again
            # (about 4% of the CPU per message in python -m bench telegram). Refcounting still frees it.
            gc.freeze()
            if started is not None:
                started(bot, server)
            taking = (
                stop.wait()
                if webhook
                else poll(
                    application.bot,
                    intake,
                    stop,
                    timeout=telegram.poll_timeout,
                    max_delay=telegram.retry_max_delay,
                    request_timeout=telegram.request_timeout,
                    metrics=bot.telegram_metrics,
                )
            )
            if await _until_refused(taking, bot.refused):
                await _refused(bot, stop)
    finally:
        if server is not None:
            await server.stop()
        for task in background:
            task.cancel()
        left = await intake.lanes.drain(telegram.shutdown_grace)
        await intake.journal.aclose()
        gc.unfreeze()  # a process that goes on (tests, an embedding) collects as before
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await application.stop()
    if left:
        log.warning("%d updates were not answered before the stop; the next start answers them", left)
    return left


async def _until_refused(work: Coroutine[Any, Any, object], refused: asyncio.Event) -> bool:
    """Run ``work`` (polling, or waiting for the stop) unless Telegram refuses the token first; ``True`` if it did.

    Polling is cancelled where it stands: the last batch is journalled and is not confirmed.
    """
    try:
        return await until_stopped(refused, work)
    except InvalidToken:  # polling's own getUpdates was refused
        refused.set()
        return True


async def _refused(bot: TelegramBot, stop: asyncio.Event) -> None:
    """The token is refused: take and confirm nothing more, say so in health and the log until stopped."""
    detail = (
        "Telegram refused TELEGRAM_BOT_TOKEN (revoked or replaced with @BotFather?): nothing more is answered or "
        "confirmed; what came in waits in the journal: set a valid token and restart"
    )
    bot.engine.faults.fail(ACCESS, "refused", detail)
    while True:
        log.critical("%s (%d updates left for then)", detail, bot.left)
        if await until_stopped(stop, delay=REFUSED_LOG_EVERY):
            return


async def _prepare(
    bot: Bot, telegram: TelegramSettings, intake: Intake, server: HttpServer | None, stop: asyncio.Event
) -> bool:
    """The command menu and the neutral descriptions, what the last run left unanswered, then the webhook.

    Returns ``False`` if a stop came first. The leftovers are queued before any new update is fetched:
    the webhook's route is added to the (already serving) HTTP server only after them.
    """
    commands = [BotCommand(name, description) for name, description in COMMANDS]
    if await until_stopped(stop, bot.set_my_commands(commands)):
        return False
    described = asyncio.gather(
        bot.set_my_description(texts.DESCRIPTION), bot.set_my_short_description(texts.SHORT_DESCRIPTION)
    )
    if await until_stopped(stop, described):
        return False
    await intake.replay(bot)
    if server is None:
        return not await until_stopped(stop, bot.delete_webhook(drop_pending_updates=False))
    path = rf"{telegram.webhook_path.rstrip('/')}/?"
    server.route(path, WebhookHandler, bot=bot, intake=intake, secret=telegram.webhook_secret)
    setting = bot.set_webhook(
        telegram.webhook_url,
        secret_token=telegram.webhook_secret,
        allowed_updates=ALLOWED_UPDATES,
        drop_pending_updates=False,
    )
    return not await until_stopped(stop, setting)
