"""Webhook mode: a small tornado server whose POST handler journals each update before answering Telegram.

Why our own handler and not PTB's ``Updater.start_webhook``: PTB's server (``telegram/ext/_utils/
webhookhandler.py``) answers 200 once the update is on ``update_queue`` and offers no public way to add
routes, and its secret check is a plain ``!=``. Ours journals first (``Intake.receive``), compares the
secret in constant time, and is an ordinary ``tornado.web.Application``: another route (``/healthz``,
``/metrics``) is one ``server.route(r"/healthz", HealthHandler)`` call before or after ``start()``.
"""

from __future__ import annotations

import hmac
import json
import logging
from http import HTTPStatus
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
from telegram import Bot, Update

from bot.adapters.telegram_intake import Intake

log = logging.getLogger("unhooked.telegram.webhook")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name, not a secret)


class WebhookHandler(tornado.web.RequestHandler):
    """Takes Telegram's POSTs: refuses a wrong or missing secret, journals the update, then says 200."""

    def initialize(self, bot: Bot, intake: Intake, secret: str) -> None:
        """Tornado's per-request set-up."""
        self.bot = bot
        self.intake = intake
        self.secret = secret.encode()

    async def post(self) -> None:
        """Handle one update from Telegram."""
        given = self.request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self.secret):
            log.warning("refused a webhook request without the right secret token from %s", self.request.remote_ip)
            self.send_error(HTTPStatus.FORBIDDEN)
            return
        try:
            data = json.loads(self.request.body)
            update = Update.de_json(data, self.bot) if isinstance(data, dict) else None
        except (ValueError, TypeError, KeyError) as error:
            log.warning("refused a webhook request that is not an update (%s)", type(error).__name__)
            update = None
        if update is None:
            self.send_error(HTTPStatus.BAD_REQUEST)
            return
        await self.intake.receive([update])
        self.set_status(HTTPStatus.OK)
        await self.finish()

    def log_exception(self, *args: Any) -> None:
        """Log failures without the request body, which holds a person's message."""
        log.error("webhook request failed: %s", args[1] if len(args) > 1 else "unknown error")


class HttpServer:
    """One HTTP server for the bot: the webhook now, and whatever routes are added to it."""

    def __init__(self, listen: str, port: int) -> None:
        self.listen = listen
        self.port = port
        self.app = tornado.web.Application([], log_function=lambda handler: None)
        self._server: tornado.httpserver.HTTPServer | None = None

    def route(self, pattern: str, handler: type[tornado.web.RequestHandler], **options: Any) -> None:
        """Serve ``pattern`` (a regular expression for the path) with ``handler``."""
        self.app.add_handlers(r".*", [(pattern, handler, options)])

    async def start(self) -> None:
        """Bind and serve; with port 0 the chosen port is in ``self.port`` afterwards."""
        sockets = tornado.netutil.bind_sockets(self.port, self.listen)
        self._server = tornado.httpserver.HTTPServer(self.app)
        self._server.add_sockets(sockets)
        self.port = sockets[0].getsockname()[1]
        log.info("HTTP server listening on %s:%d", self.listen, self.port)

    async def stop(self) -> None:
        """Stop taking requests and close the connections once their requests are answered."""
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            await server.close_all_connections()
