"""The crisis screen's normaliser: what every lexicon pattern sees of a message."""

from __future__ import annotations

import pytest

from bot import lexicon, normalize, safety
from bot.normalize import MAX_CHARS
from bot.screen import screen, screen_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I want to DIE", "i want to die"),
        ("ｋｉｌｌ ｍｙｓｅｌｆ", "kill myself"),
        ("I\u2019m done", "i am done"),
        ("I\u02bcm done", "i am done"),
        ("don\u2019t wanna", "do not want to"),
        ("ki\u200bll my\u200dself", "kill myself"),
        ("diiiiie", "die"),
        ("kiiiill myyyself", "kill myself"),
        ("soooo tired", "so tired"),
        ("k1ll mys3lf", "kill myself"),
        ("$uicide", "suicide"),
        ("d!e", "die"),
        ("k i l l myself", "kill myself"),
        ("k i l l m y s e l f", "kill myself"),
        ("s.u.i.c.i.d.e", "suicide"),
        ("s-u-i-c-i-d-e", "suicide"),
        ("kіll myself", "kill myself"),
        ("took 20 \U0001f48a", "took 20 pills"),
        ("suicde", "suicide"),
        ("sucide", "suicide"),
        ("suicidel", "suicidal"),
        ("myslef", "myself"),
        ("kil my self", "kill myself"),
        ("sui cide", "suicide"),
        ("he'll kill me", "he will kill me"),
        ("everyone's asleep", "everyone is asleep"),
        ("kms rn", "kms right now"),
        ("i od'd", "i overdosed"),
        ("800mg x 20 at 3am, 24/7", "800mg x 20 at 3am | 24 7"),
        ("I'm not going to lie, I want to die.", "i am not going to lie | i want to die"),
        ("bye!!! see you...", "bye | see you"),
        ("wow!! k!ll", "wow | kill"),
        ("he killed my self-esteem", "he killed my self esteem"),
        ("\U0001f642\U0001f642", ""),
        ("", ""),
    ],
)
def test_screen_text_folds(text: str, expected: str) -> None:
    assert screen_text(text) == expected


def test_the_work_is_capped_at_max_chars() -> None:
    assert len(screen_text("a " * MAX_CHARS * 3)) <= MAX_CHARS


def test_numbers_and_times_keep_their_digits() -> None:
    assert screen_text("took 30 at 11:11 on 2/14 for 5x") == "took 30 at 11 | 11 on 2 14 for 5x"


LOOK_ALIKES = [
    ("i want to kíll myself", "i want to kill myself"),
    ("i just want to dïe", "i just want to die"),
    ("i am sûïcídal", "i am suicidal"),
    ("i want to kiII myself", "i want to kill myself"),
    ("KiII myseIf", "kill myself"),
    ("i want to kıll myself", "i want to kill myself"),
    ("kiłł myself", "kill myself"),
    ("i want to kill\u3164myself", "i want to kill myself"),
    ("i want\u115fto\u1160die", "i want to die"),
    ("i\uffa0want\uffa0to\uffa0die", "i want to die"),
    ("i want to die\u2800tonight", "i want to die tonight"),
]
"""Accents, diacritics, dotless ı, capital I for l and invisible fillers used as spaces, with what the screen reads."""


@pytest.mark.parametrize(("text", "expected"), LOOK_ALIKES)
def test_look_alike_letters_and_fillers_are_folded(text: str, expected: str) -> None:
    assert screen_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I want to die", "i want to die"),
        ("I KILL TIME", "i kill time"),
        ("Is it Illegal? I will", "is it illegal | i will"),
        ("my Iife, my Iast message", "my life | my last message"),
        ("fiancé café naïve", "fiance cafe naive"),
        ("안녕 ㅤ hi", "안녕 hi"),
    ],
)
def test_a_capital_i_stays_unless_only_l_makes_a_lexicon_word(text: str, expected: str) -> None:
    assert screen_text(text) == expected


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("I'm safe now. Why do I miss him?", (("i am safe now", False), ("why do i miss him", True))),
        ("i'm safe, are you?", (("i am safe", True), ("are you", True))),
        ("I'm safe\nwhy do i miss him", (("i am safe", False), ("why do i miss him", False))),
        ("safe?! ok", (("safe", False), ("ok", False))),
        ("k\ni\nl\nl myself", (("kill myself", False),)),
    ],
)
def test_clauses_come_from_the_same_reading(text: str, clauses: tuple) -> None:
    read = screen(text)
    assert read.clauses == clauses
    assert read.text == screen_text(text)


def test_no_word_table_of_the_screen_repeats_another_ones_key() -> None:
    tables = [normalize.MISSPELLINGS, normalize.SHORTHAND, normalize.CONTRACTIONS, lexicon.CONTRACTIONS_EXTRA]
    tables.append(lexicon.TYPOS)
    keys = [key for table in tables for key in table]
    assert len(keys) == len(set(keys)), sorted(key for key in set(keys) if keys.count(key) > 1)


@pytest.mark.parametrize("word", [*normalize.PARTNER_WORDS, *normalize.PARTNER_WORDS_AFTER_MY])
def test_the_screen_and_the_matcher_read_the_same_partner_words(word: str) -> None:
    assert normalize.for_matching(f"why do i miss my {word}") == "why do i miss them"
    found = safety.detect(f"my {word} hit me again")
    assert found is not None and found.rule == "partner.violence"
