"""A fake Telegram Bot API server on 127.0.0.1: real HTTP and real Bot API JSON, for tests and benchmarks.

Start it from any asyncio code and point the bot at it::

    async with FakeBotApi() as api:
        env = api.env()                  # TELEGRAM_BOT_TOKEN and TELEGRAM_API_BASE_URL for the bot
        api.say(1001, "hello")           # a person writes; the bot gets it by getUpdates or its webhook
        replies = await api.wait_sent(1001, 1)
        print(replies[0].text)

It keeps Telegram's rules where the bot depends on them: ``getUpdates(offset)`` confirms and forgets what
came before ``offset``; a set webhook gets every update POSTed with the secret header until it answers 2xx;
HTML must parse and stay within 4096 characters; a message can be deleted for 48 hours; unknown chats and
blocked people are refused. Faults (429 with ``retry_after``, 5xx, 403, delays) are injected per method.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import itertools
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

TOKEN = "123456:TEST-token_of_the-fake-api"  # noqa: S105 (a made-up token for the fake server)
BOT_ID = 123456
BOT_USERNAME = "unhooked_test_bot"
DELETE_WINDOW = 48 * 3600
MAX_TEXT = 4096

_TAG = re.compile(r"</?(b|strong|i|em|u|ins|s|strike|del|code|pre|blockquote|tg-spoiler)>|<a href=\"[^\"<>]*\">|</a>")
_ENTITY = re.compile(r"&(?!(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);)")
_STRING_PARAMS = {
    "text",
    "parse_mode",
    "callback_query_id",
    "url",
    "secret_token",
    "caption",
    "description",
    "short_description",
}

STICKER = {
    "sticker": {
        "file_id": "CAACAgIAAxkBAAE",
        "file_unique_id": "AgADsticker",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
    }
}
PHOTO = {"photo": [{"file_id": "AgACAgIAAxkBAAE", "file_unique_id": "AQADphoto", "width": 90, "height": 90}]}
VOICE = {"voice": {"file_id": "AwACAgIAAxkBAAE", "file_unique_id": "AgADvoice", "duration": 3}}
DOCUMENT = {"document": {"file_id": "BQACAgIAAxkBAAE", "file_unique_id": "AgADdoc", "file_name": "notes.pdf"}}
LOCATION = {"location": {"latitude": 52.52, "longitude": 13.405}}
"""Message contents other than text, as Telegram sends them, for ``FakeBotApi.send(..., **STICKER)``."""


class ApiError(Exception):
    """A Bot API error answer: HTTP status, description and optional parameters."""

    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


@dataclass
class Sent:
    """A message in a chat as the fake keeps it: what the bot sent, or what a person wrote."""

    chat_id: int
    message_id: int
    date: int
    text: str
    """The text as a person sees it (HTML parsed)."""
    html: str = ""
    buttons: list[list[dict[str, Any]]] = field(default_factory=list)
    protect_content: bool = False
    from_bot: bool = True
    deleted: bool = False
    edits: int = 0

    @property
    def callbacks(self) -> list[str]:
        """The ``callback_data`` of every button, row by row."""
        return [button["callback_data"] for row in self.buttons for button in row if "callback_data" in button]

    @property
    def labels(self) -> list[str]:
        """The text of every button."""
        return [button["text"] for row in self.buttons for button in row]


@dataclass
class Fault:
    """What to do instead of (or before) answering matching requests."""

    method: str
    status: int = 0
    """The error status to answer with; 0 answers normally (after ``delay``)."""
    times: int = 1
    chat_id: int | None = None
    retry_after: int | None = None
    delay: float = 0.0
    description: str | None = None
    disconnect: bool = False
    """Drop the connection without an answer (a network error for the bot); nothing is processed."""


@dataclass
class _Gate:
    """Where held requests wait; ``aborted`` fails them unprocessed when it opens."""

    opened: asyncio.Event = field(default_factory=asyncio.Event)
    aborted: bool = False


@dataclass(frozen=True)
class Call:
    """One request the bot made, with its decoded parameters and the status it got."""

    method: str
    params: dict[str, Any]
    status: int


_DESCRIPTIONS = {
    400: "Bad Request",
    403: "Forbidden: bot was blocked by the user",
    429: "Too Many Requests: retry after {retry_after}",
    500: "Internal Server Error",
    502: "Bad Gateway",
}


def _user(user_id: int) -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": f"Person {user_id}", "language_code": "en"}


def parse_html(text: str) -> str:
    """What Telegram shows for HTML text, or ``ApiError`` 400 where Telegram would refuse it."""
    stripped = _TAG.sub("", text)
    if "<" in stripped or ">" in stripped:
        at = stripped.find("<") if "<" in stripped else stripped.find(">")
        raise ApiError(400, f"Bad Request: can't parse entities: unsupported tag or unescaped character at {at}")
    if _ENTITY.search(stripped):
        raise ApiError(400, "Bad Request: can't parse entities: unescaped '&'")
    return html.unescape(stripped)


def units(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


class FakeBotApi:
    """The Bot API methods a bot needs, on a random port of 127.0.0.1; see the module docstring."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.port = 0
        self.now_offset = 0.0
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.commands: list[dict[str, Any]] = []
        self.description: str | None = None
        self.short_description: str | None = None
        self.webhook: dict[str, Any] | None = None
        self.chats: dict[int, dict[str, Any]] = {}
        self.messages: dict[tuple[int, int], Sent] = {}
        self._chat_messages: dict[int, list[Sent]] = {}
        """Each chat's messages in the order they were made (their ids only grow), so ``sent`` need not sort."""
        self.delivered_to: Counter[int] = Counter()
        """Messages the bot sent successfully, per chat (cheap to read while thousands flow)."""
        self.blocked: set[int] = set()
        self.callback_answers: dict[str, dict[str, Any]] = {}
        self.enqueued = 0
        """Updates queued for the bot so far."""
        self.delivered = 0
        """The highest update id handed to the bot (by getUpdates or an accepted webhook POST)."""
        self._pending: list[dict[str, Any]] = []
        self.confirmed_below = 0
        """getUpdates confirmed every update below this id; Telegram forgot them."""
        self.handed_out: list[int] = []
        """Every update id handed to the bot, once per time it was handed out."""
        self.handed_at: dict[int, int] = {}
        """For each update handed to the bot, how many requests had been answered when it first was."""
        self._update_ids = itertools.count(1_000)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._query_ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._holding: dict[str, int] = {}
        self._gate: _Gate | None = None
        self._closing = False
        self._polls = 0
        """getUpdates requests so far: a new one ends a long poll still waiting with 409, as Telegram does."""
        self.held = 0
        """Requests waiting behind ``hold()``."""
        self._runner: web.AppRunner | None = None
        self._delivery: asyncio.Task[None] | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeBotApi:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._endpoint)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
        self._closing = True
        async with self._changed:
            self._changed.notify_all()
        if self._delivery is not None:
            self._delivery.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        """The value for ``TELEGRAM_API_BASE_URL``."""
        return f"http://127.0.0.1:{self.port}/bot"

    def env(self) -> dict[str, str]:
        """The environment a bot process needs to talk to this server."""
        return {"TELEGRAM_BOT_TOKEN": self.token, "TELEGRAM_API_BASE_URL": self.base_url}

    def now(self) -> int:
        """Telegram's clock; ``age()`` moves it forward."""
        return int(time.time() + self.now_offset)

    def age(self, hours: float) -> None:
        """Let ``hours`` pass for every message already sent (e.g. past the 48-hour delete window)."""
        self.now_offset += hours * 3600

    # --- people ------------------------------------------------------------------------------------------

    def group(self, chat_id: int, title: str = "A group") -> None:
        """Make a group chat known (the bot is a member), e.g. the operators' chat."""
        self.chats[chat_id] = {"id": chat_id, "title": title, "type": "supergroup"}

    def private(self, user_id: int) -> dict[str, Any]:
        """Make a person's private chat with the bot known (as after they pressed Start); return it."""
        return self._chat(user_id, None)

    def _chat(self, user_id: int, chat_id: int | None) -> dict[str, Any]:
        if chat_id is None or chat_id == user_id:
            chat = self.chats.setdefault(user_id, {"id": user_id, "first_name": f"Person {user_id}", "type": "private"})
        else:
            if chat_id not in self.chats:
                self.group(chat_id)
            chat = self.chats[chat_id]
        return chat

    def _next_message_id(self, chat_id: int) -> int:
        return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    def enqueue(self, update: dict[str, Any]) -> int:
        """Queue any update (``update_id`` is assigned); return its id."""
        update = {"update_id": next(self._update_ids), **update}
        self._pending.append(update)
        self.enqueued += 1
        self._notify()
        return update["update_id"]

    def send(self, user_id: int, text: str | None = None, *, chat_id: int | None = None, **content: Any) -> int:
        """A person writes ``text`` (or sends ``content`` such as ``**STICKER``); return the update id."""
        chat = self._chat(user_id, chat_id)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat["id"]),
            "from": _user(user_id),
            "chat": chat,
            "date": self.now(),
            **content,
        }
        if text is not None:
            message["text"] = text
            if text.startswith("/"):
                message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
        self._keep(Sent(chat["id"], message["message_id"], message["date"], text or "", from_bot=False))
        return self.enqueue({"message": message})

    say = send

    def edit(self, user_id: int, message_id: int, text: str, *, chat_id: int | None = None) -> int:
        """A person edits an earlier message; return the update id."""
        chat = self._chat(user_id, chat_id)
        message = {
            "message_id": message_id,
            "from": _user(user_id),
            "chat": chat,
            "date": self.now() - 60,
            "edit_date": self.now(),
            "text": text,
        }
        self.messages[(chat["id"], message_id)].text = text
        return self.enqueue({"edited_message": message})

    def tap(self, user_id: int, message: Sent, data: str) -> str:
        """A person taps the button ``data`` under ``message``; return the callback query id."""
        if data not in message.callbacks:
            raise ValueError(f"no button {data!r} under that message; it has {message.callbacks}")
        query_id = f"query-{next(self._query_ids)}"
        self.enqueue(
            {
                "callback_query": {
                    "id": query_id,
                    "from": _user(user_id),
                    "message": self._message_json(message),
                    "chat_instance": f"instance-{message.chat_id}",
                    "data": data,
                }
            }
        )
        return query_id

    def revoke(self) -> str:
        """Revoke the bot's token, as @BotFather does: requests with it get 401 from now on; return the new one."""
        number, _ = self.token.split(":", 1)
        self.token = f"{number}:{self.token.split(':', 1)[1][::-1]}"
        return self.token

    def block(self, user_id: int) -> None:
        """The person blocks the bot: every message to them is refused with 403 from now on."""
        self.blocked.add(user_id)

    # --- what the bot did --------------------------------------------------------------------------------

    def _keep(self, message: Sent) -> None:
        self.messages[(message.chat_id, message.message_id)] = message
        self._chat_messages.setdefault(message.chat_id, []).append(message)

    def sent(self, chat_id: int, *, include_deleted: bool = False) -> list[Sent]:
        """The bot's messages in a chat, oldest first."""
        return [m for m in self._chat_messages.get(chat_id, []) if m.from_bot and (include_deleted or not m.deleted)]

    def requests(self, method: str, chat_id: int | None = None) -> list[Call]:
        """The bot's requests to ``method`` (for one chat), in order, with the status each got."""
        return [c for c in self.calls if c.method == method and (chat_id is None or c.params.get("chat_id") == chat_id)]

    async def wait_for(self, check: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until ``check()`` is true; raise ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(check)

    async def wait_sent(self, chat_id: int, count: int, timeout: float = 10.0) -> list[Sent]:
        """Wait until the bot has sent ``count`` messages to a chat (deleted ones count); return them all."""
        await self.wait_for(lambda: len(self.sent(chat_id, include_deleted=True)) >= count, timeout)
        return self.sent(chat_id, include_deleted=True)

    # --- faults ------------------------------------------------------------------------------------------

    def fail(
        self,
        method: str,
        status: int,
        *,
        times: int = 1,
        chat_id: int | None = None,
        retry_after: int | None = None,
        description: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with an error (429 takes ``retry_after`` seconds)."""
        self.faults.append(Fault(method, status, times, chat_id, retry_after, 0.0, description))

    def slow(self, method: str, seconds: float, *, times: int = 1, chat_id: int | None = None) -> None:
        """Answer the next ``times`` matching requests only after ``seconds``."""
        self.faults.append(Fault(method, 0, times, chat_id, None, seconds))

    def disconnect(self, method: str, *, times: int = 1, chat_id: int | None = None) -> None:
        """Drop the connection of the next ``times`` matching requests before processing them."""
        self.faults.append(Fault(method, 0, times, chat_id, disconnect=True))

    def hold(self, *methods: str, after: int = 0) -> None:
        """Keep requests to ``methods`` waiting, unprocessed, after ``after`` more of them went through.

        They go on at ``release()``; ``abort_held()`` makes them fail unprocessed, as when the bot died
        before Telegram got to them (nothing sent, no offset confirmed).
        """
        for method in methods:
            self._holding[method] = after
        if self._gate is None:
            self._gate = _Gate()

    def release(self) -> None:
        """Let held requests go on, and hold nothing more."""
        self._holding.clear()
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.opened.set()

    def abort_held(self) -> None:
        """Fail every held request without processing it, and hold nothing more."""
        if self._gate is not None:
            self._gate.aborted = True
        self.release()

    # --- the HTTP side -----------------------------------------------------------------------------------

    def _notify(self) -> None:
        async def notify() -> None:
            async with self._changed:
                self._changed.notify_all()

        asyncio.get_running_loop().create_task(notify())

    async def _endpoint(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.match_info["token"] != self.token:
            return self._error(ApiError(401, "Unauthorized"))
        params = await self._params(request)
        status = 200
        try:
            result = await self._answer(request, method, params)
        except ApiError as error:
            status = error.status
            return self._error(error)
        finally:
            self.calls.append(Call(method, params, status))
            self._notify()
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    async def _params(request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            raw: dict[str, Any] = await request.json()
        else:
            raw = {**request.query, **(await request.post())}
        params = {}
        for name, value in raw.items():
            if isinstance(value, str) and name not in _STRING_PARAMS:
                with contextlib.suppress(ValueError):
                    value = json.loads(value)
            params[name] = value
        return params

    @staticmethod
    def _error(error: ApiError) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": error.status, "description": error.description}
        if error.parameters:
            body["parameters"] = error.parameters
        return web.json_response(body, status=error.status)

    async def _answer(self, request: web.Request, method: str, params: dict[str, Any]) -> Any:
        await self._apply_faults(request, method, params)
        if method in self._holding:
            if self._holding[method] > 0:
                self._holding[method] -= 1
            else:
                await self._wait_held()
        if request.match_info["token"] != self.token:  # revoked while it waited (held, or behind a fault)
            raise ApiError(401, "Unauthorized")
        handler = getattr(self, f"_api_{method}", None)
        if handler is None:
            raise ApiError(404, "Not Found")
        return await handler(params)

    async def _wait_held(self) -> None:
        gate = self._gate
        if gate is None:
            return
        self.held += 1
        self._notify()
        try:
            await gate.opened.wait()
        finally:
            self.held -= 1
        if gate.aborted:
            raise ApiError(500, "the request was never processed")

    async def _apply_faults(self, request: web.Request, method: str, params: dict[str, Any]) -> None:
        for fault in self.faults:
            if fault.method != method or fault.times <= 0:
                continue
            if fault.chat_id is not None and params.get("chat_id") != fault.chat_id:
                continue
            fault.times -= 1
            if fault.disconnect and request.transport is not None:
                request.transport.close()
                raise ApiError(500, "connection dropped")
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.status:
                template = fault.description or _DESCRIPTIONS.get(fault.status, "Error")
                parameters = {"retry_after": fault.retry_after} if fault.retry_after is not None else None
                raise ApiError(fault.status, template.format(retry_after=fault.retry_after), parameters)
            return

    def _bot_user(self) -> dict[str, Any]:
        return {"id": BOT_ID, "is_bot": True, "first_name": "Unhooked", "username": BOT_USERNAME}

    def _message_json(self, message: Sent) -> dict[str, Any]:
        sender = self._bot_user() if message.from_bot else _user(message.chat_id)
        body: dict[str, Any] = {
            "message_id": message.message_id,
            "from": sender,
            "chat": self.chats[message.chat_id],
            "date": message.date,
            "text": message.text,
        }
        if message.buttons:
            body["reply_markup"] = {"inline_keyboard": message.buttons}
        if message.protect_content:
            body["has_protected_content"] = True
        if message.edits:
            body["edit_date"] = self.now()
        return body

    def _known_chat(self, params: dict[str, Any]) -> int:
        chat_id = params.get("chat_id")
        if not isinstance(chat_id, int) or chat_id not in self.chats:
            raise ApiError(400, "Bad Request: chat not found")
        if chat_id in self.blocked:
            raise ApiError(403, _DESCRIPTIONS[403])
        return chat_id

    @staticmethod
    def _text_and_buttons(params: dict[str, Any]) -> tuple[str, list[list[dict[str, Any]]]]:
        source = params.get("text")
        if not isinstance(source, str) or not source.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        text = parse_html(source) if params.get("parse_mode") == "HTML" else source
        if units(text) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        markup = params.get("reply_markup") or {}
        rows = markup.get("inline_keyboard", []) if isinstance(markup, dict) else []
        for button in (button for row in rows for button in row):
            data = button.get("callback_data")
            if data is not None and not 1 <= len(data.encode()) <= 64:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
        return text, rows

    async def _api_getMe(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            **self._bot_user(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    async def _api_getUpdates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook is not None:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook")
        offset = params.get("offset")
        if isinstance(offset, int) and offset > self.confirmed_below:
            self.confirmed_below = offset
            self._pending = [u for u in self._pending if u["update_id"] >= offset]
        limit = min(int(params.get("limit") or 100), 100)
        timeout = float(params.get("timeout") or 0)
        self._polls += 1
        mine = self._polls
        self._notify()  # a long poll still waiting ends with 409
        if not self._pending and timeout > 0:
            async with self._changed:
                try:
                    async with asyncio.timeout(timeout):
                        await self._changed.wait_for(
                            lambda: bool(self._pending) or self._closing or self._polls != mine
                        )
                except TimeoutError:
                    pass
            if self._polls != mine:
                raise ApiError(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                )
        batch = self._pending[:limit]
        self.handed_out.extend(u["update_id"] for u in batch)
        for update in batch:
            self.handed_at.setdefault(update["update_id"], len(self.calls))
        self.delivered = max(self.delivered, len(batch) and batch[-1]["update_id"])
        return batch

    async def _api_sendMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id = self._known_chat(params)
        text, rows = self._text_and_buttons(params)
        message = Sent(
            chat_id,
            self._next_message_id(chat_id),
            self.now(),
            text,
            params["text"],
            rows,
            bool(params.get("protect_content")),
        )
        self._keep(message)
        self.delivered_to[chat_id] += 1
        return self._message_json(message)

    async def _api_editMessageText(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id = self._known_chat(params)
        message = self.messages.get((chat_id, params.get("message_id")))
        if message is None or message.deleted or not message.from_bot:
            raise ApiError(400, "Bad Request: message to edit not found")
        text, rows = self._text_and_buttons(params)
        if (text, rows) == (message.text, message.buttons):
            raise ApiError(400, "Bad Request: message is not modified")
        message.text, message.html, message.buttons = text, params["text"], rows
        message.edits += 1
        return self._message_json(message)

    async def _api_deleteMessage(self, params: dict[str, Any]) -> bool:
        chat_id = self._known_chat(params)
        message = self.messages.get((chat_id, params.get("message_id")))
        if message is None or message.deleted:
            raise ApiError(400, "Bad Request: message to delete not found")
        if self.now() - message.date > DELETE_WINDOW:
            raise ApiError(400, "Bad Request: message can't be deleted for everyone")
        message.deleted = True
        return True

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> bool:
        query_id = params.get("callback_query_id")
        if not isinstance(query_id, str) or not query_id.startswith("query-") or query_id in self.callback_answers:
            raise ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        self.callback_answers[query_id] = params
        return True

    async def _api_setMyCommands(self, params: dict[str, Any]) -> bool:
        self.commands = list(params.get("commands") or [])
        return True

    async def _api_setMyDescription(self, params: dict[str, Any]) -> bool:
        self.description = params.get("description") or None
        return True

    async def _api_setMyShortDescription(self, params: dict[str, Any]) -> bool:
        self.short_description = params.get("short_description") or None
        return True

    async def _api_getMyCommands(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return self.commands

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> bool:
        self.webhook = None
        if self._delivery is not None:
            self._delivery.cancel()
            self._delivery = None
        if params.get("drop_pending_updates"):
            self._pending.clear()
        return True

    async def _api_setWebhook(self, params: dict[str, Any]) -> bool:
        url = params.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ApiError(400, "Bad Request: bad webhook: an HTTPS URL must be provided for webhook")
        self.webhook = {"url": url, "secret_token": params.get("secret_token")}
        if params.get("drop_pending_updates"):
            self._pending.clear()
        if self._delivery is None:
            self._delivery = asyncio.get_running_loop().create_task(self._deliver())
        return True

    async def _api_getWebhookInfo(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": self.webhook["url"] if self.webhook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self._pending),
        }

    async def _api_close(self, params: dict[str, Any]) -> bool:
        return True

    async def _api_logOut(self, params: dict[str, Any]) -> bool:
        return True

    async def _deliver(self) -> None:
        """Like Telegram with a webhook set: POST each update in order until the bot answers 2xx."""
        async with aiohttp.ClientSession() as session:
            while True:
                async with self._changed:
                    await self._changed.wait_for(lambda: bool(self._pending) and self.webhook is not None)
                update, hook = self._pending[0], self.webhook
                headers = {"X-Telegram-Bot-Api-Secret-Token": hook["secret_token"]} if hook["secret_token"] else {}
                try:
                    async with session.post(hook["url"], json=update, headers=headers) as response:
                        accepted = 200 <= response.status < 300
                except aiohttp.ClientError:
                    accepted = False
                if accepted:
                    self._pending.pop(0)
                    self.handed_out.append(update["update_id"])
                    self.handed_at.setdefault(update["update_id"], len(self.calls))
                    self.delivered = max(self.delivered, update["update_id"])
                    self._notify()
                else:
                    await asyncio.sleep(0.1)
