"""Replies as Telegram messages: split at sentence ends within Telegram's limit, escaped, with buttons."""

from __future__ import annotations

from bot.adapters.telegram.render import MAX_CHARS, render, split_text, units
from bot.models import Reply, Suggestion
from tests.fake_bot_api import parse_html


def test_short_text_is_one_piece() -> None:
    assert split_text("One sentence. Two sentences.") == ["One sentence. Two sentences."]


def test_long_text_splits_after_the_last_sentence_that_fits() -> None:
    text = "First one is here. Second one is here. Third one is here."
    assert split_text(text, limit=40) == ["First one is here. Second one is here.", "Third one is here."]


def test_closing_quotes_stay_with_their_sentence() -> None:
    text = "She said “it is over.” Then she left. And I stayed."
    assert split_text(text, limit=30) == ["She said “it is over.”", "Then she left. And I stayed."]


def test_a_sentence_longer_than_the_limit_splits_between_words_then_anywhere() -> None:
    assert split_text("aaaa bbbb cccc dddd", limit=10) == ["aaaa bbbb", "cccc dddd"]
    assert split_text("abcdefghijkl", limit=5) == ["abcde", "fghij", "kl"]


def test_length_is_counted_as_telegram_counts_it() -> None:
    text = "😀" * 5
    assert units(text) == 10
    assert split_text(text, limit=4) == ["😀😀", "😀😀", "😀"]


def test_a_reply_is_escaped_and_its_source_and_buttons_go_on_the_last_message() -> None:
    reply = Reply("I <3 you & you know it.", source="From “A & B”", suggestions=(Suggestion("miss_them", "Miss"),))
    [message] = render(reply)
    assert message.html == "I &lt;3 you &amp; you know it.\n\n<i>— From “A &amp; B”</i>"
    assert parse_html(message.html) == "I <3 you & you know it.\n\n— From “A & B”"
    assert message.buttons.inline_keyboard[0][0].callback_data == "topic:miss_them"


def test_a_passage_at_the_limit_gets_its_source_as_a_message_of_its_own() -> None:
    reply = Reply("word. " * (MAX_CHARS // 6), source="From the article")
    messages = render(reply)
    assert len(messages) == 2 and messages[1].html == "<i>— From the article</i>"
    assert all(units(parse_html(message.html)) <= MAX_CHARS for message in messages)


def test_a_button_whose_data_would_be_too_long_is_left_out() -> None:
    [message] = render(Reply("Pick one.", suggestions=(Suggestion("x" * 80, "Too long"), Suggestion("ok", "Fine"))))
    assert [row[0].callback_data for row in message.buttons.inline_keyboard] == ["topic:ok"]
