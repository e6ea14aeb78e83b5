"""The engine, read as transcripts: crisis first, then intent, passage rotation and sessions."""

from __future__ import annotations

import pytest

from bot import prefilter
from bot.content import Catalog
from bot.engine import NO_CONTENT, NOT_UNDERSTOOD, SEEN_ALL, WHICH_TOPIC, Engine
from bot.errors import StoreError
from bot.models import Incoming, Level, ReplyKind, Session
from bot.store.memory import MemoryStore
from bot.store.sqlite import SqliteStore
from tests.conftest import SECRET, Chat


async def test_greeting_then_a_quoted_passage_then_crisis(chat: Chat, catalog: Catalog) -> None:
    greeting = await chat.say("hi")
    assert greeting[0].text == catalog.passages["greeting.welcome"].text
    assert [s.intent for s in greeting[0].suggestions] == ["miss_them", "what_is_trauma_bond", "should_i_go_back"]

    passage = await chat.say("why do I miss him")
    assert passage[0].text == catalog.passages["miss_them.hooked"].text
    assert passage[0].source is not None and "Why you miss her: trauma bonding" in passage[0].source

    crisis = await chat.say("I want to die")
    assert crisis[0].kind is ReplyKind.CRISIS
    assert crisis[0].text.startswith("Please call or text 988, or chat at 988lifeline.org")


async def test_a_crisis_message_never_gets_the_matchers_answer(chat: Chat) -> None:
    replies = await chat.say("why do I miss him, I want to kill myself")
    assert [reply.kind for reply in replies] == [ReplyKind.CRISIS]
    assert chat.last.match is None
    assert chat.last.detection.level is Level.CRISIS


async def test_the_crisis_screen_runs_even_on_a_button_tap(chat: Chat) -> None:
    replies = await chat.say("I want to die", topic="miss_them")
    assert replies[0].kind is ReplyKind.CRISIS


async def test_asking_again_gives_the_next_passage_and_never_repeats_one_as_new(chat: Chat, catalog: Catalog) -> None:
    order = catalog.intents["miss_them"].responses
    seen = [(await chat.say("why do I miss her so much"))[0] for _ in range(len(order) + 2)]
    assert [reply.text for reply in seen[: len(order)]] == [catalog.passages[pid].text for pid in order]
    for after in seen[len(order) :]:
        assert after.kind is ReplyKind.NOTICE
        assert after.text == SEEN_ALL.format(about="about “Why do I miss them?”")
        assert after.suggestions and "miss_them" not in [s.intent for s in after.suggestions]


async def test_a_seen_topic_offers_related_topics_that_still_have_something_new(chat: Chat, catalog: Catalog) -> None:
    await chat.say("what is no contact for")
    await chat.say("tell me more")
    await chat.say("how do i break the bond")  # a follow-up of no contact: offered no more once it is read
    await chat.say("how do i break the bond")
    replies = await chat.say("what is no contact for")
    offered = [s.intent for s in replies[0].suggestions]
    assert replies[0].text.startswith("You have now read everything the article says about “What is no contact for?”")
    assert offered and "no_contact" not in offered and "how_to_break" not in offered


async def test_a_passage_shared_by_two_topics_is_not_sent_again_under_the_other(chat: Chat, catalog: Catalog) -> None:
    twin = catalog.passages["miss_them.not_proof"].text
    assert catalog.passages["should_i_go_back.not_proof"].text == twin
    texts = [(await chat.say("why do I miss her so much"))[0].text for _ in range(3)]
    texts += [(await chat.say("should I go back to him"))[0].text for _ in range(3)]
    assert texts.count(twin) == 1


async def test_small_talk_may_come_round_again(chat: Chat, catalog: Catalog) -> None:
    assert [(await chat.say("thanks"))[0].text for _ in range(2)] == [catalog.passages["thanks.welcome"].text] * 2


@pytest.mark.parametrize("more", ["more", "go on", "and?", "continue", "keep going", "More."])
async def test_a_bare_more_continues_the_last_topic(chat: Chat, catalog: Catalog, more: str) -> None:
    await chat.say("why do I miss him")
    replies = await chat.say(more)
    assert chat.last.match.intent == "tell_me_more"
    assert replies[0].text == catalog.passages[catalog.intents["miss_them"].responses[1]].text


async def test_rotation_is_per_person(chat: Chat, catalog: Catalog) -> None:
    first = catalog.passages[catalog.intents["miss_them"].responses[0]].text
    await chat.say("why do I miss him")
    assert (await chat.as_user("bob").say("why do I miss him"))[0].text == first


async def test_tell_me_more_continues_the_last_topic(chat: Chat, catalog: Catalog) -> None:
    await chat.say("what is a trauma bond")
    replies = await chat.say("tell me more")
    second = catalog.intents["what_is_trauma_bond"].responses[1]
    assert replies[0].text == catalog.passages[second].text


async def test_tell_me_more_with_no_topic_yet_offers_topics(chat: Chat) -> None:
    replies = await chat.say("tell me more")
    assert replies[0].text == WHICH_TOPIC
    assert replies[0].suggestions


async def test_a_chosen_topic_skips_matching(chat: Chat, catalog: Catalog) -> None:
    replies = await chat.say("Should I go back?", topic="should_i_go_back")
    assert chat.last.match.reason == "chosen"
    assert replies[0].text == catalog.passages[catalog.intents["should_i_go_back"].responses[0]].text


async def test_an_unknown_topic_falls_back_to_matching_the_text(chat: Chat) -> None:
    await chat.say("hello", topic="no_such_intent")
    assert chat.last.match.intent == "greeting"


async def test_gibberish_gets_an_honest_fallback_with_topics(chat: Chat) -> None:
    replies = await chat.say("zxqv plorf")
    assert replies[0].kind is ReplyKind.FALLBACK
    assert replies[0].text == NOT_UNDERSTOOD
    assert 1 <= len(replies[0].suggestions) <= 3


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "x" * 10_000,
        "why do I miss him " * 700,
        "🙂🙂🙂",
        "\x00\x07\x1b[31mhello\x1b[0m",
        "لماذا أفتقده",
        "\u202eevil\u202c text",
        "\ud800",
    ],
    ids=["empty", "blank", "10k-chars", "long-repeats", "emoji", "control", "rtl", "bidi-override", "lone-surrogate"],
)
async def test_bad_input_never_crashes(chat: Chat, text: str) -> None:
    replies = await chat.say(text)
    assert replies and all(reply.text for reply in replies)


async def test_without_content_crisis_replies_still_go_out(clock) -> None:
    engine = Engine(MemoryStore(), SECRET, None, clock=clock)
    chat = Chat(engine)
    assert (await chat.say("how do I break the bond"))[0].text == NO_CONTENT
    assert (await chat.say("i want to kill myself"))[0].kind is ReplyKind.CRISIS
    await engine.aclose()


class BrokenStore(MemoryStore):
    """A store whose every call fails, as a locked or vanished database would."""

    async def load_session(self, user_key: str) -> Session | None:
        raise StoreError("database is locked")

    async def save_sessions(self, sessions: list[Session]) -> None:
        raise StoreError("database is locked")


async def test_a_broken_store_does_not_stop_replies(catalog: Catalog, clock) -> None:
    engine = Engine(BrokenStore(), SECRET, catalog, clock=clock)
    chat = Chat(engine)
    assert (await chat.say("i want to kill myself"))[0].kind is ReplyKind.CRISIS
    reminder, answer = await chat.say("what is a trauma bond")
    assert (reminder.kind, answer.kind) == (ReplyKind.CRISIS, ReplyKind.ANSWER)
    await engine.aclose()


async def test_a_failing_matcher_gets_an_apology_and_crisis_still_works(chat: Chat, monkeypatch) -> None:
    def explode(text: str) -> None:
        raise RuntimeError("matcher bug")

    monkeypatch.setattr(chat.engine.matcher, "match", explode)
    assert (await chat.say("what is a trauma bond"))[0].kind is ReplyKind.NOTICE
    assert (await chat.say("i want to kill myself"))[0].kind is ReplyKind.CRISIS


async def test_a_failing_screen_answers_with_crisis_resources(chat: Chat, monkeypatch) -> None:
    def explode(text: str) -> None:
        raise RuntimeError("screen bug")

    monkeypatch.setattr("bot.safety.detect", explode)
    assert (await chat.say("hello"))[0].kind is ReplyKind.CRISIS


async def test_sessions_are_stored_under_a_keyed_hash_only(catalog: Catalog, clock, tmp_path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SqliteStore(path) as store:
        engine = Engine(store, SECRET, catalog, clock=clock)
        await Chat(engine, user="123456789").say("what is a trauma bond")
        await engine.aclose()
    raw = b"".join(part.read_bytes() for part in tmp_path.glob("s.sqlite3*"))
    assert b"123456789" not in raw
    key = engine.user_key("test", "123456789")
    async with SqliteStore(path) as store:
        session = await store.load_session(key)
    assert session is not None and session.turns == 1 and session.last_intent == "what_is_trauma_bond"


async def test_a_turns_session_is_written_only_once_its_replies_were_delivered(catalog: Catalog, clock) -> None:
    store = MemoryStore()
    engine = Engine(store, SECRET, catalog, clock=clock)
    key = engine.user_key("test", "alice")
    first = await engine.handle(Incoming("alice", "why do I miss him", "test"))
    second = await engine.handle(Incoming("alice", "why do I miss him", "test"))
    assert first.replies[0].text != second.replies[0].text  # the second message saw the first turn at once
    await engine.sessions.flush()
    assert await store.load_session(key) is None  # neither turn's replies were delivered
    engine.delivered(first)
    await engine.sessions.flush()
    assert (await store.load_session(key)).turns == 1
    engine.delivered(second)
    await engine.aclose()
    assert (await store.load_session(key)).turns == 2


async def test_the_same_id_on_two_channels_is_two_people(engine: Engine) -> None:
    assert engine.user_key("telegram", "42") != engine.user_key("terminal", "42")


async def test_a_crisis_is_remembered_in_the_session(chat: Chat, clock) -> None:
    await chat.say("i want to kill myself")
    await chat.engine.sessions.flush()
    session = await chat.engine.sessions.store.load_session(chat.engine.user_key("test", "alice"))
    assert session.crisis_level is Level.CRISIS and session.crisis_at == clock.now


async def test_forget_deletes_the_session_even_before_it_was_written(chat: Chat) -> None:
    await chat.say("what is a trauma bond")
    assert await chat.engine.forget("test", "alice") == 0
    await chat.engine.sessions.flush()
    assert await chat.engine.sessions.store.load_session(chat.engine.user_key("test", "alice")) is None


async def test_each_turn_is_counted_by_day_without_identity(chat: Chat) -> None:
    for text in ("hi", "zxqv plorf", "i want to kill myself"):
        await chat.say(text)
    await chat.engine.sessions.flush()
    counts = await chat.engine.sessions.store.counts("2027-01-15")
    assert counts == {"messages": 3, "answers": 1, "fallbacks": 1, "escalations.crisis": 1}


async def test_fallback_offers_the_first_topics_of_the_menu(chat: Chat, catalog: Catalog) -> None:
    replies = await chat.say("zxqv plorf")
    assert [s.intent for s in replies[0].suggestions] == [intent.id for intent in catalog.menu()[:3]]
    assert [intent.menu for intent in catalog.menu()] == sorted(intent.menu for intent in catalog.menu())


@pytest.mark.parametrize("text", ["/start kms", "/help I want to die", "/delete he choked me"])
async def test_commands_pass_the_crisis_screen_too(chat: Chat, text: str) -> None:
    replies = await chat.say(text)
    assert replies[0].kind is ReplyKind.CRISIS


async def test_the_screens_prefilter_is_built_with_the_content_not_on_the_first_message(
    catalog: Catalog, monkeypatch
) -> None:
    built = []
    monkeypatch.setattr(prefilter, "_built", lambda rules: built.append(rules) or prefilter.Prefilter.of(rules))
    engine = Engine(MemoryStore(), SECRET, catalog)
    assert built == [engine.screen.rules]
    await Chat(engine).say("i want to kill myself")
    assert built == [engine.screen.rules]  # the first message found it ready
    await engine.aclose()


async def test_a_message_asking_two_things_answers_one_and_offers_the_other(chat: Chat, catalog: Catalog) -> None:
    replies = await chat.say("Why do I miss him so much? And should I go back to him?")
    answered, offered = chat.last.match.intent, chat.last.match.also
    assert {answered, offered} == {"miss_them", "should_i_go_back"}
    assert replies[0].text == catalog.passages[catalog.intents[answered].responses[0]].text
    assert replies[0].suggestions[0].intent == offered
