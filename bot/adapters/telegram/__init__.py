"""Unhooked on Telegram: ``run_telegram`` runs the bot (``app``) with its handlers, intake, sender and rendering."""

from bot.adapters.telegram.app import run_telegram
from bot.adapters.telegram.handlers import TelegramBot

__all__ = ["TelegramBot", "run_telegram"]
