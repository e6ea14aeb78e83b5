"""The crisis screen's normaliser: what every lexicon pattern sees of a message."""

from __future__ import annotations

import pytest

from bot.normalize import MAX_CHARS
from bot.screen import screen_text


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
def test_screen_text(text: str, expected: str) -> None:
    assert screen_text(text) == expected


def test_the_work_is_capped_at_max_chars() -> None:
    assert len(screen_text("a " * MAX_CHARS * 3)) <= MAX_CHARS


def test_numbers_and_times_keep_their_digits() -> None:
    assert screen_text("took 30 at 11:11 on 2/14 for 5x") == "took 30 at 11 | 11 on 2 14 for 5x"
