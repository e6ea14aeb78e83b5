"""Running the Telegram bot: PTB's Application, our sender, polling or webhook, and a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Callable

from telegram import Bot, BotCommand, LinkPreviewOptions
from telegram.constants import ParseMode
from telegram.error import InvalidToken
from telegram.ext import Application, Defaults

from bot.adapters.telegram import health as telegram_health
from bot.adapters.telegram.handlers import COMMANDS, TelegramBot, telegram_alerter, telegram_content_alert
from bot.adapters.telegram.health import TELEGRAM, TelegramMetrics
from bot.adapters.telegram.inbound import ALLOWED_UPDATES, Intake, Journal, Lanes, poll, until_stopped
from bot.adapters.telegram.outbound import Sender
from bot.adapters.telegram.webhook import WebhookHandler
from bot.config import Settings, TelegramSettings
from bot.errors import ConfigError
from bot.health import Health
from bot.http import HttpServer, serve_monitoring
from bot.metrics import Metrics
from bot.service import engine_health, running_engine
from bot.store import Store

log = logging.getLogger("unhooked.telegram")


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


class _Redact(logging.Filter):
    """Blank the arguments of PTB's log lines: some carry whole updates (a person's words) or a token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("telegram") and record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(arg if isinstance(arg, int | float) else "<redacted>" for arg in args)
        return True


def quiet_library_logs() -> None:
    """Whatever UNHOOKED_LOG_LEVEL says: no token (httpx logs request URLs) and no message text in logs."""
    for name in ("httpx", "httpcore", "tornado.access", "aiosqlite"):  # aiosqlite DEBUG prints SQL parameters
        logging.getLogger(name).setLevel(logging.WARNING)
    ptb = logging.getLogger("telegram")
    if ptb.getEffectiveLevel() < logging.INFO:  # PTB's DEBUG lines print every request and update
        ptb.setLevel(logging.INFO)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _Redact) for f in handler.filters):
            handler.addFilter(_Redact())


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
    quiet_library_logs()
    if webhook:
        telegram.check_webhook()
    stop = stop or asyncio.Event()
    sender = Sender(telegram.sends_per_second, max_delay=telegram.retry_max_delay)
    application = build_application(telegram, sender)
    operators = telegram.operator_chat_id
    alerter = telegram_alerter(application, operators) if operators else None
    content_alert = telegram_content_alert(application, operators) if operators else None
    try:
        if await until_stopped(stop, application.initialize()):
            return 0
    except InvalidToken:  # PTB's own message repeats the token (telegram/_bot.py, Bot.initialize)
        raise ConfigError(
            "Telegram refused TELEGRAM_BOT_TOKEN; check it against the token @BotFather gave you"
        ) from None
    metrics = Metrics()
    try:
        async with running_engine(settings, store, alerter, content_alert, metrics=metrics) as engine:
            watched = TelegramMetrics(metrics.registry, engine.faults)
            sender.watch(watched)
            journal = Journal(engine.sessions.store, metrics=metrics, faults=engine.faults)
            bot = TelegramBot(engine, settings, telegram, application, journal, metrics=watched)
            lanes = Lanes(bot.handle, telegram.max_concurrent_chats, on_answered=watched.answering.observe)
            watched.pending.read = lambda: lanes.pending
            intake = Intake(journal, lanes, watched)
            health = engine_health(engine, {TELEGRAM: telegram_health.LINK_GRACE})
            return await _serve(bot, intake, health, webhook=webhook, stop=stop, started=started)
    finally:
        await application.shutdown()


async def _serve(
    bot: TelegramBot,
    intake: Intake,
    health: Health,
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
        server = await serve_monitoring(telegram.http_listen, port, health, bot.engine.metrics.registry)
    await application.start()
    purge = asyncio.create_task(intake.journal.purge_forever(), name="telegram-purge")
    try:
        if await _prepare(application.bot, telegram, intake, server if webhook else None, stop):
            # What start-up made (modules, the content and its indexes, PTB's objects) stays for the life of
            # the process: out of the cyclic collector's sight, each full collection stops walking it again
            # (about 4% of the CPU per message in python -m bench telegram). Refcounting still frees it.
            gc.freeze()
            if started is not None:
                started(bot, server)
            if webhook:
                await stop.wait()
            else:
                await poll(
                    application.bot,
                    intake,
                    stop,
                    timeout=telegram.poll_timeout,
                    max_delay=telegram.retry_max_delay,
                    request_timeout=telegram.request_timeout,
                    metrics=bot.telegram_metrics,
                )
    except InvalidToken:
        raise ConfigError("Telegram refused TELEGRAM_BOT_TOKEN while running; check the token") from None
    finally:
        if server is not None:
            await server.stop()
        left = await intake.lanes.drain(telegram.shutdown_grace)
        await intake.journal.aclose()
        gc.unfreeze()  # a process that goes on (tests, an embedding) collects as before
        purge.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await purge
        await application.stop()
    if left:
        log.warning("%d updates were not answered before the stop; the next start answers them", left)
    return left


async def _prepare(
    bot: Bot, telegram: TelegramSettings, intake: Intake, server: HttpServer | None, stop: asyncio.Event
) -> bool:
    """The command menu, what the last run left unanswered, then the webhook (or none, to poll).

    Returns ``False`` if a stop came first. The leftovers are queued before any new update is fetched:
    the webhook's route is added to the (already serving) HTTP server only after them.
    """
    commands = [BotCommand(name, description) for name, description in COMMANDS]
    if await until_stopped(stop, bot.set_my_commands(commands)):
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
