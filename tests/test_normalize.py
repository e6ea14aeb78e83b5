"""Normalisation: what the matcher and the crisis screen see of a message."""

from __future__ import annotations

import pytest

from bot.normalize import MAX_CHARS, fold, for_matching, squeeze


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Why do I MISS him?!", "why do i miss them"),
        ("why do i miss her", "why do i miss them"),
        ("Why do I miss my ex-husband", "why do i miss them"),
        ("why do i miss my girlfriend", "why do i miss them"),
        ("why do I miss my ex", "why do i miss them"),
        ("I can\u2019t stop", "i can not stop"),
        ("I cant stop", "i can not stop"),
        ("im sooooo tired", "i am so tired"),
        ("why do i mis him", "why do i miss them"),
        ("idk what 2 do", "i do not know what 2 do"),
        ("ｆｕｌｌ ｗｉｄｔｈ", "full width"),
        ("zero\u200bwidth", "zerowidth"),
        ("the narcissist lied", "them lied"),
        ("🙂🙂", ""),
    ],
)
def test_for_matching(text: str, expected: str) -> None:
    assert for_matching(text) == expected


def test_every_partner_word_folds_to_the_same_token() -> None:
    variants = [
        "him",
        "her",
        "them",
        "my ex",
        "my husband",
        "my wife",
        "my boyfriend",
        "my bf",
        "my partner",
        "my abuser",
    ]
    assert {for_matching(f"should I go back to {who}") for who in variants} == {"should i go back to them"}


def test_fold_removes_control_characters_and_keeps_words() -> None:
    assert fold("\x00Hi\x07 \u2018there\u2019\n") == "hi 'there'"


def test_fold_bounds_the_work_on_huge_messages() -> None:
    assert len(fold("a" * (MAX_CHARS * 3))) == MAX_CHARS


def test_squeeze_keeps_real_double_letters() -> None:
    assert [squeeze(w) for w in ("miss", "missss", "soooo", "good")] == ["miss", "miss", "soo", "good"]
