"""Unhooked on Telegram: ``run_telegram`` runs the bot (``app``) with its handlers, intake, sender and rendering."""

from bot.adapters.telegram.app import TelegramBot, run_telegram

__all__ = ["TelegramBot", "run_telegram"]
