"""Fuzzy intent matching with rapidfuzz: best intent, runner-up, and an honest no-match.

Two scores are computed for every example and the higher one counts:

* **order-free similarity**: ``fuzz.ratio`` of the token-sorted message and example (what
  ``token_sort_ratio`` does, with the example side sorted once at load time). It tolerates
  typos and word order, and it penalises a length difference, so a one-word message cannot
  reach the threshold against a whole sentence.
* **containment**: ``fuzz.token_set_ratio`` scaled by the share of the example's content words
  that appear in the message. ``token_set_ratio`` alone gives 100 whenever one side's words
  are a subset of the other's; the scaling keeps that for a long message that contains a whole
  example ("... why do I miss him if it was so bad") and takes it away from a short message
  that is a subset of an example ("miss"). It is only tried for messages of three words or
  more, and only on examples found through an index of content words, so its cost does not
  grow with the whole catalogue. An example needs two content words for this ("hey" inside
  "hey, why do I miss him" must not win).

Content words are lightly stemmed on both sides, so "attached" meets "attachment".

An intent's keyword, found as whole words in the message, lifts that intent to a fixed score.
Below ``threshold``, or when the two best intents are within ``margin`` of each other, the
answer is no match.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from bot.models import Candidate, Match
from bot.normalize import for_matching

STOPWORDS = frozenset(
    "a an and are am as at be been being but by can could did do does for from had has have how i if in"
    " is it just me my of on or so than that the them then there this to too was we were what when"
    " where which who why will with would you your not no still really very about".split()
)
"""Words too common to tell intents apart; they never count as shared content."""

MIN_CONTAIN_WORDS = 3
"""A message needs this many words before containment scoring is tried."""
MIN_CONTAIN_CONTENT = 2
"""An example needs this many content words to be found inside a longer message ("hey" never is)."""
MIN_CONTAIN_COVERAGE = 0.6
"""An example is a containment candidate when this share of its content words is present."""

_SUFFIXES = ("ingly", "edly", "ness", "ment", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light suffix stripper, so that "attached", "attachment" and "attaching" compare equal."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls":
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def tokens_of(text: str) -> list[str]:
    """The words the matcher compares: normalised, with content words stemmed."""
    return [word if word in STOPWORDS else stem(word) for word in for_matching(text).split()]


@dataclass(frozen=True)
class MatcherSettings:
    """Thresholds that decide between an answer and an honest fallback."""

    threshold: float = 72.0
    """The best intent must score at least this (0-100)."""
    margin: float = 4.0
    """The best intent must beat a different runner-up by more than this."""
    keyword_score: float = 88.0
    """The score an intent gets when one of its keywords is in the message."""


@dataclass(frozen=True)
class IntentPhrases:
    """What the matcher needs of one intent: its id, example sentences and keywords."""

    intent: str
    examples: tuple[str, ...]
    keywords: tuple[str, ...] = ()


def _content(tokens: Iterable[str]) -> frozenset[str]:
    return frozenset(token for token in tokens if token not in STOPWORDS)


class Matcher:
    """Scores a message against every intent's examples; build once per catalogue."""

    def __init__(self, intents: Iterable[IntentPhrases], settings: MatcherSettings | None = None) -> None:
        self.settings = settings or MatcherSettings()
        self._owner: list[str] = []
        self._raw: list[str] = []
        self._normal: list[str] = []
        self._sorted: list[str] = []
        self._content: list[frozenset[str]] = []
        self._index: dict[str, list[int]] = defaultdict(list)
        self._keywords: list[tuple[tuple[str, ...], str]] = []
        for phrases in intents:
            for example in phrases.examples:
                self._add(phrases.intent, example)
            for keyword in phrases.keywords:
                tokens = tuple(tokens_of(keyword))
                if tokens:
                    self._keywords.append((tokens, phrases.intent))

    def _add(self, intent: str, example: str) -> None:
        tokens = tokens_of(example)
        if not tokens:
            return
        normal = " ".join(tokens)
        position = len(self._owner)
        content = _content(tokens)
        self._owner.append(intent)
        self._raw.append(example)
        self._normal.append(normal)
        self._sorted.append(" ".join(sorted(tokens)))
        self._content.append(content)
        for token in content:
            self._index[token].append(position)

    def match(self, text: str) -> Match:
        """Return the best intent for ``text``, or no intent with the reason."""
        tokens = tokens_of(text)
        if not tokens:
            return Match(intent=None, score=0.0, reason="empty")
        normal = " ".join(tokens)
        best: dict[str, Candidate] = {}

        def offer(intent: str, score: float, example: str) -> None:
            current = best.get(intent)
            if current is None or score > current.score:
                best[intent] = Candidate(intent, round(score, 1), example)

        query_sorted = " ".join(sorted(tokens))
        for _, score, position in process.extract(
            query_sorted, self._sorted, scorer=fuzz.ratio, limit=None, score_cutoff=30
        ):
            offer(self._owner[position], score, self._raw[position])
        if len(tokens) >= MIN_CONTAIN_WORDS:
            for position, coverage in self._containment_candidates(tokens):
                score = fuzz.token_set_ratio(normal, self._normal[position]) * coverage
                offer(self._owner[position], score, self._raw[position])
        padded = f" {normal} "
        for keyword, intent in self._keywords:
            if f" {' '.join(keyword)} " in padded:
                offer(intent, self.settings.keyword_score, f"keyword: {' '.join(keyword)}")
        return self._decide(sorted(best.values(), key=lambda c: c.score, reverse=True))

    def _containment_candidates(self, tokens: list[str]) -> list[tuple[int, float]]:
        content = _content(tokens)
        hits: dict[int, int] = defaultdict(int)
        for token in content:
            for position in self._index.get(token, ()):
                hits[position] += 1
        candidates = []
        for position, count in hits.items():
            size = len(self._content[position])
            coverage = count / size
            if size >= MIN_CONTAIN_CONTENT and coverage >= MIN_CONTAIN_COVERAGE:
                candidates.append((position, coverage))
        return candidates

    def _decide(self, ranked: list[Candidate]) -> Match:
        top = tuple(ranked[:3])
        if not ranked:
            return Match(intent=None, score=0.0, reason="low_confidence")
        first = ranked[0]
        second = ranked[1] if len(ranked) > 1 else None
        runner_up = second.intent if second else None
        runner_up_score = second.score if second else 0.0
        if first.score < self.settings.threshold:
            reason = "low_confidence"
        elif second is not None and first.score - second.score <= self.settings.margin:
            reason = "ambiguous"
        else:
            return Match(first.intent, first.score, runner_up, runner_up_score, "matched", top)
        return Match(None, first.score, runner_up, runner_up_score, reason, top)
