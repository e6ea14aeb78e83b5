"""Privacy at rest, through ``python -m bot run`` and the fake Bot API, under the usual umask (0022).

The bot's folder is its owner's only (0700) and so is every file in it (0600): the database, its -wal and -shm,
``secret.key``. A journalled update keeps only what answering it needs (``bot/adapters/telegram/kept.py``): after
a kill, the journal of unanswered updates holds their words, and no names, usernames, languages, places, files
or quoted messages, in the database file or its WAL; the restart answers from it as it would have. Once
answered, the words are gone from both files (``secure_delete``, then a checkpoint that empties the WAL).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

from telegram import Update

from bot.adapters.telegram.kept import kept
from bot.adapters.telegram.texts import NO_LOCATION
from tests.conftest import mode
from tests.fake_bot_api import FakeBotApi
from tests.test_reliability import database, until
from tests.test_telegram_process import ended, journal, start

ASKING = range(7001, 7031)
IN_CRISIS, CAPTIONED, PLACED, STARTING, FORWARDING = 7031, 7032, 7033, 7034, 7035
EVERYONE = (*ASKING, IN_CRISIS, CAPTIONED, PLACED, STARTING, FORWARDING)
WORDS = b"quokka"
"""In every message's words: on disk while unanswered, gone once answered."""
PERSONAL = (b"Marisol", b"Quintero", b"mq70", b"es-MX", b"is_premium", b"Esperanza", b"51.507", b"AgACAgQ", b"older")
"""What Telegram sends beside the words: names, username, language, a forwarded sender, a place, a file, a quote."""


def personal(person: int) -> dict[str, Any]:
    """The sender and the chat as Telegram describes them: names, username, language."""
    names = {"first_name": "Marisol", "last_name": "Quintero", "username": f"mq{person}"}
    return {
        "from": {"id": person, "is_bot": False, **names, "language_code": "es-MX", "is_premium": True},
        "chat": {"id": person, "type": "private", **names},
    }


def send_all(api: FakeBotApi) -> None:
    for number, person in enumerate(ASKING):
        api.send(person, f"why do I miss him {WORDS.decode()}{number}", **personal(person))
    api.send(IN_CRISIS, f"I want to die {WORDS.decode()}", **personal(IN_CRISIS))
    photo = [{"file_id": "AgACAgQAAxkBAAIBZ2a", "file_unique_id": "AQADuLwx", "width": 90, "height": 90}]
    api.send(CAPTIONED, None, caption=f"I want to die {WORDS.decode()}", photo=photo, **personal(CAPTIONED))
    api.send(PLACED, None, location={"latitude": 51.50735, "longitude": -0.12776}, **personal(PLACED))
    api.send(STARTING, "/start", **personal(STARTING))
    earlier = {"message_id": 1, "date": api.now(), "chat": personal(FORWARDING)["chat"], "text": "an older message"}
    origin = {"type": "user", "date": api.now(), "sender_user": {"id": 99, "is_bot": False, "first_name": "Esperanza"}}
    api.send(
        FORWARDING, f"hello {WORDS.decode()}", forward_origin=origin, reply_to_message=earlier, **personal(FORWARDING)
    )


def on_disk(tmp_path: Path) -> bytes:
    """The bytes of the database file and its companions, as anyone reading the disk would find them."""
    return b"".join(path.read_bytes() for path in sorted((tmp_path / "data").glob("bot.sqlite3*")))


def journal_once_made(tmp_path: Path) -> tuple[int, int] | None:
    """``journal`` once the bot has made its database (connecting before would create the file), else ``None``."""
    if (tmp_path / "data" / "bot.sqlite3").exists():
        with contextlib.suppress(sqlite3.OperationalError):  # its tables are not there yet
            return journal(tmp_path)
    return None


def journalled(tmp_path: Path) -> list[dict[str, Any]]:
    with contextlib.closing(database(tmp_path)) as db:
        return [json.loads(raw) for (raw,) in db.execute("SELECT raw FROM updates WHERE raw IS NOT NULL")]


async def test_the_journal_keeps_no_names_and_the_words_go_once_answered(
    api: FakeBotApi, tmp_path: Path, umask_022: None
) -> None:
    for person in EVERYONE:
        api.private(person)
    api.hold("sendMessage")  # nothing is answered before the kill
    first = await start(api, tmp_path, "first", UNHOOKED_SECRET="")  # its key is generated into the data folder
    send_all(api)
    await until(lambda: journal_once_made(tmp_path) == (len(EVERYONE), len(EVERYONE)), 30, first)
    first.kill()
    assert await ended(first) == -signal.SIGKILL
    api.abort_held()

    left = on_disk(tmp_path)  # before anything opens the database again (closing it would fold the WAL in)
    assert WORDS in left  # the words wait for their answer, in the database or its WAL
    assert [found for found in PERSONAL if found in left] == []
    data = tmp_path / "data"
    assert mode(data) == 0o700
    assert {path.name: mode(path) for path in data.iterdir()} == dict.fromkeys(
        ("bot.sqlite3", "bot.sqlite3-wal", "bot.sqlite3-shm", "bot.sqlite3.created", "secret.key"), 0o600
    )
    rows = journalled(tmp_path)
    worded = [row["message"].get("text") or row["message"].get("caption", "") for row in rows]
    assert sum(WORDS.decode() in words for words in worded) == len(ASKING) + 3
    assert [row["message"]["location"] for row in rows if "location" in row["message"]] == [
        {"latitude": 0.0, "longitude": 0.0}
    ]

    second = await start(api, tmp_path, "second", UNHOOKED_SECRET="")
    await until(lambda: all(api.sent(person) for person in EVERYONE) and journal(tmp_path)[1] == 0, 30, second)
    assert all(api.sent(person)[0].text.startswith("I sat with that question") for person in ASKING)
    assert "988" in api.sent(IN_CRISIS)[0].text and "988" in api.sent(CAPTIONED)[0].text
    assert api.sent(PLACED)[0].text == NO_LOCATION
    assert api.sent(STARTING)[0].text.startswith("Hello, and welcome.")
    await until(lambda: WORDS not in on_disk(tmp_path), 10, second)  # within a second or so of the answers
    assert (data / "bot.sqlite3-wal").exists()  # still running: the WAL is there, emptied of them
    second.send_signal(signal.SIGTERM)
    assert await ended(second) == 0, (tmp_path / "second.log").read_text()[-3000:]
    assert WORDS not in on_disk(tmp_path)
    assert journal(tmp_path) == (len(EVERYONE), 0)
    assert {path.name: mode(path) for path in data.iterdir()} == dict.fromkeys(
        ("bot.sqlite3", "bot.sqlite3.created", "secret.key"), 0o600
    )


def test_what_the_journal_keeps_still_reads_as_the_update_it_came_from() -> None:
    sent = {
        "update_id": 5,
        "message": {
            "message_id": 3,
            "date": 1_800_000_000,
            "text": "/start please",
            "entities": [
                {"type": "bot_command", "offset": 0, "length": 6},
                {
                    "type": "text_mention",
                    "offset": 7,
                    "length": 6,
                    "user": {"id": 9, "is_bot": False, "first_name": "Esperanza"},
                },
            ],
            **personal(42),
        },
    }
    journalled_text = json.dumps(kept(Update.de_json(sent, None)))
    assert [found for found in PERSONAL if found in journalled_text.encode()] == []
    again = Update.de_json(json.loads(journalled_text), None)
    message = again.message
    assert (message.message_id, message.text, message.chat.id, message.chat.type) == (3, "/start please", 42, "private")
    assert (message.from_user.id, message.date.timestamp()) == (42, 1_800_000_000)
    assert [(entity.type, entity.offset, entity.length) for entity in message.entities] == [("bot_command", 0, 6)]


def test_a_tap_keeps_its_data_and_in_the_operators_chat_the_alert_it_edits() -> None:
    operator = {"id": 5555, "is_bot": False, "first_name": "Sam", "username": "sam_on_call", "language_code": "en"}
    buttons = {"inline_keyboard": [[{"text": "Acknowledge", "callback_data": "ack:e1"}]]}

    def tap(chat: dict[str, Any]) -> Update:
        alert = {"message_id": 8, "date": 1_800_000_000, "chat": chat, "text": "Escalation e1", "reply_markup": buttons}
        query = {"id": "q1", "from": operator, "chat_instance": "c", "data": "ack:e1", "message": alert}
        return Update.de_json({"update_id": 6, "callback_query": query}, None)

    group = kept(tap({"id": -100, "type": "supergroup", "title": "Operators"}))["callback_query"]
    assert group["from"] == {"id": 5555, "is_bot": False, "first_name": "", "username": "sam_on_call"}
    assert (group["data"], group["message"]["text"], group["message"]["reply_markup"]) == (
        "ack:e1",
        "Escalation e1",
        buttons,
    )
    assert "Operators" not in json.dumps(group)
    private = kept(tap({"id": 42, "type": "private", "first_name": "Marisol"}))["callback_query"]
    assert private["from"] == {"id": 5555, "is_bot": False, "first_name": ""}
    assert private["message"] == {"message_id": 8, "date": 1_800_000_000, "chat": {"id": 42, "type": "private"}}
