"""The bot's one HTTP server: ``/healthz`` and ``/metrics`` for monitoring, and the routes an adapter adds (a webhook).

An ordinary ``tornado.web.Application``: another route is one ``server.route(pattern, Handler, **options)`` call,
before or after ``start()``. Neither monitoring route reveals anything about people: the health body names checks
and errors, the metrics carry counts by fixed labels and intent ids.
"""

from __future__ import annotations

import json
import logging
import socket
from http import HTTPStatus
from typing import Any

import tornado.httpserver
import tornado.web

from bot.errors import ConfigError
from bot.health import Health
from bot.metrics import CONTENT_TYPE, Registry

log = logging.getLogger("unhooked.http")

MAX_BODY_BYTES = 1_000_000
"""Requests with a longer body are refused (400) before it is read: an update is a few kilobytes at most."""


class HealthHandler(tornado.web.RequestHandler):
    """``GET /healthz``: 200 with every check, or 503 naming the failing ones."""

    def initialize(self, health: Health) -> None:
        """Tornado's per-request set-up."""
        self.health = health

    async def get(self) -> None:
        """Run the checks."""
        ok, body = await self.health.report()
        if not ok:
            log.warning("health check failing: %s", ", ".join(body.get("failing", [])))
        self.set_status(HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        await self.finish(json.dumps(body, sort_keys=True))


class MetricsHandler(tornado.web.RequestHandler):
    """``GET /metrics``: every metric in Prometheus' text format."""

    def initialize(self, registry: Registry) -> None:
        """Tornado's per-request set-up."""
        self.registry = registry

    async def get(self) -> None:
        """Render the metrics."""
        self.set_header("Content-Type", CONTENT_TYPE)
        self.set_header("Cache-Control", "no-store")
        await self.finish(self.registry.render())


class HttpServer:
    """One HTTP server for the bot: monitoring, and whatever routes are added to it."""

    def __init__(self, listen: str, port: int) -> None:
        self.listen = listen
        self.port = port
        self.app = tornado.web.Application([], log_function=lambda handler: None)
        self._server: tornado.httpserver.HTTPServer | None = None

    def route(self, pattern: str, handler: type[tornado.web.RequestHandler], **options: Any) -> None:
        """Serve ``pattern`` (a regular expression for the path) with ``handler``."""
        self.app.add_handlers(r".*", [(pattern, handler, options)])

    async def start(self) -> None:
        """Bind and serve; with port 0 the chosen port is in ``self.port`` afterwards. Raises ``OSError``."""
        listening = _listen(self.listen, self.port)
        self._server = tornado.httpserver.HTTPServer(self.app, max_body_size=MAX_BODY_BYTES)
        self._server.add_sockets([listening])
        self.port = listening.getsockname()[1]
        log.info("HTTP server listening on %s:%d", self.listen, self.port)

    async def stop(self) -> None:
        """Stop taking requests and close the connections once their requests are answered."""
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            await server.close_all_connections()


async def serve_monitoring(listen: str, port: int, health: Health, registry: Registry) -> HttpServer:
    """Start the bot's HTTP server with ``/healthz`` and ``/metrics``; a port it cannot take is a ``ConfigError``."""
    server = HttpServer(listen, port)
    server.route(r"/healthz", HealthHandler, health=health)
    server.route(r"/metrics", MetricsHandler, registry=registry)
    try:
        await server.start()
    except OSError as error:
        raise ConfigError(
            f"cannot listen on {listen}:{port} ({error.strerror or error}); set UNHOOKED_HTTP_PORT "
            "to a free port, or UNHOOKED_HTTP_LISTEN to an address of this machine"
        ) from None
    return server


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on the first address of ``host`` (tornado's ``bind_sockets`` leaks one it cannot bind)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    listening = socket.socket(family, kind, proto)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.setblocking(False)
        listening.bind(address)
        listening.listen(128)
    except OSError:
        listening.close()
        raise
    return listening
