"""The terminal as a real adapter: an interactive chat, or one message per line when scripted."""

from __future__ import annotations

import asyncio
import shutil
import textwrap
import threading
from collections.abc import Callable, Sequence
from typing import TextIO

from bot.engine import Engine
from bot.escalation import Alerter
from bot.models import Escalation, Incoming, Reply, Suggestion
from bot.reload import ContentAlert, Reload
from bot.watchdog import Notice

CHANNEL = "terminal"
PROMPT = "you> "
WELCOME = "Unhooked, in your terminal. Type a message, a topic number, or press Ctrl-D to leave."
FAREWELL = "Take care of yourself."


def stderr_alerter(stream: TextIO) -> Alerter:
    """Operators' alerts for a terminal session: one line on stderr per escalation."""

    async def alert(escalations: Sequence[Escalation]) -> None:
        for escalation in escalations:
            stream.write(
                f"[operator alert] {escalation.level.value} escalation, category {escalation.category}, "
                f"rule {escalation.rule}, person {escalation.user_key[:8]}, id {escalation.id}\n"
            )
        stream.flush()

    return alert


def stderr_content_alert(stream: TextIO) -> ContentAlert:
    """Operators' alert for a refused content reload: the ``check`` output of its errors, on stderr."""

    async def alert(result: Reload) -> None:
        stream.write("".join(f"[content] {line}\n" for line in result.describe().splitlines()))
        stream.flush()

    return alert


def stderr_notice(stream: TextIO) -> Notice:
    """Operators' notices for a terminal session (a database lost or unusable), on stderr."""

    async def notice(text: str) -> None:
        stream.write(f"[operator notice] {text}\n")
        stream.flush()

    return notice


def render(reply: Reply, width: int | None) -> str:
    """Format one reply as plain text: the message, its source, and numbered topics."""

    def wrap(text: str, indent: str = "") -> str:
        if width is None:
            return indent + text
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent)

    lines = [wrap(paragraph) for paragraph in reply.text.split("\n")]
    if reply.source:
        lines.append(wrap(f"— {reply.source}", "  "))
    if reply.suggestions:
        topics = "   ".join(f"[{number}] {s.label}" for number, s in enumerate(reply.suggestions, 1))
        lines.append(wrap(f"{topics}   (type a number to choose)", "  "))
    return "\n".join(lines)


class TerminalChat:
    """Reads lines, hands them to the engine, prints the replies."""

    def __init__(self, engine: Engine, *, user: str, stdin: TextIO, stdout: TextIO, interactive: bool) -> None:
        self.engine = engine
        self.user = user
        self.stdin = stdin
        self.stdout = stdout
        self.interactive = interactive
        self.width = min(shutil.get_terminal_size().columns, 88) if interactive else None
        self._choices: tuple[Suggestion, ...] = ()

    def incoming(self, line: str) -> Incoming:
        """Turn a typed line into a message; a topic number picks that topic."""
        text = line.strip()
        if text.isdigit() and 1 <= int(text) <= len(self._choices):
            chosen = self._choices[int(text) - 1]
            return Incoming(self.user, chosen.label, CHANNEL, topic=chosen.intent)
        return Incoming(self.user, line, CHANNEL)

    async def say(self, line: str) -> list[Reply]:
        """Handle one line, print its replies, then keep the session the turn left (only once printed)."""
        outcome = await self.engine.handle(self.incoming(line))
        for reply in outcome.replies:
            self.stdout.write(render(reply, self.width) + "\n")
            self._choices = reply.suggestions or self._choices
        self.stdout.write("\n")
        self.stdout.flush()
        self.engine.delivered(outcome)
        return list(outcome.replies)

    async def run(self) -> None:
        """Chat until end of input."""
        if self.interactive:
            self.stdout.write(WELCOME + "\n\n")
            self.stdout.flush()
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        ready = threading.Event()
        read = self._reader()
        loop = asyncio.get_running_loop()
        threading.Thread(target=_pump, args=(loop, lines, ready, read), daemon=True, name="stdin").start()
        while True:
            ready.set()
            line = await lines.get()
            if line is None:
                break
            if line.strip():
                await self.say(line)
        if self.interactive:
            self.stdout.write(f"\n{FAREWELL}\n")

    def _reader(self) -> Callable[[], str]:
        if self.interactive:
            return lambda: input(PROMPT)

        def read_line() -> str:
            line = self.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")

        return read_line


def _pump(
    loop: asyncio.AbstractEventLoop,
    lines: asyncio.Queue[str | None],
    ready: threading.Event,
    read: Callable[[], str],
) -> None:
    """Read lines on a daemon thread, one at a time, so Ctrl-C and exit never wait on input."""
    while True:
        ready.wait()
        ready.clear()
        try:
            line: str | None = read()
        except (EOFError, OSError, ValueError):
            line = None
        try:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        except RuntimeError:  # the chat has ended and its loop is closed
            return
        if line is None:
            return
