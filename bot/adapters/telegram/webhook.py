"""Webhook mode: a route on the bot's HTTP server (``bot.http``) that journals each update before answering Telegram.

Why our own handler and not PTB's ``Updater.start_webhook``: PTB's server (``telegram/ext/_utils/
webhookhandler.py``) answers 200 once the update is on ``update_queue`` and offers no public way to add
routes, and its secret check is a plain ``!=``. Ours journals first (``Intake.receive``), compares the
secret in constant time, and is one route of the core's ``HttpServer``, beside ``/healthz`` and ``/metrics``.
"""

from __future__ import annotations

import hmac
import json
import logging
from http import HTTPStatus
from typing import Any

import tornado.web
from telegram import Bot, Update

from bot.adapters.telegram.inbound import Intake

log = logging.getLogger("unhooked.telegram.webhook")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name, not a secret)
JSON = "application/json"
LARGEST_ID = 2**63
"""One more than the largest update id the journal's 64-bit integer column (SQLite and PostgreSQL alike) holds."""


@tornado.web.stream_request_body
class WebhookHandler(tornado.web.RequestHandler):
    """Takes Telegram's POSTs: refuses a wrong or missing secret, journals the update, then says 200.

    The body is streamed (``stream_request_body``): the secret and the content type are checked as soon as
    the headers are in, before any of the body is read, and tornado never parses a form body of its own.
    """

    def initialize(self, bot: Bot, intake: Intake, secret: str) -> None:
        """Tornado's per-request set-up."""
        self.bot = bot
        self.intake = intake
        self.secret = secret.encode()
        self._chunks: list[bytes] = []

    async def prepare(self) -> None:
        """Refuse a wrong secret or content type before reading the body."""
        if self.request.method != "POST":
            return  # tornado answers 405
        given = self.request.headers.get(SECRET_HEADER, "").encode(errors="replace")
        if not hmac.compare_digest(given, self.secret):
            log.warning("refused a webhook request without the right secret token from %s", self.request.remote_ip)
            await self._refuse(HTTPStatus.FORBIDDEN, "the secret token is missing or wrong")
            return
        kind = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != JSON:
            log.warning("refused a webhook request that is not JSON (Content-Type %r)", kind[:40])
            await self._refuse(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"send the update as {JSON}")

    def data_received(self, chunk: bytes) -> None:
        """Collect the body (at most ``bot.http.MAX_BODY_BYTES``: the server refuses more before this is called)."""
        self._chunks.append(chunk)

    async def post(self) -> None:
        """Handle one update from Telegram."""
        update = self._update()
        if update is None:
            await self._refuse(HTTPStatus.BAD_REQUEST, "the body is not a Telegram update")
            return
        await self.intake.receive([update])
        if not self.intake.journal.stored(update.update_id):  # answered, but Telegram must send it again
            await self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, "the journal is busy; send this update again")
            return
        self.set_status(HTTPStatus.OK)
        await self.finish()

    def _update(self) -> Update | None:
        """The body as an Update, or ``None`` (logged without the body: it may hold a person's words)."""
        try:
            data = json.loads(b"".join(self._chunks))
            if not isinstance(data, dict) or not _is_update_id(data.get("update_id")):
                raise ValueError("no update_id")
            return Update.de_json(data, self.bot)
        except Exception as error:  # anything PTB's parser makes of a malformed update is a bad request
            log.warning("refused a webhook request that is not an update (%s)", type(error).__name__)
            return None

    async def _refuse(self, status: HTTPStatus, reason: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        await self.finish(f"{status.value} {status.phrase}: {reason}\n")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors tornado raises itself (405, 500): a short plain line, never a traceback or the request."""
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code} {self._reason}\n")

    def log_exception(self, *args: Any) -> None:
        """Log failures without the request body, which holds a person's message."""
        log.error("webhook request failed: %s", args[1] if len(args) > 1 else "unknown error")


def _is_update_id(value: object) -> bool:
    """Whether ``value`` can be a Telegram update id: a whole number from 0 that the journal's column can hold."""
    return type(value) is int and 0 <= value < LARGEST_ID
