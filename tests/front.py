"""A round-robin front on 127.0.0.1 for webhook replicas, as a load balancer is (tests and the benchmark)."""

from __future__ import annotations

import contextlib
import itertools
import socket
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.asynccontextmanager
async def round_robin(ports: list[int]) -> AsyncIterator[str]:
    """A front on 127.0.0.1 that passes each POST to the next replica taking connections; yields its URL."""
    turn = itertools.cycle(range(len(ports)))

    async def forward(request: web.Request) -> web.Response:
        body, headers = await request.read(), {k: v for k, v in request.headers.items() if k.lower() != "host"}
        for _ in ports:
            url = f"http://127.0.0.1:{ports[next(turn)]}{request.path}"
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    return web.Response(status=response.status, body=await response.read())
            except aiohttp.ClientError:
                continue  # that replica is down: the next one takes it
        return web.Response(status=502)

    async with aiohttp.ClientSession() as session:
        app = web.Application()
        app.router.add_post("/{path:.*}", forward)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            yield f"http://127.0.0.1:{port}/telegram"
        finally:
            await runner.cleanup()
