"""Fuzzy intent matching with rapidfuzz: best intent, runner-up, and an honest no-match.

A message is compared whole and sentence by sentence (``bot.sentences``): a clear question counts
more than the background, and a second one is offered. Each piece gets four scores against the
examples (and, with a ``MeaningIndex``, ``bot.meaning`` adds the nearest example's), and an intent
keeps its best:

* **similarity**: ``fuzz.ratio`` of the token-sorted piece and example (``token_sort_ratio``
  with the example side sorted once). It tolerates typos and word order and penalises a length
  difference, so one word cannot reach the threshold against a whole sentence.
* **containment**: ``fuzz.token_set_ratio`` scaled by the share of the example's content words
  found in the piece. ``token_set_ratio`` alone gives 100 whenever one side's words are a subset
  of the other's; the scaling keeps that for a message that contains a whole example and takes
  it away from a short message that is a subset of one ("miss"). Only for pieces of three words
  or more, and examples of two content words or more ("hey" inside "hey, why do I miss him"
  must not win).
* **overlap**: how much of the piece and of the example the shared content words explain,
  weighted by how rare each word is across intents (an F1 of inverse-intent-frequency weights),
  scaled below a full match. It finds paraphrases that share the telling words ("relieved",
  "crying") in another order and among other words. Only for pieces of three words or more,
  and when both sides have two content words.
* **keywords**: a moderator's keyword found as whole words lifts its intent to a fixed score,
  a little lower for a single word than for a phrase.

Conversational intents (small talk and "tell me more": no quoted passage) are only compared
with the whole message by similarity, so "say more" is never found inside "he says something
nasty and I want him more".

Words are folded before any of this: ``bot.normalize`` folds case, quotes, contractions,
shorthand, misspellings and every partner word; here irregular verbs, a few groups of synonyms
and British spellings are folded, content words are lightly stemmed, and a word the content has
never used is replaced by the closest content word when rapidfuzz finds one close enough.

Below ``threshold``, or when the two best intents are within ``margin`` of each other, the
answer is no match. Costs stay bounded: messages are cut at ``normalize.MAX_CHARS``, at most
``sentences.MAX_PIECES`` sentences are compared, and candidate examples for containment and overlap
come from an index of content words that skips words too common to tell intents apart.
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
import operator
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from rapidfuzz import fuzz, process

from bot.meaning import MeaningIndex, MeaningSettings, fuse
from bot.models import Candidate, Match
from bot.normalize import for_matching
from bot.sentences import BACKGROUND, CLEAR_QUESTION, WHOLE_LESS, WINDOW_LESS, Piece, pieces_of

log = logging.getLogger("unhooked.matcher")

STOPWORDS = frozenset(
    "a an and are am as at be been being but by can could did do does for from had has have how i if in"
    " is it just me my of on or so than that the them then there this to too was we were what when"
    " where which who why will with would you your not no still really very about".split()
)
"""Words too common to tell intents apart; they never count as shared content."""

SYNONYM_GROUPS = (
    "kind sweet nice loving lovely caring gentle affectionate warm tender",
    "cruel nasty horrible awful terrible vicious harsh",
    "sad gutted heartbroken devastated crushed miserable",
    "relieved relief lighter peaceful",
    "ashamed embarrassed humiliated mortified shame",
    "stupid idiot naive dumb foolish gullible",
    "intense electric passionate euphoric",
    "boring dull flat bland",
    "amazing incredible wonderful fantastic unbelievable magical",
    "cry crying cried sobbing sob tears",
)
"""Words people use for the same idea; each group folds to its first word."""
IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "going": "go", "left": "leave", "leaving": "leave",
    "felt": "feel", "feeling": "feel", "feelings": "feel", "got": "get", "gotten": "get", "saw": "see",
    "seen": "see", "thought": "think", "told": "tell", "said": "say", "kept": "keep", "broke": "break",
    "broken": "break", "made": "make", "knew": "know", "known": "know", "came": "come", "gave": "give",
    "took": "take", "taken": "take", "fell": "fall", "fallen": "fall", "lost": "lose", "fought": "fight",
    "slept": "sleep", "sent": "send", "spent": "spend", "met": "meet", "spoke": "speak", "spoken": "speak",
    "meant": "mean", "held": "hold", "swore": "swear", "sworn": "swear", "wrote": "write", "written": "write",
    "understood": "understand", "chose": "choose", "chosen": "choose", "forgave": "forgive", "forgiven": "forgive",
    "lied": "lie", "lying": "lie", "lies": "lie", "woke": "wake", "caught": "catch", "hid": "hide", "hidden": "hide",
    "began": "begin", "begun": "begin", "grew": "grow", "grown": "grow",
}  # fmt: skip
"""Irregular verb forms, folded to the form the stemmer gives the regular ones."""
_CANONICAL = {**{word: group.split()[0] for group in SYNONYM_GROUPS for word in group.split()}, **IRREGULAR}
_SUFFIXES = ("ingly", "edly", "ness", "ment", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")
_NOTHING = (-1.0, "")
_BRITISH = (("ising", "izing"), ("ised", "ized"), ("ise", "ize"), ("our", "or"))

MAX_SCAN = 2000
"""Up to this many examples are scanned whole for similarity; beyond it, those sharing the most words."""
MAX_CANDIDATES = 200
"""Containment and overlap look at about this many examples per piece, found through its rarest words first."""
MIN_SCORE = 45.0
"""Similarity scores below this are not considered at all (rapidfuzz then skips most examples by length alone)."""
MIN_CONTAIN_WORDS = 3
"""A piece needs this many words before containment is tried."""
MIN_CONTENT = 2
"""Containment and overlap need this many content words on the example's side (overlap: on both sides)."""
MIN_CONTAIN_COVERAGE = 0.6
"""An example is a containment candidate when this share of its content words is present."""
OVERLAP_SCALE = 90.0
"""The overlap score of a perfect overlap; below a full match, above the usual threshold."""
SPELL_CUTOFF = 84.0
"""How close (``fuzz.ratio``) an unknown word must be to a content word to be read as it."""
NEGATING_PREFIXES = ("in", "un", "dis", "non", "im", "ir", "il")
"""A word is never read as itself with one of these in front, or without it: that flips its meaning."""
COMMON_SHARE = 0.5
"""A word used by more than this share of intents finds no candidates on its own (it still counts in scores)."""


@dataclass(frozen=True)
class MatcherSettings:
    """Thresholds that decide between an answer and an honest fallback."""

    threshold: float = 69.0
    """The best intent must score at least this (0-100)."""
    margin: float = 0.0
    """The best intent must beat a different runner-up by more than this."""
    keyword_score: float = 88.0
    """The score an intent gets when one of its keyword phrases is in the message."""
    word_keyword_score: float = 80.0
    """The score for a single-word keyword: one word is weaker evidence than a phrase."""
    meaning: MeaningSettings = field(default_factory=MeaningSettings)
    """How meaning-based scores are fused with these, when the matcher has a ``MeaningIndex``."""


@dataclass(frozen=True)
class IntentPhrases:
    """What the matcher needs of one intent: its id, example sentences and keywords."""

    intent: str
    examples: tuple[str, ...]
    keywords: tuple[str, ...] = ()
    whole_only: bool = False
    """Compare only with whole messages, by similarity (small talk, "tell me more")."""


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


@functools.lru_cache(maxsize=65536)
def canonical(word: str) -> str:
    """One content word as the matcher compares it: irregular forms, synonyms, spelling and suffix folded."""
    word = _CANONICAL.get(word, word)
    for british, american in _BRITISH:
        if word.endswith(british) and len(word) > len(british) + 2:
            word = word[: -len(british)] + american
            break
    return stem(word)


def tokens_of(text: str) -> list[str]:
    """The words the matcher compares: normalised, with content words folded to their canonical form."""
    return [word if word in STOPWORDS else canonical(word) for word in for_matching(text).split()]


def _postings(index: dict[str, list[int]], words: Iterable[str], budget: int) -> set[int]:
    """Examples with any of ``words``, rarest words first, while they stay within ``budget``.

    The rarest words tell the most: an example that shares only common words with a piece cannot
    score well, so on a large catalogue the common words' long lists are not read at all. The
    rarest word's examples are always read, even past the budget.
    """
    found: set[int] = set()
    for word in sorted(words, key=lambda word: len(index.get(word, ()))):
        examples = index.get(word, ())
        if found and len(found) + len(examples) > budget:
            break
        found.update(examples)
    return found


def _negates(word: str, other: str) -> bool:
    """Whether one word is the other with a negating prefix ("consistent", "inconsistent"): never a typo fix."""
    longer, shorter = (word, other) if len(word) > len(other) else (other, word)
    return any(longer == prefix + shorter for prefix in NEGATING_PREFIXES)


def _pick(items: list[str], positions: list[int]) -> list[str]:
    """``[items[p] for p in positions]``, done in C."""
    if len(positions) < 2:
        return [items[position] for position in positions]
    return list(operator.itemgetter(*positions)(items))


def _merge(best: dict[str, tuple[float, str]], found: dict[str, tuple[float, str]], less: float) -> None:
    """Keep in ``best`` each intent's better score: its own, or the one in ``found`` less ``less``."""
    for intent, (score, example) in found.items():
        if score - less > best.get(intent, _NOTHING)[0]:
            best[intent] = (score - less, example)


def _content(tokens: Iterable[str]) -> frozenset[str]:
    return frozenset(token for token in tokens if token not in STOPWORDS)


class Matcher:
    """Scores a message against every intent's examples; build once per catalogue."""

    def __init__(
        self,
        intents: Iterable[IntentPhrases],
        settings: MatcherSettings | None = None,
        meaning: MeaningIndex | None = None,
    ) -> None:
        self.settings = settings or MatcherSettings()
        self.meaning = meaning
        """The examples' sentence embeddings; ``None`` matches by rapidfuzz alone."""
        self._owner: list[str] = []
        self._raw: list[str] = []
        self._normal: list[str] = []
        self._sorted: list[str] = []
        self._content: list[frozenset[str]] = []
        self._whole_only: set[str] = set()
        self._keywords: list[tuple[tuple[str, ...], str, float]] = []
        """``(keyword's words, intent, score)`` in catalogue order."""
        self._keyword_starts: dict[tuple[str, ...], list[int]] = defaultdict(list)
        """Keywords by their first two words (one, for a one-word keyword), as positions in ``_keywords``."""
        for phrases in intents:
            if phrases.whole_only:
                self._whole_only.add(phrases.intent)
            for example in phrases.examples:
                self._add(phrases.intent, example)
            for keyword in phrases.keywords:
                tokens = tuple(tokens_of(keyword))
                if tokens:
                    score = self.settings.keyword_score if len(tokens) > 1 else self.settings.word_keyword_score
                    self._keyword_starts[tokens[:2]].append(len(self._keywords))
                    self._keywords.append((tokens, phrases.intent, score))
        self._keyword_firsts = frozenset(start[0] for start in self._keyword_starts)
        """Every keyword's first word: the only words where a keyword can start."""
        self._by_length = sorted(range(len(self._sorted)), key=lambda position: len(self._sorted[position]))
        self._lengths = [len(self._sorted[position]) for position in self._by_length]
        self._in_length_order = [self._sorted[position] for position in self._by_length]
        self._weight = self._weights()
        self._mass = [sum(self._weight[token] for token in content) for content in self._content]
        most = max(Counter(self._owner).values(), default=0)
        self._keep = 2 * most + 1
        """Enough best examples to hold the best example of each of the three best intents."""
        self._vocabulary = sorted(self._weight)
        self._known = frozenset(self._vocabulary)
        self._index: dict[str, list[int]] = defaultdict(list)
        """Telling content word -> examples with it, for containment and overlap (not small talk)."""
        self._by_word: dict[str, list[int]] = defaultdict(list)
        """Every content word -> examples with it, for similarity on a catalogue too large to scan."""
        telling = self._telling()
        for position, content in enumerate(self._content):
            for token in content:
                self._by_word[token].append(position)
            if self._owner[position] not in self._whole_only:
                for token in content & telling:
                    self._index[token].append(position)
        self._spelled: dict[str, str] = {}

    def _add(self, intent: str, example: str) -> None:
        tokens = tokens_of(example)
        if not tokens:
            return
        self._owner.append(intent)
        self._raw.append(example)
        self._normal.append(" ".join(tokens))
        self._sorted.append(" ".join(sorted(tokens)))
        self._content.append(_content(tokens))

    def _weights(self) -> dict[str, float]:
        """Each content word's weight: the log of how few intents use it (inverse intent frequency)."""
        used: dict[str, set[str]] = defaultdict(set)
        for owner, content in zip(self._owner, self._content, strict=True):
            for token in content:
                used[token].add(owner)
        intents = len(set(self._owner)) or 1
        return {token: math.log((intents + 1) / len(owners)) for token, owners in used.items()}

    def _telling(self) -> frozenset[str]:
        """Content words used by few enough intents to find candidate examples."""
        intents = len(set(self._owner))
        if intents < 8:
            return frozenset(self._weight)
        limit = math.log((intents + 1) / (COMMON_SHARE * intents))
        return frozenset(token for token, weight in self._weight.items() if weight >= limit)

    def _spell(self, tokens: list[str]) -> list[str]:
        """Read each content word the content never uses as the closest one it does, if one is close enough."""
        fixed = []
        for token in tokens:
            if token in STOPWORDS or token in self._known or len(token) < 4 or token.isdigit():
                fixed.append(token)
                continue
            if token not in self._spelled:
                if len(self._spelled) > 10_000:
                    self._spelled.clear()
                hit = process.extractOne(token, self._vocabulary, scorer=fuzz.ratio, score_cutoff=SPELL_CUTOFF)
                self._spelled[token] = hit[0] if hit and not _negates(token, hit[0]) else token
            fixed.append(self._spelled[token])
        return fixed

    def rank(self, text: str) -> list[Candidate]:
        """Every intent that scored, best first, each with the example (or keyword) that scored best."""
        return self._ranked(text, tokens_of(text))[0]

    def _ranked(self, text: str, whole: list[str]) -> tuple[list[Candidate], list[Candidate]]:
        """Every intent's best score, best first, and the best intent of each sentence that asks.

        When a sentence asks something clearly (its best intent reaches ``CLEAR_QUESTION``), what the
        person asks counts more than the background they give: the other sentences score
        ``BACKGROUND`` less, the whole message ``WHOLE_LESS`` less, and each question read with the
        sentence before it ``WINDOW_LESS`` less. A vague question ("why?") leaves the background whole.
        """
        whole = self._spell(whole)
        pieces = pieces_of(text)
        scored: list[tuple[Piece | None, dict[str, tuple[float, str]]]] = []
        if whole:
            found: dict[str, tuple[float, str]] = {}
            self._score(whole, found, whole_message=True, contained=not pieces)
            scored.append((None, found))
        for piece in pieces:
            tokens = self._spell(tokens_of(piece.text))
            if len(tokens) >= MIN_CONTAIN_WORDS and _content(tokens):
                found = {}
                self._score(tokens, found, whole_message=False)
                scored.append((piece, found))
        asked = [
            Candidate(intent, round(score, 1), example)
            for piece, found in scored
            if piece is not None and piece.asks and not piece.window and found
            for intent, (score, example) in [max(found.items(), key=lambda item: item[1][0])]
        ]
        clear = any(candidate.score >= CLEAR_QUESTION for candidate in asked)
        best: dict[str, tuple[float, str]] = {}
        """Intent -> (best score, the example or keyword behind it)."""
        for piece, found in scored:
            if not clear:
                less = 0.0
            elif piece is None:
                less = WHOLE_LESS
            else:
                less = (WINDOW_LESS if piece.window else 0.0) if piece.asks else BACKGROUND
            _merge(best, found, less)
        if self.meaning is not None:
            questions = [piece.text for piece in pieces if piece.asks and not piece.window]
            try:
                return fuse(self.meaning, self.settings.meaning, best, [text, *questions], self._whole_only), asked
            except Exception:
                log.exception("meaning-based matching failed on a message; rapidfuzz's scores decide it")
        ranked = [Candidate(intent, round(score, 1), example) for intent, (score, example) in best.items()]
        return sorted(ranked, key=lambda candidate: candidate.score, reverse=True), asked

    def _score(
        self, tokens: list[str], best: dict[str, tuple[float, str]], *, whole_message: bool, contained: bool = True
    ) -> None:
        """Keep in ``best`` every intent's best score for one piece (containment and overlap if ``contained``)."""

        def offer(intent: str, score: float, example: str) -> None:
            if score > best.get(intent, _NOTHING)[0]:
                best[intent] = (score, example)

        query = " ".join(sorted(tokens))
        seen: set[str] = set()
        for score, position in self._similar(query, tokens):
            owner = self._owner[position]
            if owner not in seen and (whole_message or owner not in self._whole_only):
                seen.add(owner)  # results come best first: the first example of an intent is its best
                offer(owner, score, self._raw[position])
        if contained and len(tokens) >= MIN_CONTAIN_WORDS:
            for owner, (score, position) in self._contained(tokens).items():
                offer(owner, score, self._raw[position])
        for position in self._keywords_in(tokens):
            words, intent, score = self._keywords[position]
            offer(intent, score, f"keyword: {' '.join(words)}")

    def _keywords_in(self, tokens: list[str]) -> list[int]:
        """The keywords whose words occur together in ``tokens``, by where their first word first occurs.

        Found from each word and each pair of words of the piece, so the cost grows with the piece,
        not with the number of keywords; keywords with the same first word keep catalogue order.
        """
        first_at: dict[str, int] = {}
        found: set[int] = set()
        for at, token in enumerate(tokens):
            if token not in self._keyword_firsts:
                continue
            first_at.setdefault(token, at)
            found.update(self._keyword_starts.get((token,), ()))
            for position in self._keyword_starts.get((token, tokens[at + 1]), ()) if at + 1 < len(tokens) else ():
                words = self._keywords[position][0]
                if tuple(tokens[at : at + len(words)]) == words:
                    found.add(position)
        return sorted(found, key=lambda position: (first_at[self._keywords[position][0][0]], position))

    def _similar(self, query: str, tokens: list[str]) -> list[tuple[float, int]]:
        """The best ``(similarity, example)`` pairs, best first.

        ``fuzz.ratio`` is at most ``200 * shorter / (both lengths)``, so only a window of example
        lengths can reach ``MIN_SCORE``; that window is scanned whole (in C) when it is small. On a
        catalogue too large for that, only examples sharing a content word with the piece are
        scored: a similar example without one shared word is rare, and misspelt words were already
        read as the content's own.
        """
        low = bisect.bisect_left(self._lengths, len(query) * MIN_SCORE / (200 - MIN_SCORE))
        high = bisect.bisect_right(self._lengths, len(query) * (200 - MIN_SCORE) / MIN_SCORE)
        content = _content(tokens)
        if high - low <= MAX_SCAN or not content:
            choices, positions = self._in_length_order[low:high], self._by_length[low:high]
        else:
            positions = list(_postings(self._by_word, content, MAX_SCAN))
            choices = _pick(self._sorted, positions)
        found = process.extract(query, choices, scorer=fuzz.ratio, limit=self._keep, score_cutoff=MIN_SCORE)
        return [(score, positions[index]) for _, score, index in found]

    def _contained(self, tokens: list[str]) -> dict[str, tuple[float, int]]:
        """Each intent's best containment or overlap score for a piece, with the example behind it.

        Containment needs at least two shared content words by its own rules; overlap with one
        shared word stays below the threshold unless the rest of both sides is nearly weightless,
        so the one-word candidates are only looked at for short pieces. A containment score is at
        most ``100 * coverage``, so it is only computed when that could beat the intent's best.
        """
        content = _content(tokens)
        normal = " ".join(tokens)
        mass = sum(self._weight.get(token, 0.0) for token in content)
        least = 1 if len(content) <= MIN_CONTENT else 2
        found: dict[str, tuple[float, int]] = {}
        for position in _postings(self._index, content, MAX_CANDIDATES):
            example = self._content[position]
            shared = content & example
            if len(shared) < least or len(example) < MIN_CONTENT:
                continue
            owner = self._owner[position]
            score = found.get(owner, _NOTHING)[0]
            if len(content) >= MIN_CONTENT and mass:
                weight = sum(self._weight[token] for token in shared)
                recall, precision = weight / self._mass[position], weight / mass
                score = max(score, OVERLAP_SCALE * 2 * precision * recall / (precision + recall))
            coverage = len(shared) / len(example)
            if coverage >= MIN_CONTAIN_COVERAGE and 100.0 * coverage > score:
                score = max(score, fuzz.token_set_ratio(normal, self._normal[position]) * coverage)
            if score > found.get(owner, _NOTHING)[0]:
                found[owner] = (score, position)
        return found

    def match(self, text: str) -> Match:
        """The best intent for ``text`` or none with the reason; of two topics asked, the other is ``Match.also``."""
        reading = self.reading(text)
        return Match(intent=None, score=0.0, reason="empty") if reading is None else self.choose(*reading)

    def reading(self, text: str) -> tuple[list[Candidate], list[Candidate]] | None:
        """Every intent's score, best first, and each asking sentence's best; ``None`` for no words."""
        tokens = tokens_of(text)
        return self._ranked(text, tokens) if tokens else None

    def choose(self, ranked: list[Candidate], asked: list[Candidate], settings: MatcherSettings | None = None) -> Match:
        """The match a reading gives under ``settings`` (this matcher's own by default): threshold, margin, also."""
        settings = settings or self.settings
        found = self.decide(ranked, settings)
        clear = [c for c in asked if c.score >= settings.threshold and c.intent not in self._whole_only]
        clear.sort(key=lambda candidate: candidate.score, reverse=True)
        two = {c.intent for c in clear[:2]}
        if found.reason == "ambiguous" and len(two) == 2 and two == {ranked[0].intent, ranked[1].intent}:
            found = replace(found, intent=ranked[0].intent, reason="matched")  # two clear questions, not one unclear
        if found.intent is None:
            return found
        other = [c.intent for c in clear if c.intent != found.intent]
        return replace(found, also=other[0]) if other else found

    def decide(self, ranked: list[Candidate], settings: MatcherSettings | None = None) -> Match:
        """Apply the threshold and the ambiguity margin (of ``settings``, else this matcher's) to ranked candidates."""
        settings = settings or self.settings
        top = tuple(ranked[:3])
        if not ranked:
            return Match(intent=None, score=0.0, reason="low_confidence")
        first = ranked[0]
        second = ranked[1] if len(ranked) > 1 else None
        runner_up, runner_up_score = (second.intent, second.score) if second else (None, 0.0)
        if first.score < settings.threshold:
            reason = "low_confidence"
        elif second is not None and first.score - second.score <= settings.margin:
            reason = "ambiguous"
        else:
            return Match(first.intent, first.score, runner_up, runner_up_score, "matched", top)
        return Match(None, first.score, runner_up, runner_up_score, reason, top)
