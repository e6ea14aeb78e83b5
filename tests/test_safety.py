"""The crisis screen's decisions and replies: levels, tracks, resources, and the words it uses."""

from __future__ import annotations

import random
import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bench.synthetic import message_mix
from bot import lexicon, prefilter, resources, rules, safety
from bot.content import Catalog
from bot.models import Detection, Level, ReplyKind, Track
from bot.rules import floor
from tests.conftest import REPO
from tests.test_safety_corpus import AMBIGUOUS, MUST_CATCH, MUST_NOT
from tests.test_screen import LOOK_ALIKES

FLOOR = floor()

NUMBERS = {
    "emergency": "911",
    "dv_hotline": "1-800-799-7233",
    "lifeline": "988lifeline.org",
    "lifeline_es": "988lifeline.org/es/chat",
    "outside_us": "116 123",
}


def test_negation_never_suppresses_a_crisis() -> None:
    for text in ("I'm not going to lie, I want to die", "I don't want to kill myself but I keep planning it"):
        assert safety.detect(text).level is Level.CRISIS


def test_the_highest_level_wins() -> None:
    found = safety.detect("I hate myself and I took the whole bottle")
    assert (found.level, found.category, found.rule) == (Level.IMMINENT, "attempt", "attempt.took_quantity")


def test_danger_from_others_adds_its_track_when_both_appear() -> None:
    found = safety.detect("he hit me again and honestly I want to die")
    assert found.level is Level.CRISIS and found.track is Track.OTHERS
    assert safety.resources_for(found) == ("emergency", "dv_hotline", "lifeline", "outside_us")


def test_a_concern_about_others_does_not_change_a_self_crisis_track() -> None:
    found = safety.detect("I'm scared of him and I want to die")
    assert found.category == "suicidal" and found.track is Track.SELF


def test_a_crisis_window_lifts_concerns_to_at_least_crisis() -> None:
    plain = safety.detect("I can't do this anymore")
    timed = safety.detect("I'm going to do it tonight")
    assert plain.level is Level.CONCERN and timed.level is Level.CONCERN
    assert safety.in_crisis_window(plain).level is Level.CRISIS
    assert safety.in_crisis_window(timed).level is Level.IMMINENT
    imminent = safety.detect("he choked me")
    assert safety.in_crisis_window(imminent) is imminent


@pytest.mark.parametrize(
    ("detection", "expected"),
    [
        (Detection(Level.CRISIS, "suicidal", "r"), ("lifeline", "outside_us")),
        (Detection(Level.IMMINENT, "attempt", "r"), ("emergency", "lifeline", "outside_us")),
        (
            Detection(Level.CRISIS, "partner_danger", "r", Track.OTHERS),
            ("emergency", "dv_hotline", "lifeline", "outside_us"),
        ),
        (
            Detection(Level.IMMINENT, "partner_danger", "r", Track.OTHERS),
            ("emergency", "dv_hotline", "lifeline", "outside_us"),
        ),
        (Detection(Level.CRISIS, "suicidal", "r", language="es"), ("lifeline", "lifeline_es", "outside_us")),
        (
            Detection(Level.IMMINENT, "partner_danger", "r", Track.OTHERS, language="es"),
            ("emergency", "dv_hotline", "lifeline", "lifeline_es", "outside_us"),
        ),
    ],
    ids=["self-crisis", "self-imminent", "others-crisis", "others-imminent", "spanish-self", "spanish-others"],
)
def test_the_reply_shows_exactly_the_recorded_resources_in_order(detection: Detection, expected: tuple) -> None:
    assert safety.resources_for(detection) == expected
    reply = safety.crisis_reply(detection)
    assert reply.kind is ReplyKind.CRISIS
    positions = [reply.text.index(NUMBERS[resource]) for resource in expected]
    assert positions == sorted(positions)
    for resource, number in NUMBERS.items():
        assert (number in reply.text) == (resource in expected), resource
    assert resources.AUTOMATED in reply.text
    assert reply.text.endswith(resources.OUTSIDE_US)


def test_the_self_harm_track_leads_with_988_then_one_validation_and_a_direct_question() -> None:
    text = safety.crisis_reply(safety.detect("i want to kill myself")).text
    assert text.startswith("Please call or text 988, or chat at 988lifeline.org")
    first_paragraph = text.split("\n\n")[0]
    assert first_paragraph.endswith("Are you thinking about suicide right now?")
    assert first_paragraph.count("?") == 1


@pytest.mark.parametrize(
    "text",
    [
        "quiero morir",
        "ya no aguanto, me quiero matar",
        "me corto otra vez",
        "he hit me and i want to die. no quiero vivir",
    ],
)
def test_a_message_in_spanish_also_gets_988_in_spanish(text: str) -> None:
    found = safety.detect(text)
    assert found is not None and found.language == "es"
    reply = safety.crisis_reply(found).text
    assert "marca 2" in reply and "AYUDA" in reply and "988lifeline.org/es/chat" in reply
    assert reply.index("988lifeline.org") < reply.index("988lifeline.org/es/chat")  # 988 itself still comes first
    assert reply.count("?") == 1 and len(reply) < 800


def test_a_message_in_english_gets_no_spanish_line() -> None:
    found = safety.detect("i want to kill myself")
    assert found is not None and found.language is None
    assert "lifeline_es" not in safety.resources_for(found)
    assert "español" not in safety.crisis_reply(found).text


def test_imminent_leads_with_911() -> None:
    text = safety.crisis_reply(safety.detect("i just took 40 tylenol")).text
    assert text.startswith(f"{safety.PREVIEW_LINE}\nIf you are in immediate danger, call 911.")
    assert text.index("911") < text.index("988")


def test_the_danger_track_gives_911_then_the_hotline_then_988() -> None:
    text = safety.crisis_reply(safety.detect("he said he'll kill me if i leave")).text
    assert text.index("911") < text.index("1-800-799-7233") < text.index("text START to 88788") < text.index("988")
    assert "thehotline.org" in text and text.count("?") == 1


@pytest.mark.parametrize("category", lexicon.CATEGORIES)
def test_every_category_has_safe_words(category: str) -> None:
    for level in (Level.CRISIS, Level.IMMINENT):
        text = safety.crisis_reply(Detection(level, category, "r", lexicon.TRACKS[category])).text
        assert text.count("?") == 1
        lowered = text.lower()
        for unsafe in ("committed suicide", "confront", "work on the relationship", "so much to live for", "calm down"):
            assert unsafe not in lowered
        assert len(text) < 700


def test_a_concern_gets_a_gentle_check_in_with_988_offered() -> None:
    reply = safety.concern_reply(safety.detect("I'm a burden to everyone"))
    assert reply.kind is ReplyKind.CHECK_IN
    assert "988" in reply.text and "911" not in reply.text and "Is that happening for you?" in reply.text


def test_a_concern_about_a_partner_offers_the_hotline() -> None:
    reply = safety.concern_reply(safety.detect("he'd kill me if he knew i'm talking to you"))
    assert "1-800-799-7233" in reply.text and "Are you safe right now?" in reply.text


@pytest.mark.parametrize("track", list(Track))
def test_the_reminder_keeps_help_in_view_and_asks_about_safety(track: Track) -> None:
    reply = safety.reminder(track)
    assert "988" in reply.text and "Are you safe right now?" in reply.text
    assert ("1-800-799-7233" in reply.text) == (track is Track.OTHERS)


@pytest.mark.parametrize(
    "text",
    [
        "I'm safe",
        "safe",
        "im safe now",
        "I’m safe now, thanks",
        "yes I'm safe",
        "no, I'm safe",
        "I am in a safe place",
        "ok i'm safe. thank you",
        "we are safe now",
        "I'm okay now",
    ],
)
def test_these_say_safe(text: str) -> None:
    assert safety.says_safe(text)
    assert safety.only_says_safe(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm not safe",
        "I'm not safe at home",
        "I don't feel safe",
        "am I safe?",
        "I'm safe?",
        "I'm never safe",
        "yes",
        "ok",
        "I'm okay",
        "he is safe",
        "I'm not sure I'm safe",
        "i'm safe but not okay",
        "",
    ],
)
def test_these_do_not_say_safe(text: str) -> None:
    assert not safety.says_safe(text)


def test_saying_safe_and_asking_something_still_gets_an_answer() -> None:
    assert safety.says_safe("I'm safe now. Why do I miss him?")
    assert not safety.only_says_safe("I'm safe now. Why do I miss him")


def test_passages_that_describe_violence_are_recognised() -> None:
    assert safety.describes_violence("He hit me for the first time that winter.")
    assert not safety.describes_violence("Missing her is not proof you should go back.")


class TestFloor:
    def test_rule_ids_are_unique_and_categories_known(self) -> None:
        ids = [rule.id for rule in FLOOR]
        assert len(ids) == len(set(ids))
        assert all(rule.category in lexicon.CATEGORIES for rule in FLOOR)

    def test_no_pattern_can_miss_for_an_apostrophe_or_a_capital(self) -> None:
        # The screen removes apostrophes (after expanding contractions) and lowercases, so a pattern
        # with either could never match; phones' U+2019 apostrophes are covered by the same fold.
        for rule in FLOOR:
            assert "'" not in rule.pattern.pattern and "\u2019" not in rule.pattern.pattern, rule.id
            assert not re.search(r"[A-Z]", re.sub(r"\\.", "", rule.pattern.pattern)), rule.id

    def test_a_window_level_only_ever_raises(self) -> None:
        for rule in FLOOR:
            assert rule.window_level is None or rule.window_level.rank > rule.level.rank, rule.id

    def test_no_rule_fires_on_an_empty_message(self) -> None:
        assert safety.fired("") == [] and safety.detect("   ") is None


class TestModeratorRules:
    def test_a_phrase_is_matched_as_whole_words_after_normalisation(self) -> None:
        rule = rules.compile_rule("local.keys", "partner_danger", "concern", phrase="He’s still got my KEYS")
        assert rule.track is Track.OTHERS
        assert safety.fired("omg he's still got my keys", (rule,)) == [rule]
        assert safety.fired("he's still got my keyster", (rule,)) == []

    def test_a_rule_can_only_add(self) -> None:
        low = rules.compile_rule("local.die", "suicidal", "concern", phrase="i want to die")
        assert safety.detect("I want to die", (*FLOOR, low)).level is Level.CRISIS

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"category": "sadness", "level": "crisis", "phrase": "x"}, "unknown category 'sadness'"),
            ({"category": "suicidal", "level": "high", "phrase": "x"}, "unknown level 'high'"),
            ({"category": "suicidal", "level": "crisis"}, "give exactly one of"),
            ({"category": "suicidal", "level": "crisis", "phrase": "x", "pattern": "x"}, "give exactly one of"),
            ({"category": "suicidal", "level": "crisis", "pattern": "(unclosed"}, "not a valid regular expression"),
            ({"category": "suicidal", "level": "crisis", "pattern": "x*"}, "fire on every message"),
            ({"category": "suicidal", "level": "crisis", "phrase": "!!!"}, "no words left"),
        ],
    )
    def test_mistakes_are_refused_with_a_sentence(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ValueError, match=re.escape(message)):
            rules.compile_rule("local.x", **kwargs)

    def test_patterns_that_could_never_match_are_warned_about(self) -> None:
        assert len(rules.pattern_warnings(r"\bI don't\b")) == 2
        assert rules.pattern_warnings(r"\bi do not\S*\b") == []


PIECES = (
    lexicon.vocabulary()
    | {piece for rule in FLOOR for piece in re.findall(r"[a-z ]{2,}|[a-z]+", rule.pattern.pattern.replace("|", " | "))}
    | {"|", "he", "me", "i", "my", "ex"}
)
"""Words, word runs and clause marks of the floor patterns: what generated texts for the prefilter are made of."""


class TestPrefilter:
    """The prefilter skips a pattern only when the text lacks what every match of it needs."""

    @pytest.mark.parametrize(
        ("strings", "text", "expected"),
        [
            ({"kill", "kill myself", "myself"}, "i will kill myself", {"kill", "kill myself", "myself"}),
            ({"kill", "kill myself"}, "kill my self", {"kill"}),
            ({"abc", "bcd", "cde"}, "abcde", {"abc", "bcd", "cde"}),
            ({"a.b", "(x)", "a|b"}, "axb (x) a|b", {"(x)", "a|b"}),
            ({"aaa"}, "aaaa", {"aaa"}),
            ({"he ", "she "}, "she said", {"he ", "she "}),
            (set(), "anything", set()),
        ],
    )
    def test_the_finder_finds_every_string_present(self, strings: set[str], text: str, expected: set[str]) -> None:
        assert prefilter.Finder.of(strings).present(text) == expected

    def test_a_pattern_needing_a_very_long_phrase_still_works(self, caplog) -> None:
        phrase = "i cannot go on like this " * 39  # longer than a moderator's longest pattern
        rule = rules.compile_rule("local.long", "suicidal", "crisis", phrase=phrase.strip())
        assert safety.fired(phrase, (rule,)) == [rule]
        assert safety.fired(phrase[:500], (rule,)) == []
        assert "prefilter" not in caplog.text  # built, not given up on

    def test_if_the_prefilter_cannot_be_built_every_rule_is_tried(self, monkeypatch, caplog) -> None:
        def broken(rules: tuple) -> prefilter.Prefilter:
            raise RecursionError("as a pathological pattern might")

        monkeypatch.setattr(prefilter, "_built", broken)
        rules = FLOOR[:-1]  # a tuple the prefilter has not seen
        for text in ("i want to kill myself", "he choked me last night", "what is a trauma bond"):
            assert safety.fired(text, rules) == safety.fired(text, rules, prefilter=False)
        assert safety.detect("i want to kill myself", rules).level is Level.CRISIS
        assert "every pattern runs on every message" in caplog.text

    @given(
        st.sets(st.text(alphabet="ab |.", min_size=1, max_size=5), max_size=12),
        st.text(alphabet="ab |.", max_size=40),
    )
    def test_the_finder_agrees_with_searching_for_each_string(self, strings: set[str], text: str) -> None:
        assert prefilter.Finder.of(strings).present(text) == {string for string in strings if string in text}

    @pytest.mark.parametrize(
        ("pattern", "expected"),
        [
            (r"\bkill myself\b", "kill myself"),
            (r"\b(?:hit|punched) me\b", ("any", ("hit me", "punched me"))),
            (r"\bsuicid(?:e|al)\b", ("any", ("suicide", "suicidal"))),
            (r"(?:ex )?husband", "husband"),
            (r"wants? to die", ("any", ("want to die", "wants to die"))),
            (r"(?:he|she) (?:[^ |]+ )?hit", ("all", ("he ", "hit"))),
            (r"[a-z]+ed (?:bad|worse)", ("any", ("ed bad", "ed worse"))),
            (r"(?:ab)+ cde", " cde"),
            (r"(?:abcd|x)+ cde", " cde"),
            (r"kill(?: me|er)?", "kill"),
            (r"(?i)kill me", None),
            (r"(?i:kill) me", " me"),
            (
                r"(?:abc|abd|abe|abf|abg) (?:xyz|xyw|xyv|xyu)",  # the parser makes "xy" then one of four letters
                ("any", ("abc xy", "abd xy", "abe xy", "abf xy", "abg xy")),
            ),
        ],
    )
    def test_requirement(self, pattern: str, expected: prefilter.Requirement) -> None:
        def unordered(needs: prefilter.Requirement) -> object:
            return needs if not isinstance(needs, tuple) else (needs[0], frozenset(map(unordered, needs[1])))

        assert unordered(prefilter.requirement(pattern)) == unordered(expected)

    def test_it_never_changes_what_fires(self) -> None:
        texts = [item["text"] for items in MUST_CATCH.values() for item in items]
        texts += [text for items in MUST_NOT.values() for text in items]
        chooser = random.Random(20261129)  # noqa: S311 - a fixed seed, so failures reproduce
        for _ in range(1500):
            text = " ".join(chooser.sample(texts, chooser.randint(1, 5)))
            if chooser.random() < 0.3:
                text = text.upper().replace("I", "1")
            assert safety.fired(text) == safety.fired(text, prefilter=False), text

    def test_it_never_changes_what_fires_with_the_moderators_patterns_too(self, catalog: Catalog) -> None:
        rules = FLOOR + catalog.safety_rules
        assert catalog.safety_rules, "the shipped content has no patterns of its own, so this would prove nothing"
        patterns = yaml.safe_load((REPO / "safety" / "patterns.yml").read_text(encoding="utf-8"))
        texts = [item["text"] for items in MUST_CATCH.values() for item in items]
        texts += [example for entry in patterns["patterns"] for example in entry.get("examples", [])]
        chooser = random.Random(20261130)  # noqa: S311 - a fixed seed, so failures reproduce
        for _ in range(500):
            text = " ".join(chooser.sample(texts, chooser.randint(1, 4)))
            assert safety.fired(text, rules) == safety.fired(text, rules, prefilter=False), text
        assert safety.fired("i want to die", list(rules)) == safety.fired("i want to die", rules)

    def test_it_never_changes_what_fires_on_the_corpus_or_the_benchmark_messages(self, catalog: Catalog) -> None:
        rules = FLOOR + catalog.safety_rules
        texts = [item["text"] for items in MUST_CATCH.values() for item in items]
        texts += [text for items in MUST_NOT.values() for text in items] + AMBIGUOUS
        mix = message_mix(catalog, 5000, 1000)
        assert {message.kind for message in mix} >= {"question", "button", "fallback", "crisis", "long"}
        for text in texts + [message.text for message in mix]:
            assert safety.fired(text, rules) == safety.fired(text, rules, prefilter=False), text

    @given(st.lists(st.sampled_from(sorted(PIECES)), min_size=1, max_size=60))
    def test_it_never_changes_what_fires_on_texts_made_of_the_patterns_words(self, pieces: list[str]) -> None:
        text = " ".join(pieces)
        for joined in (text, text.replace(" ", ""), text.replace(" | ", " ")):
            assert safety.fired(joined) == safety.fired(joined, prefilter=False), joined


@pytest.mark.parametrize(
    "text", ["he said he'll kill me if i leave", "i just took 40 tylenol", "he's outside banging on the door right now"]
)
def test_a_reply_that_leads_with_911_shows_nothing_telling_on_a_lock_screen_preview(text: str) -> None:
    found = safety.detect(text)
    leading_with_911 = [safety.crisis_reply(found), safety.reminder(Track.OTHERS)]
    for reply in leading_with_911:
        first, rest = reply.text.split("\n", 1)
        assert first == safety.PREVIEW_LINE
        assert not any(number in first for number in resources.HOTLINE_NUMBERS)
        assert not re.search(r"danger|suicid|violen|abuse|hotline|crisis|911|988", first, re.IGNORECASE)
        assert "911" in rest  # the help is still in the same message, right after the neutral line


@pytest.mark.parametrize(("text", "plain"), LOOK_ALIKES)
def test_look_alike_letters_are_detected_as_the_plain_words(text: str, plain: str) -> None:
    found = safety.detect(text)
    assert found is not None and found.level.rank >= Level.CRISIS.rank
    assert found == safety.detect(plain)
