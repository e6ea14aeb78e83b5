"""The bot on Telegram, as people and operators use it: real PTB over real HTTP against a fake Bot API."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from bot import safety
from bot.models import Level
from bot.sessions import day_of
from tests.conftest import shows_id, telegram_db_on_both
from tests.fake_bot_api import DOCUMENT, LOCATION, PHOTO, STICKER, TOKEN, VOICE, FakeBotApi
from tests.telegram_harness import ADMIN, OPERATOR, OPERATORS, Running, telegram_bot

ALICE = 1001
BOB = 1002
GROUP = -1009876543210
NEUTRAL_WORDS = re.compile(r"abus|narciss|trauma|suicid|crisis|partner|violence|kill|die", re.IGNORECASE)

telegram_db = pytest.fixture(params=["sqlite", "postgres"], name="telegram_db")(telegram_db_on_both)
"""Every test here runs on a SQLite file and on PostgreSQL (``UNHOOKED_TEST_PG``)."""


async def say(tg: Running, user: int, text: str | None = None, **content) -> list:
    """A person writes; return the bot's messages to them sent in answer."""
    before = len(tg.api.sent(user, include_deleted=True))
    tg.api.send(user, text, **content)
    await tg.settle()
    return tg.api.sent(user, include_deleted=True)[before:]


async def test_the_bot_keeps_its_data_in_the_database_of_the_run(tg: Running, telegram_db: str | None) -> None:
    from bot.store.sqlite import SqliteStore

    if telegram_db is None:
        assert isinstance(tg.store, SqliteStore)
    else:
        from bot.store.postgres import PostgresStore

        assert isinstance(tg.store, PostgresStore)


async def test_start_registers_the_command_menu_and_welcomes_neutrally(tg: Running) -> None:
    [welcome] = await say(tg, ALICE, "/start")
    assert [c["command"] for c in tg.api.commands] == [
        "start",
        "topics",
        "crisis",
        "privacy",
        "forget",
        "erase",
        "help",
    ]
    first_line = welcome.text.splitlines()[0]
    assert first_line == "Hello, and welcome."
    assert not NEUTRAL_WORDS.search(first_line)
    assert "automated bot" in welcome.text and "/privacy" in welcome.text and "/crisis" in welcome.text
    assert welcome.callbacks and all(data.startswith("topic:") for data in welcome.callbacks)
    assert welcome.protect_content
    assert tg.api.description is not None and tg.api.short_description is not None
    for line in (tg.api.description, tg.api.short_description):  # seen before Start, maybe on a shared phone
        assert not NEUTRAL_WORDS.search(line) and "unhooked" not in line.lower()
    [call] = tg.api.requests("sendMessage", ALICE)
    assert call.params["parse_mode"] == "HTML"


async def test_help_lists_every_command_with_an_example(tg: Running) -> None:
    [help_] = await say(tg, ALICE, "/help")
    for command in ("/topics", "/crisis", "/privacy", "/forget", "/erase"):
        assert command in help_.text
    assert "for example" in help_.text


async def test_a_typed_question_gets_a_quoted_passage_its_source_and_topic_buttons(tg: Running) -> None:
    [answer] = await say(tg, ALICE, "why do I miss him if it was so bad")
    assert "It was telling me my brain was hooked." in answer.text
    assert answer.text.splitlines()[-1].startswith("— From the article")
    assert "<i>— From the article" in answer.html
    assert answer.callbacks and all(data.startswith("topic:") for data in answer.callbacks)


async def test_a_topic_tap_answers_like_the_question_and_answers_the_callback(tg: Running) -> None:
    [menu] = await say(tg, ALICE, "/topics")
    assert "topic:miss_them" in menu.callbacks and len(menu.callbacks) >= 5
    query = tg.api.tap(ALICE, menu, "topic:miss_them")
    await tg.settle()
    [answer] = tg.api.sent(ALICE)[1:]
    assert "It was telling me my brain was hooked." in answer.text
    assert query in tg.api.callback_answers


async def test_a_crisis_message_gets_988_and_the_operators_an_alert_they_can_acknowledge(tg: Running) -> None:
    [reply] = await say(tg, ALICE, "I want to die")
    assert "988" in reply.text
    [alert] = await tg.api.wait_sent(OPERATORS, 1)
    assert "Escalation: CRISIS" in alert.text and "Category: suicidal" in alert.text and "UTC" in alert.text
    assert "want to die" not in alert.text and not shows_id(alert.text, ALICE)
    [escalation] = await tg.store.escalations()
    assert escalation.user_key[:12] in alert.text
    await tg.api.wait_for(lambda: bool(tg.api.requests("sendMessage", OPERATORS)))

    query = tg.api.tap(OPERATOR, alert, f"ack:{escalation.id}")
    await tg.settle()
    [acked] = await tg.store.escalations()
    assert acked.acked_by == f"telegram:{OPERATOR}" and acked.acked_at is not None
    assert acked.alerted_at is not None
    assert "Acknowledged by telegram:5555" in alert.text and alert.callbacks == []
    assert tg.api.callback_answers[query]["text"] == "Acknowledged."


async def test_acknowledge_is_only_taken_from_the_operators_chat(tg: Running) -> None:
    await say(tg, ALICE, "I want to die")
    [escalation] = await tg.store.escalations()
    [mine] = tg.api.sent(ALICE)
    forged = {**tg.api._message_json(mine), "reply_markup": {"inline_keyboard": []}}
    tg.api.enqueue(
        {
            "callback_query": {
                "id": "query-99",
                "from": {"id": ALICE, "is_bot": False, "first_name": "A"},
                "message": forged,
                "chat_instance": "x",
                "data": f"ack:{escalation.id}",
            }
        }
    )
    await tg.settle()
    assert (await tg.store.escalations())[0].acked_by is None
    assert "query-99" in tg.api.callback_answers


async def test_danger_from_a_partner_gets_911_and_the_hotline_first(tg: Running) -> None:
    [reply] = await say(tg, ALICE, "he said he will kill me tonight")
    assert reply.text.startswith(f"{safety.PREVIEW_LINE}\nIf you are in immediate danger, call 911.")
    assert "1-800-799-7233" in reply.text and "START to 88788" in reply.text
    [alert] = await tg.api.wait_sent(OPERATORS, 1)
    assert "Escalation: IMMINENT" in alert.text and "partner_danger" in alert.text
    assert [e.level for e in await tg.store.escalations()] == [Level.IMMINENT]


async def test_crisis_command_gives_every_resource_any_time(tg: Running) -> None:
    [reply] = await say(tg, ALICE, "/crisis")
    assert not NEUTRAL_WORDS.search(reply.text.splitlines()[0])
    for fact in ("911", "988", "1-800-799-7233", "AYUDA", "Samaritans 116 123", "automated bot"):
        assert fact in reply.text
    assert await tg.store.escalations() == []
    assert not reply.protect_content  # the card can be forwarded to a friend; every other message is protected


async def test_crisis_command_in_a_group_gets_the_card_only_and_nothing_is_recorded(tg: Running) -> None:
    tg.api.send(ALICE, "/crisis@unhooked_bot", chat_id=GROUP)
    await tg.settle()
    [card] = tg.api.sent(GROUP)
    assert card.text.startswith("Here is who you can reach, any time.") and "988" in card.text
    assert not card.protect_content
    assert await tg.store.tell_group_once(tg.bot.replies.key(GROUP), 0.0) is True  # the notice was not recorded
    await tg.bot.engine.sessions.flush()
    assert await tg.store.load_session(tg.bot.replies.key(ALICE)) is None
    assert await tg.store.escalations() == []


async def test_privacy_says_what_is_kept_for_how_long_and_how_to_delete_it(tg: Running) -> None:
    [reply] = await say(tg, ALICE, "/privacy")
    for words in ("coded key", "48 hours", "/forget", "/erase", "Telegram itself keeps"):
        assert words in reply.text


@pytest.mark.parametrize(
    ("content", "expected"),
    [(STICKER, "I can only read text"), (PHOTO, "I can only read text"), (VOICE, "I can only read text"),
     (DOCUMENT, "I can only read text"), (LOCATION, "I can't use locations")],
    ids=["sticker", "photo", "voice", "document", "location"],
)  # fmt: skip
async def test_non_text_messages_get_a_kind_line_about_text(tg: Running, content: dict, expected: str) -> None:
    [reply] = await say(tg, ALICE, **content)
    assert reply.text.startswith(expected)
    assert "/crisis" in reply.text


async def test_a_photo_caption_passes_the_crisis_screen(tg: Running) -> None:
    [reply] = await say(tg, ALICE, caption="I want to die", **PHOTO)
    assert "988" in reply.text


async def test_an_edit_is_answered_again_only_when_it_shows_a_crisis(tg: Running) -> None:
    await say(tg, ALICE, "hello")
    tg.api.edit(ALICE, 1, "hello there")
    await tg.settle()
    assert len(tg.api.sent(ALICE)) == 1
    tg.api.edit(ALICE, 1, "I want to kill myself")
    await tg.settle()
    assert "988" in tg.api.sent(ALICE)[-1].text and len(tg.api.sent(ALICE)) == 2


async def test_in_a_group_the_bot_says_once_that_it_talks_in_private(tg: Running) -> None:
    tg.api.send(ALICE, "hello", chat_id=GROUP)
    tg.api.send(BOB, "anyone?", chat_id=GROUP)
    tg.api.send(ALICE, "/start", chat_id=GROUP)
    tg.api.send(ALICE, "hi", chat_id=OPERATORS)
    await tg.settle()
    [notice] = tg.api.sent(GROUP)
    assert notice.text.startswith("Hello. I only talk in private chats")
    assert tg.api.sent(OPERATORS) == []
    assert await tg.store.tell_group_once(tg.bot.replies.key(GROUP), 0.0) is False


async def test_a_crisis_in_a_group_gets_the_resources_card_even_after_the_notice(tg: Running) -> None:
    tg.api.send(ALICE, "hello", chat_id=GROUP)
    tg.api.send(BOB, "i want to kill myself", chat_id=GROUP)
    tg.api.send(BOB, "sorry", chat_id=GROUP)
    tg.api.edit(BOB, 3, "I want to die", chat_id=GROUP)
    await tg.settle()
    notice, card, edited_card = tg.api.sent(GROUP)
    assert notice.text.startswith("Hello. I only talk in private chats")
    assert card.text == edited_card.text and card.text.startswith("Here is who you can reach, any time.")
    assert "988" in card.text and "kill myself" not in card.text
    assert await tg.store.escalations() == []


async def test_forget_asks_first_and_no_keeps_everything(tg: Running) -> None:
    await say(tg, ALICE, "why do I miss him")
    [ask] = await say(tg, ALICE, "/forget")
    assert ask.callbacks == ["forget:no", "forget:yes"] or set(ask.callbacks) == {"forget:yes", "forget:no"}
    tg.api.tap(ALICE, ask, "forget:no")
    await tg.settle()
    assert ask.text == "All right, nothing was deleted." and ask.callbacks == []
    await tg.bot.engine.sessions.flush()
    assert await tg.store.load_session(tg.bot.replies.key(ALICE)) is not None


async def test_forget_deletes_everything_kept_and_says_what_telegram_keeps(tg: Running) -> None:
    await say(tg, ALICE, "why do I miss him")
    await say(tg, ALICE, "I want to die")
    [ask] = await say(tg, ALICE, "/forget")
    await tg.bot.engine.sessions.flush()
    key = tg.bot.replies.key(ALICE)
    assert await tg.store.load_session(key) is not None and await tg.store.message_ids(key)
    tg.api.tap(ALICE, ask, "forget:yes")
    await tg.settle()
    assert ask.text.startswith("Done. I deleted everything I kept about you")
    assert "Telegram still keeps this chat" in ask.text and "/erase" in ask.text
    await tg.bot.engine.sessions.flush()
    assert await tg.store.load_session(key) is None
    assert await tg.store.escalations() == []
    assert await tg.store.message_ids(key) == []
    assert await tg.store.unanswered_updates() == []


async def test_erase_deletes_the_recent_messages_of_the_chat(tg: Running) -> None:
    await say(tg, ALICE, "hello")
    await say(tg, ALICE, "why do I miss him")
    [report] = await say(tg, ALICE, "/erase")
    chat = [m for (chat, _), m in tg.api.messages.items() if chat == ALICE]
    assert [m.message_id for m in chat if not m.deleted] == [report.message_id]
    assert report.text.startswith("Done. I deleted 5 messages from this chat.")
    assert "could not be deleted" not in report.text
    assert await tg.store.message_ids(tg.bot.replies.key(ALICE)) == [report.message_id]


async def test_erase_says_plainly_what_it_could_not_delete(tg: Running) -> None:
    await say(tg, ALICE, "hello")
    tg.api.age(hours=49)
    await say(tg, ALICE, "why do I miss him")
    [report] = await say(tg, ALICE, "/erase")
    assert report.text.startswith("Done. I deleted 3 messages from this chat.")
    assert "2 could not be deleted: Telegram lets a bot delete messages for 48 hours only" in report.text
    assert "Delete chat" in report.text


async def test_stats_for_admins_and_the_normal_reply_for_everyone_else(tg: Running) -> None:
    await say(tg, ALICE, "why do I miss him")
    await say(tg, ALICE, "asdfgh qwerty")
    await say(tg, ALICE, "I want to die")
    [stats] = await say(tg, ADMIN, "/stats")
    day = day_of(tg.bot._clock())
    assert stats.text.splitlines()[:7] == [
        f"Today ({day}, UTC):",
        "messages: 3",
        "answers: 1",
        "fallbacks: 1",
        "crisis escalations: 1",
        "imminent escalations: 0",
        "concerns: 0",
    ]
    [normal] = await say(tg, BOB, "/stats")
    assert "Today" not in normal.text and normal.text.startswith("I'm not sure I understood that")


async def test_reload_for_admins_reports_what_it_did(
    api: FakeBotApi, tmp_path: Path, mini_content, telegram_db: str | None
) -> None:
    root = mini_content()
    async with telegram_bot(api, tmp_path, content_dir=root, db_url=telegram_db) as tg:
        [ok] = await say(tg, ADMIN, "/reload")
        assert ok.text.startswith("Content reloaded: 2 intents, 3 passages.")
        (root / "intents" / "hello.yml").write_text("id: [broken\n")
        [refused] = await say(tg, ADMIN, "/reload")
        assert re.match(r"Reload refused \(\d+ errors\); the previous content keeps serving\.\n", refused.text)
        assert f"{root}/intents/hello.yml:2: error: this is not valid content YAML" in refused.text
        [answer] = await say(tg, ALICE, "hello there")
        assert answer.text == "Hello. What is on your mind?"


async def test_a_broken_edit_is_refused_and_the_operators_are_told(
    api: FakeBotApi, tmp_path: Path, mini_content, telegram_db: str | None
) -> None:
    root = mini_content()
    async with telegram_bot(api, tmp_path, content_dir=root, db_url=telegram_db, core={"reload_seconds": 0.05}) as tg:
        (root / "intents" / "hello.yml").write_text("id: [broken\n")
        [alert] = await tg.api.wait_sent(OPERATORS, 1)
        assert alert.text.startswith("content reload refused (1 errors); the previous content keeps serving:")
        assert f"{root}/intents/hello.yml:2: error:" in alert.text
        [answer] = await say(tg, ALICE, "hello there")
        assert answer.text == "Hello. What is on your mind?"


async def test_logs_hold_no_message_text_no_token_and_no_raw_ids(
    api: FakeBotApi, tmp_path: Path, caplog: pytest.LogCaptureFixture, telegram_db: str | None
) -> None:
    caplog.set_level(logging.DEBUG)
    async with telegram_bot(api, tmp_path, db_url=telegram_db) as tg:
        await say(tg, 918273645, "my secret words about him")
        await say(tg, 918273645, "I want to die")
        await tg.api.wait_sent(OPERATORS, 1)
        assert not tg.bot.application.user_data and not tg.bot.application.chat_data  # no raw ids kept by PTB
    text = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert caplog.records
    for leak in ("secret words", "want to die", TOKEN, "918273645"):
        assert leak not in text


async def test_a_long_passage_is_split_at_sentence_ends_and_its_markup_escaped(
    api: FakeBotApi, tmp_path: Path, mini_content, telegram_db: str | None
) -> None:
    sentence = "Healing takes time & it is <not> a straight line, so be patient with yourself <3. "
    text = (sentence * 49) + "One more sentence, so the passage with its source no longer fits."
    assert 4096 - 60 < len(text) <= 4096  # under the passage limit, over Telegram's once its source line is added
    root = mini_content(
        {
            "source/article.txt": f"Long Heading\n{text}\n",
            "intents/long.yml": (
                "id: long\ntitle: The long one\nexamples:\n  - tell me the long one\nresponses:\n  - long.one\n"
            ),
            "responses/long.yml": f"passages:\n  - id: long.one\n    section: Long Heading\n    text: '{text}'\n",
            "responses/miss.yml": None,
            "intents/miss.yml": None,
            "responses/chat.yml": "passages:\n  - id: hello.reply\n    source: bot\n    text: Hello.\n",
            "tests/conversations/miss.yaml": None,
        }
    )
    async with telegram_bot(api, tmp_path, content_dir=root, db_url=telegram_db) as tg:
        pieces = await say(tg, ALICE, "tell me the long one")
    assert len(pieces) == 2
    assert all(len(piece.text) <= 4096 for piece in pieces)
    assert pieces[0].text == text and pieces[-1].text.startswith("— From the article")
    assert "&lt;not&gt;" in pieces[0].html and "&amp;" in pieces[0].html
