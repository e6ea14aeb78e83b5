"""A bare python-telegram-bot echo bot, the yardstick of ``python -m bench telegram``: it replies with the text it got.

Run as its own process (``python -m bench.echo``) with ``TELEGRAM_BOT_TOKEN``, ``TELEGRAM_API_BASE_URL`` and
``ECHO_CONCURRENCY`` (updates handled at the same time; the benchmark gives it Unhooked's
``UNHOOKED_MAX_CONCURRENT_CHATS``). PTB's own ``Updater`` polls; SIGTERM stops it.
"""

from __future__ import annotations

import os

from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters


async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Reply with the message's text."""
    await context.bot.send_message(update.effective_chat.id, update.effective_message.text)


def main() -> None:
    """Poll until SIGTERM."""
    application = (
        Application.builder()
        .token(os.environ["TELEGRAM_BOT_TOKEN"])
        .base_url(os.environ["TELEGRAM_API_BASE_URL"])
        .concurrent_updates(int(os.environ.get("ECHO_CONCURRENCY", "32")))
        .build()
    )
    application.add_handler(MessageHandler(filters.TEXT, echo))
    application.run_polling(poll_interval=0.0, timeout=1, allowed_updates=["message"])


if __name__ == "__main__":
    main()
