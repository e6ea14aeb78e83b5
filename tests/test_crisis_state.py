"""A crisis state lasts across turns: help stays in view until the person says they are safe or goes quiet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot import screen
from bot.bounded import compile_pattern
from bot.content import Catalog, load_catalog
from bot.engine import CRISIS_QUIET, HELD_BACK, NOT_UNDERSTOOD, Engine
from bot.lexicon import Rule
from bot.models import Level, ReplyKind, Track
from bot.safety import SAFE_ACK
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore
from tests.conftest import SECRET, Chat, Clock


async def session_of(chat: Chat):
    return await chat.engine.sessions.get(chat.engine.user_key(chat.channel, chat.user), 0.0)


async def test_after_a_crisis_every_answer_keeps_help_in_view_and_asks_about_safety(
    chat: Chat, catalog: Catalog
) -> None:
    await chat.say("i want to kill myself")
    replies = await chat.say("why do I miss him")
    assert [reply.kind for reply in replies] == [ReplyKind.CRISIS, ReplyKind.ANSWER]
    assert "988" in replies[0].text and "Are you safe right now?" in replies[0].text
    assert replies[1].text == catalog.passages["miss_them.hooked"].text
    again = await chat.say("what is a trauma bond")
    assert again[0].kind is ReplyKind.CRISIS and again[1].kind is ReplyKind.ANSWER


async def test_saying_safe_ends_the_crisis_state(chat: Chat) -> None:
    await chat.say("kms")
    assert await chat.say("I’m safe now") == [SAFE_ACK]
    replies = await chat.say("why do I miss him")
    assert [reply.kind for reply in replies] == [ReplyKind.ANSWER]
    assert (await session_of(chat)).crisis_level is None


async def test_saying_safe_with_a_question_ends_the_state_and_answers(chat: Chat, catalog: Catalog) -> None:
    await chat.say("kms")
    replies = await chat.say("I'm safe now. Why do I miss him?")
    assert replies == [SAFE_ACK, *replies[1:]] and replies[1].text == catalog.passages["miss_them.hooked"].text


async def test_saying_not_safe_never_ends_it_and_is_a_crisis_of_its_own(chat: Chat) -> None:
    await chat.say("i want to die")
    replies = await chat.say("I'm not safe")
    assert [reply.kind for reply in replies] == [ReplyKind.CRISIS]
    assert "1-800-799-7233" in replies[0].text
    assert chat.last.escalation is not None and chat.last.escalation.category == "partner_danger"
    session = await session_of(chat)
    assert session.crisis_level is Level.CRISIS and session.crisis_track is Track.OTHERS


async def test_a_yes_or_no_does_not_end_it(chat: Chat) -> None:
    await chat.say("i want to die")
    for answer in ("yes", "no", "ok"):
        replies = await chat.say(answer)
        assert replies[0].kind is ReplyKind.CRISIS, answer
    assert (await session_of(chat)).crisis_level is Level.CRISIS


async def test_the_state_ends_when_the_session_goes_quiet(chat: Chat, clock: Clock) -> None:
    await chat.say("i want to die")
    clock.advance(CRISIS_QUIET - 60)
    assert (await chat.say("why do I miss him"))[0].kind is ReplyKind.CRISIS
    clock.advance(CRISIS_QUIET + 1)
    assert [reply.kind for reply in await chat.say("why do I miss him")] == [ReplyKind.ANSWER]
    assert (await session_of(chat)).crisis_level is None


async def test_an_ambiguous_message_during_the_state_counts_as_a_crisis_and_is_recorded(chat: Chat) -> None:
    await chat.say("i want to die")
    replies = await chat.say("I can't do this anymore")
    assert [reply.kind for reply in replies] == [ReplyKind.CRISIS]
    assert chat.last.escalation.level is Level.CRISIS and chat.last.escalation.rule == "hopelessness.cant_go_on"
    await chat.say("I'm going to do it tonight")
    assert chat.last.escalation.level is Level.IMMINENT
    assert (await session_of(chat)).crisis_level is Level.IMMINENT


async def test_a_crisis_that_a_rule_raises_in_the_state_is_raised_whatever_screen_found_it(chat: Chat) -> None:
    # A crisis-level detection keeps its rule's level for the crisis state (here imminent), as a lower one does:
    # the learned screen's crisis verdict on "going to do it tonight" once dropped the lexicon's imminent.
    rule = Rule(
        "test.yellow_umbrella",
        "method",
        Level.CRISIS,
        compile_pattern(r"\byellow umbrella\b"),
        window_level=Level.IMMINENT,
    )
    chat.engine.screen.use((*chat.engine.screen.rules, rule))
    await chat.say("the yellow umbrella")
    assert chat.last.escalation.level is Level.CRISIS  # not yet in a crisis state: the rule's own level
    await chat.say("the yellow umbrella again")
    assert chat.last.escalation.level is Level.IMMINENT and chat.last.escalation.rule == rule.id
    assert (await session_of(chat)).crisis_level is Level.IMMINENT


async def test_both_tracks_stay_in_view_once_seen(chat: Chat) -> None:
    await chat.say("he choked me")
    await chat.say("and i want to die")
    session = await session_of(chat)
    assert session.crisis_level is Level.IMMINENT and session.crisis_track is Track.OTHERS
    reminder = (await chat.say("what is a trauma bond"))[0]
    assert "911" in reminder.text and "1-800-799-7233" in reminder.text and "988" in reminder.text


async def test_a_concern_gets_a_check_in_before_the_answer_and_only_a_daily_count(chat: Chat) -> None:
    replies = await chat.say("I'm not okay, why do I miss him so much")
    assert [reply.kind for reply in replies] == [ReplyKind.CHECK_IN, ReplyKind.ANSWER]
    assert "988" in replies[0].text
    assert chat.last.escalation is None and chat.last.detection.level is Level.CONCERN
    assert (await session_of(chat)).crisis_level is None
    await chat.engine.sessions.flush()
    store = chat.engine.sessions.store
    assert (await store.counts("2027-01-15"))["concerns"] == 1
    assert await store.escalations() == []


async def test_a_check_in_is_not_followed_by_i_did_not_understand(chat: Chat) -> None:
    replies = await chat.say("i give up")
    assert [reply.kind for reply in replies] == [ReplyKind.CHECK_IN]
    assert chat.last.match.reason == "low_confidence"
    assert all(reply.text != NOT_UNDERSTOOD for reply in replies)


async def test_the_crisis_state_survives_a_restart(catalog: Catalog, clock: Clock, tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    async with SqliteStore(path) as store:
        engine = Engine(store, SECRET, catalog, clock=clock)
        await Chat(engine).say("i want to die")
        await engine.aclose()
    clock.advance(600)
    async with SqliteStore(path) as store:
        engine = Engine(store, SECRET, catalog, clock=clock)
        replies = await Chat(engine).say("why do I miss him")
        await engine.aclose()
    assert [reply.kind for reply in replies] == [ReplyKind.CRISIS, ReplyKind.ANSWER]


VIOLENT = """\
passages:
  - id: story.violence
    section: A story
    text: The first time he hit me I told no one.
  - id: story.calm
    section: A story
    text: Healing is slow, and that is all right.
"""
STORY = """\
id: story
title: Tell me a story
examples:
  - tell me a story
responses:
  - story.violence
  - story.calm
"""


async def test_passages_describing_violence_are_held_back_during_the_state(
    write_content: Callable[[dict[str, str]], Path], clock: Clock
) -> None:
    catalog = load_catalog(write_content({"intents/story.yml": STORY, "responses/story.yml": VIOLENT}))
    engine = Engine(MemoryStore(), SECRET, catalog, clock=clock)
    calm, crisis = Chat(engine, user="calm"), Chat(engine, user="crisis")
    assert (await calm.say("tell me a story"))[0].text == catalog.passages["story.violence"].text
    await crisis.say("i want to die")
    assert (await crisis.say("tell me a story"))[1].text == catalog.passages["story.calm"].text
    assert (await crisis.say("tell me a story"))[1].text == HELD_BACK  # the calm one was read, the other held back
    await crisis.say("i'm safe")
    assert (await crisis.say("tell me a story"))[0].text == catalog.passages["story.violence"].text
    await engine.aclose()


async def test_more_in_a_crisis_state_keeps_the_reminder_and_continues_the_topic(chat: Chat, catalog: Catalog) -> None:
    await chat.say("i want to kill myself")
    await chat.say("why do I miss him")
    replies = await chat.say("more")
    assert [reply.kind for reply in replies] == [ReplyKind.CRISIS, ReplyKind.ANSWER]
    assert "988" in replies[0].text
    assert replies[1].text == catalog.passages[catalog.intents["miss_them"].responses[1]].text


async def test_more_in_a_crisis_state_never_quotes_a_passage_that_describes_violence(
    write_content: Callable[[dict[str, str]], Path], clock: Clock
) -> None:
    calm_first = STORY.replace("  - story.violence\n  - story.calm\n", "  - story.calm\n  - story.violence\n")
    more = "id: more\naction: continue\nexamples:\n  - more\n  - go on\n"
    files = {"intents/story.yml": calm_first, "intents/more.yml": more, "responses/story.yml": VIOLENT}
    catalog = load_catalog(write_content(files))
    engine = Engine(MemoryStore(), SECRET, catalog, clock=clock)
    chat = Chat(engine)
    await chat.say("i want to die")
    assert (await chat.say("tell me a story"))[1].text == catalog.passages["story.calm"].text
    for more in ("more", "go on"):
        replies = await chat.say(more)
        assert [reply.kind for reply in replies] == [ReplyKind.CRISIS, ReplyKind.NOTICE]
        assert replies[1].text == HELD_BACK
    await engine.aclose()


async def test_when_only_violent_passages_are_left_the_bot_says_so(
    write_content: Callable[[dict[str, str]], Path], clock: Clock
) -> None:
    only_violent = STORY.replace("  - story.calm\n", "")
    catalog = load_catalog(write_content({"intents/story.yml": only_violent, "responses/story.yml": VIOLENT}))
    engine = Engine(MemoryStore(), SECRET, catalog, clock=clock)
    chat = Chat(engine)
    await chat.say("i want to die")
    replies = await chat.say("tell me a story")
    assert replies[1].text == HELD_BACK
    await engine.aclose()


@pytest.mark.parametrize(
    "text", ["i want to kíll myself", "i want to kiII myself", "i want to kıll myself", "i want to kill\u3164myself"]
)
async def test_look_alike_letters_get_the_crisis_reply(chat: Chat, text: str) -> None:
    [reply] = await chat.say(text)
    assert reply.kind is ReplyKind.CRISIS and "988" in reply.text
    assert chat.last.escalation is not None and chat.last.escalation.rule == "suicidal.kill_myself"


async def test_each_message_is_read_by_the_screen_once(chat: Chat, monkeypatch: pytest.MonkeyPatch) -> None:
    await chat.say("kms")
    reads: list[str] = []
    real = screen._pieces

    def counted(text: str) -> list:
        reads.append(text)
        return real(text)

    monkeypatch.setattr(screen, "_pieces", counted)
    replies = await chat.say("I'm safe now. Why do I miss him?")
    assert replies[0] == SAFE_ACK and len(replies) == 2
    assert reads == ["I'm safe now. Why do I miss him?"]
