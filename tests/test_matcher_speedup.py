"""The fast matcher decides exactly as a full scan of every example would, on real and synthetic catalogues."""

from __future__ import annotations

from pathlib import Path

import pytest
from rapidfuzz import fuzz, process

from bench.synthetic import message_mix, scaled_content
from bot.content import Catalog, load_catalog
from bot.matcher import MIN_CONTAIN_WORDS, MIN_SCORE, IntentPhrases, Matcher
from bot.models import Candidate, Match
from bot.normalize import for_matching
from tests.conftest import REPO


def full_scan(matcher: Matcher, text: str) -> Match:
    """The matcher's rules applied the slow, obvious way: every example scored, every keyword tried."""
    normal = for_matching(text)
    if not normal:
        return Match(intent=None, score=0.0, reason="empty")
    best: dict[str, Candidate] = {}

    def offer(intent: str, score: float, example: str) -> None:
        rounded = round(score, 1)
        if intent not in best or rounded > best[intent].score:
            best[intent] = Candidate(intent, rounded, example)

    tokens = normal.split()
    query = " ".join(sorted(tokens))
    for _, score, position in process.extract(
        query, matcher._sorted, scorer=fuzz.ratio, limit=None, score_cutoff=MIN_SCORE
    ):
        offer(matcher._owner[position], score, matcher._raw[position])
    if len(tokens) >= MIN_CONTAIN_WORDS:
        for position, coverage in matcher._containment_candidates(tokens):
            score = fuzz.token_set_ratio(normal, matcher._normal[position]) * coverage
            offer(matcher._owner[position], score, matcher._raw[position])
    for keyword, intent in matcher._keywords:
        if f" {keyword} " in f" {normal} ":
            offer(intent, matcher.settings.keyword_score, f"keyword: {keyword}")
    return matcher._decide(sorted(best.values(), key=lambda c: c.score, reverse=True))


def differences(matcher: Matcher, texts: list[str]) -> list[tuple[str, Match, Match]]:
    return [(text, fast, slow) for text in texts if (fast := matcher.match(text)) != (slow := full_scan(matcher, text))]


def texts_for(catalog: Catalog, count: int) -> list[str]:
    return [message.text for message in message_mix(catalog, count, users=50)]


def test_same_decisions_on_the_shipped_content(catalog: Catalog) -> None:
    matcher = Matcher(catalog.phrases())
    texts = texts_for(catalog, 1500)
    assert len({matcher.match(text).reason for text in texts}) >= 3
    assert differences(matcher, texts) == []


def test_same_decisions_on_a_catalogue_ten_times_larger(tmp_path: Path) -> None:
    catalog = load_catalog(scaled_content(REPO, 10, tmp_path))
    matcher = Matcher(catalog.phrases())
    assert differences(matcher, texts_for(catalog, 800)) == []


@pytest.mark.parametrize(
    "text",
    [
        "tell me about grief",
        "tell me about grief and loss and grieving",
        "grief loss no contact",
        "no contact and blocking grief",
        "x " * 3000,
        "grief " * 700,
    ],
)
def test_same_decisions_where_scores_tie(text: str) -> None:
    intents = [
        IntentPhrases("a", ("tell me about grief", "grief and loss"), ("no contact",)),
        IntentPhrases("b", ("tell me about grief", "grief and loss"), ("grief",)),
        IntentPhrases("c", ("tell me about griefs", "loss and grief"), ("blocking",)),
        *(IntentPhrases(f"filler{n}", (f"something else {n}", f"another thing {n}")) for n in range(8)),
    ]
    matcher = Matcher(intents)
    assert matcher._keep < len(matcher._sorted)
    assert differences(matcher, [text]) == []


def test_a_tie_at_the_cut_is_broken_by_file_order_as_a_full_scan_does() -> None:
    # "abcdwxyz" and "ab" both score 66.7 against "abcd"; the first is earlier in the file but longer.
    intents = [
        IntentPhrases("exact", ("abcd",)),
        IntentPhrases("close", ("abcde",)),
        IntentPhrases("longer", ("abcdwxyz",)),
        IntentPhrases("shorter", ("ab",)),
    ]
    match = Matcher(intents).match("abcd")
    assert [c.intent for c in match.candidates] == ["exact", "close", "longer"]
    assert match == full_scan(Matcher(intents), "abcd")


def test_a_long_message_still_reports_a_third_intent_that_only_containment_finds() -> None:
    intents = [
        IntentPhrases("a", ("zzz yyy",), ("alpha",)),
        IntentPhrases("b", ("qqq ppp",), ("beta",)),
        IntentPhrases("c", ("gamma delta epsilon zeta",)),
    ]
    text = "alpha beta gamma delta epsilon " + " ".join(f"filler{n}" for n in range(60))
    match = Matcher(intents).match(text)
    assert [c.intent for c in match.candidates] == ["a", "b", "c"]
    assert 50 < match.candidates[2].score < 75
    assert match == full_scan(Matcher(intents), text)
