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
  grow with the whole catalogue.

An intent's keyword, found as whole words in the message, lifts that intent to a fixed score.
Below ``threshold``, or when the two best intents are within ``margin`` of each other, the
answer is no match.

How it stays fast on a large catalogue (the decision is the same as scoring every example;
``bench/RESULTS.md`` has the numbers, ``tests/test_matcher_speedup.py`` checks the sameness):

* **Length window.** ``fuzz.ratio`` is at most ``200 * min(a, b) / (a + b)``, so an example
  whose sorted text is much shorter or longer than the message's cannot reach the first-stage
  cut-off of ``MIN_SCORE``. Examples are kept sorted by length, and only the window that can
  reach it is scored (``bisect``): a long message is no longer scored against every short example.
* **Top few, in C.** Only the best three intents are ever reported, and no intent has more than
  ``E`` examples, so the best ``2E + 1`` examples always hold the best three intents. rapidfuzz
  picks them (``process.extract`` with ``limit``) instead of handing every example above the
  cut-off back to Python. Examples tied with the last one kept are dropped, so what is kept is
  exactly "every example scoring above s", whatever the order of ties; if that leaves fewer
  than three intents, the limit grows. An intent that only the containment or keyword stage
  brings up is then scored on its own examples, so its first-stage score and its place among
  equal scores are what a full scan would give.
* **Containment, best bound first.** A containment score is at most ``100 * coverage``.
  Candidates are scored in order of that bound, in growing batches (rapidfuzz prepares the
  message once per batch, not once per example), and scoring stops once three intents rank above
  anything the rest could reach. A long message that shares words with thousands of examples
  no longer scores them all.
* **Keywords by first word.** Keywords are indexed by their first word, so a message only
  checks the keywords that could start at one of its words.

Ranking: an intent's score is its best score rounded to 0.1, and its example is the first, in
the order scores are offered (first stage by score then file order, then containment, then
keywords), to reach that rounded score; equal scores keep the order in which intents were first
offered. (Before this optimisation a later example could replace an earlier one with the same
rounded score; only the example named in explanations could differ.)
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

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
MIN_CONTAIN_COVERAGE = 0.6
"""An example is a containment candidate when this share of its content words is present."""
MIN_SCORE = 30.0
"""First-stage scores below this are not considered at all."""
REPORTED = 3
"""How many intents a match reports (``Match.candidates``); the first stage keeps enough for them."""
UNSCORED = -1.0
"""The place-holding score of an intent whose containment candidates could not matter."""


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


def _length_window(length: int) -> tuple[int, int]:
    """The lengths of sorted examples that can reach ``MIN_SCORE`` against a message of ``length``, with slack."""
    low = int(length * MIN_SCORE / (200.0 - MIN_SCORE)) - 1
    high = int(length * (200.0 - MIN_SCORE) / MIN_SCORE) + 2
    return low, high


def _needed(size: int) -> int:
    """How many of an example's ``size`` content words make it a containment candidate (exactly as the ratio test)."""
    return next((count for count in range(size + 1) if size and count / size >= MIN_CONTAIN_COVERAGE), size + 1)


def _third_best(known: dict[str, float], order: dict[str, int]) -> tuple[float, int] | None:
    """The rank key ``(-score, first appearance)`` of the third best intent known so far, or ``None``."""
    if len(known) < REPORTED:
        return None
    return heapq.nsmallest(REPORTED, ((-score, order[intent]) for intent, score in known.items()))[-1]


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
        self._of_intent: dict[str, list[int]] = defaultdict(list)
        self._keywords: list[tuple[str, str]] = []
        """``(normalised keyword, intent)`` in catalogue order."""
        self._keyword_index: dict[str, list[int]] = defaultdict(list)
        for phrases in intents:
            for example in phrases.examples:
                self._add(phrases.intent, example)
            for keyword in phrases.keywords:
                tokens = for_matching(keyword).split()
                if tokens:
                    self._keyword_index[tokens[0]].append(len(self._keywords))
                    self._keywords.append((" ".join(tokens), phrases.intent))
        self._by_length = sorted(range(len(self._sorted)), key=lambda position: len(self._sorted[position]))
        self._lengths = [len(self._sorted[position]) for position in self._by_length]
        self._window = [self._sorted[position] for position in self._by_length]
        most = max((len(positions) for positions in self._of_intent.values()), default=0)
        self._keep = (REPORTED - 1) * most + 1
        self._sizes = [len(content) for content in self._content]
        self._needed = [_needed(size) for size in self._sizes]

    def _add(self, intent: str, example: str) -> None:
        normal = for_matching(example)
        if not normal:
            return
        position = len(self._owner)
        tokens = normal.split()
        content = _content(tokens)
        self._owner.append(intent)
        self._raw.append(example)
        self._normal.append(normal)
        self._sorted.append(" ".join(sorted(tokens)))
        self._content.append(content)
        self._of_intent[intent].append(position)
        for token in content:
            self._index[token].append(position)

    def match(self, text: str) -> Match:
        """Return the best intent for ``text``, or no intent with the reason."""
        normal = for_matching(text)
        if not normal:
            return Match(intent=None, score=0.0, reason="empty")
        best: dict[str, Candidate] = {}
        tokens = normal.split()

        def offer(intent: str, score: float, example: str) -> None:
            rounded = round(score, 1)
            current = best.get(intent)
            if current is None or rounded > current.score:
                best[intent] = Candidate(intent, rounded, example)

        query_sorted = " ".join(sorted(tokens))
        closest, complete = self._closest(query_sorted)
        for score, position in closest:
            offer(self._owner[position], score, self._raw[position])
        contained = self._containment_candidates(tokens) if len(tokens) >= MIN_CONTAIN_WORDS else []
        keywords = self._keyword_hits(normal)
        if not complete:
            late = {self._owner[position] for position, _ in contained}
            late.update(intent for _, intent in keywords)
            for score, position in self._rescore(query_sorted, late.difference(best)):
                offer(self._owner[position], score, self._raw[position])
        if contained:
            owners = [self._owner[position] for position, _ in contained]
            known = {intent: candidate.score for intent, candidate in best.items()}
            for _, intent in keywords:
                known[intent] = max(known.get(intent, self.settings.keyword_score), self.settings.keyword_score)
            order = {intent: rank for rank, intent in enumerate(dict.fromkeys([*best, *owners, *known]))}
            scores = self._contained_scores(normal, contained, owners, known, order)
            for intent in dict.fromkeys(owners):
                if intent not in best:
                    best[intent] = Candidate(intent, UNSCORED, "")
            for number in sorted(scores):
                position = contained[number][0]
                offer(owners[number], scores[number], self._raw[position])
        for keyword, intent in keywords:
            offer(intent, self.settings.keyword_score, f"keyword: {keyword}")
        return self._decide(sorted(best.values(), key=lambda c: c.score, reverse=True))

    def _closest(self, query: str) -> tuple[list[tuple[float, int]], bool]:
        """First-stage ``(score, position)`` pairs, best first, then in file order, and whether the list is complete.

        Complete means every example scoring at least ``MIN_SCORE`` is in it. Otherwise it holds
        exactly the examples that score above some s, and they span at least ``REPORTED`` intents.
        """
        low, high = _length_window(len(query))
        start, stop = bisect.bisect_left(self._lengths, low), bisect.bisect_right(self._lengths, high)
        window = self._window[start:stop]
        limit: int | None = self._keep
        while True:
            if limit is not None and limit >= len(window):
                limit = None
            found = process.extract(query, window, scorer=fuzz.ratio, limit=limit, score_cutoff=MIN_SCORE)
            scored = [(score, self._by_length[start + index]) for _, score, index in found]
            complete = limit is None or len(found) < limit
            if not complete:
                last = scored[-1][0]
                scored = [(score, position) for score, position in scored if score > last]
                if len({self._owner[position] for _, position in scored}) < REPORTED:
                    limit = 4 * (limit or 1)
                    continue
            scored.sort(key=lambda item: (-item[0], item[1]))
            return scored, complete

    def _rescore(self, query: str, intents: Iterable[str]) -> list[tuple[float, int]]:
        """Each intent's best first-stage example (first in file order among equals), best first."""
        found = []
        for intent in intents:
            positions = self._of_intent.get(intent, ())
            hit = process.extractOne(
                query, [self._sorted[p] for p in positions], scorer=fuzz.ratio, score_cutoff=MIN_SCORE
            )
            if hit is not None:
                found.append((hit[1], positions[hit[2]]))
        found.sort(key=lambda item: (-item[0], item[1]))
        return found

    def _containment_candidates(self, tokens: list[str]) -> list[tuple[int, float]]:
        hits = Counter(chain.from_iterable(self._index.get(token, ()) for token in _content(tokens)))
        needed, sizes = self._needed, self._sizes
        return [(position, count / sizes[position]) for position, count in hits.items() if count >= needed[position]]

    def _contained_scores(
        self,
        normal: str,
        contained: list[tuple[int, float]],
        owners: list[str],
        known: dict[str, float],
        order: dict[str, int],
    ) -> dict[int, float]:
        """Containment scores of the candidates that can still change the reported intents, by candidate number.

        A candidate scores at most ``100 * coverage``. Candidates are scored best bound first, in
        growing batches (rapidfuzz prepares the message once per batch); once three intents are
        known to rank above what a candidate could reach (score, then first appearance), it is
        skipped: it cannot enter the top three, nor be the example of an intent that does.
        """
        bounds = [round(100.0 * coverage, 1) for _, coverage in contained]
        pending = sorted(range(len(contained)), key=bounds.__getitem__, reverse=True)
        scores: dict[int, float] = {}
        batch, done = 16, 0
        while done < len(pending):
            cut = _third_best(known, order)
            if cut is not None and bounds[pending[done]] < -cut[0]:
                break
            chunk = [
                number
                for number in pending[done : done + batch]
                if cut is None or (-bounds[number], order[owners[number]]) <= cut
            ]
            choices = [self._normal[contained[number][0]] for number in chunk]
            for number, (_, similarity, _) in zip(
                chunk, process.extract_iter(normal, choices, scorer=fuzz.token_set_ratio), strict=True
            ):
                scores[number] = score = similarity * contained[number][1]
                intent = owners[number]
                known[intent] = max(known.get(intent, UNSCORED), round(score, 1))
            done += batch
            batch *= 2
        return scores

    def _keyword_hits(self, normal: str) -> list[tuple[str, str]]:
        """``(keyword, intent)`` for every keyword found as whole words in ``normal``, in catalogue order."""
        padded = f" {normal} "
        numbers = {number for token in set(normal.split()) for number in self._keyword_index.get(token, ())}
        return [self._keywords[n] for n in sorted(numbers) if f" {self._keywords[n][0]} " in padded]

    def _decide(self, ranked: list[Candidate]) -> Match:
        top = tuple(ranked[:REPORTED])
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
