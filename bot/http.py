"""The bot's one HTTP server: ``/healthz`` and ``/metrics`` for monitoring, and the routes an adapter adds (a webhook).

An ordinary ``tornado.web.Application``: another route is one ``server.route(pattern, Handler, **options)`` call,
before or after ``start()``. Neither monitoring route reveals anything about people: the health body names checks
and errors, the metrics carry counts by fixed labels and intent ids.

One client cannot hold it (``config.HttpLimits``): a request's head must arrive within ``header_timeout`` and its
body within ``body_timeout``, or the connection is closed; beyond ``max_connections`` open at once a connection
gets a 503 and is closed, so a flood never takes every file descriptor; a body over ``MAX_BODY_BYTES`` is refused
unread; and what a flood of bad requests writes to the log is throttled to a line per ``LOG_EVERY`` seconds of
each kind, which counts the lines left out.
"""

from __future__ import annotations

import json
import logging
import socket
from asyncio import Future
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import tornado.httpserver
import tornado.iostream
import tornado.web

from bot.config import HttpLimits
from bot.errors import ConfigError
from bot.health import Health
from bot.logs import Throttle
from bot.metrics import CONTENT_TYPE, Counter, Registry

log = logging.getLogger("unhooked.http")

MAX_BODY_BYTES = 1_000_000
"""Requests with a longer body are refused (400) before it is read: an update is a few kilobytes at most."""
LOG_EVERY = 10.0
"""Seconds between two log lines of one kind from the HTTP server and its routes (``bot.logs.Throttle``)."""
THROTTLED_LOGGERS = ("unhooked.http", "unhooked.telegram.webhook", "tornado.general", "tornado.application")
"""Where lines about single requests go: the routes' refusals, and tornado's malformed requests and timeouts."""
_REFUSED = b"503 Service Unavailable: too many connections, try again\n"
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_REFUSED), _REFUSED)
)
"""The whole answer to a connection beyond the limit, written before its request is read."""


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


class _BoundedServer(tornado.httpserver.HTTPServer):
    """Tornado's server, with at most ``max_connections`` connections open at once."""

    def initialize(self, *args: Any, max_connections: int, refused: Counter | None, **kwargs: Any) -> None:
        """Tornado's set-up, and the limit."""
        super().initialize(*args, **kwargs)
        self.max_connections = max_connections
        self.refused = refused
        self.open = 0

    def handle_stream(self, stream: tornado.iostream.IOStream, address: tuple[Any, ...]) -> None:
        """Serve the connection, or answer 503 and close it when ``max_connections`` are open."""
        if self.open >= self.max_connections:
            log.warning("refused a connection: %d are open, as many as UNHOOKED_HTTP_MAX_CONNECTIONS allows", self.open)
            if self.refused is not None:
                self.refused.inc()
            stream.write(REFUSAL).add_done_callback(lambda written: _close(stream, written))
            return
        self.open += 1
        super().handle_stream(stream, address)

    def on_close(self, server_conn: object) -> None:
        """A served connection ended."""
        self.open -= 1
        super().on_close(server_conn)


def _close(stream: tornado.iostream.IOStream, written: Future[None]) -> None:
    if not written.cancelled():
        written.exception()  # a client gone before its 503 is nothing to log
    stream.close()


class HttpServer:
    """One HTTP server for the bot: monitoring, and whatever routes are added to it, within ``limits``."""

    def __init__(
        self, listen: str, port: int, limits: HttpLimits | None = None, registry: Registry | None = None
    ) -> None:
        self.listen = listen
        self.port = port
        self.limits = limits or HttpLimits()
        self.app = tornado.web.Application([], log_function=lambda handler: None)
        self._server: _BoundedServer | None = None
        self._refused: Counter | None = None
        self._detach: Callable[[], None] = lambda: None
        if registry is not None:
            self._refused = registry.counter(
                "unhooked_http_connections_refused_total",
                "Connections answered 503 and closed: as many as UNHOOKED_HTTP_MAX_CONNECTIONS were open.",
            )
            registry.gauge("unhooked_http_connections", "Connections open to the HTTP server.", read=self.connections)

    def connections(self) -> int:
        """How many connections are open now."""
        return 0 if self._server is None else self._server.open

    def route(self, pattern: str, handler: type[tornado.web.RequestHandler], **options: Any) -> None:
        """Serve ``pattern`` (a regular expression for the path) with ``handler``."""
        self.app.add_handlers(r".*", [(pattern, handler, options)])

    async def start(self) -> None:
        """Bind and serve; with port 0 the chosen port is in ``self.port`` afterwards. Raises ``OSError``."""
        listening = _listen(self.listen, self.port)
        self._server = _BoundedServer(
            self.app,
            max_body_size=MAX_BODY_BYTES,
            idle_connection_timeout=self.limits.header_timeout,  # tornado's time limit for a request's head too
            body_timeout=self.limits.body_timeout,
            max_connections=self.limits.max_connections,
            refused=self._refused,
        )
        self._server.add_sockets([listening])
        self.port = listening.getsockname()[1]
        self._detach = Throttle(LOG_EVERY).attach(THROTTLED_LOGGERS)
        log.info("HTTP server listening on %s:%d", self.listen, self.port)

    async def stop(self) -> None:
        """Stop taking requests and close the connections once their requests are answered."""
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            await server.close_all_connections()
            self._detach()


async def serve_monitoring(
    listen: str, port: int, health: Health, registry: Registry, limits: HttpLimits | None = None
) -> HttpServer:
    """Start the bot's HTTP server with ``/healthz`` and ``/metrics``; a port it cannot take is a ``ConfigError``."""
    server = HttpServer(listen, port, limits, registry)
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
