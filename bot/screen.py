"""Normalisation for the crisis screen: the text as every lexicon pattern sees it.

Folds Unicode forms, curly apostrophes, zero-width and look-alike letters and case; maps method
emoji to words; undoes leetspeak ("k1ll"), spaced or dotted letters ("k i l l", "s.u.i.c.i.d.e"),
repeated letters ("diiiie"), contractions ("I'm" -> "i am"), chat shorthand and known misspellings,
and corrects tokens one edit away from a few lexicon words ("suicde"). Clause punctuation becomes
`` | `` so that word gaps in patterns stay inside one clause. The work grows only with the length
of the message, which ``normalize.fold`` caps at ``normalize.MAX_CHARS``.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from itertools import combinations

from rapidfuzz.distance import OSA

from bot import lexicon
from bot.normalize import CONTRACTIONS, MISSPELLINGS, SHORTHAND, fold, squeeze

BOUNDARY = "|"
"""The token that stands where a clause ended."""

_TRANSLATE = str.maketrans(lexicon.EMOJI) | lexicon.CONFUSABLES
_PIECES = re.compile(r"[\w']+|[.!?;:,…]+")
_SPACED = re.compile(r"(?:[a-z][.\-_*~+/]){2,}[a-z][.!?,]*")
_NUMBERISH = re.compile(r"[0-9]+[a-z]{0,3}|x[0-9]+|[0-9]+x|[0-9.,:/-]+")
_LEET_CHARS = re.compile(r"[013457@$!]")
_LEET_IN_WORD = re.compile(
    r"(?<=[a-z0-9@$])[013457@$](?=[a-z0-9@$])|(?<=[a-z])[013457@$]|[013457@$](?=[a-z])|(?<=[a-z])!(?=[a-z])"
)
_LEET = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"}
_DOUBLE = re.compile(r"([a-z])\1")
_MAX_RUNS = 4

WORD_MAP: dict[str, str] = {**MISSPELLINGS, **SHORTHAND, **CONTRACTIONS, **lexicon.CONTRACTIONS_EXTRA, **lexicon.TYPOS}
"""Every token rewrite, applied once per token; later tables win on a clash."""


@cache
def _vocabulary() -> frozenset[str]:
    """Lexicon words that a token with doubled letters may be folded to ("diie" -> "die"), read once."""
    return frozenset(word for word in lexicon.vocabulary() if len(word) >= 3)


def _deleet(chunk: str) -> str:
    """Undo leetspeak inside a word ("k1ll", "$uicide", "d!e"); numbers and times stay as they are."""
    bare = chunk.strip(".,!?;:'\"()[]")
    if bare in WORD_MAP or not _LEET_CHARS.search(chunk) or not re.search(r"[a-z]", chunk):
        return chunk
    if _NUMBERISH.fullmatch(bare):
        return chunk
    return _LEET_IN_WORD.sub(lambda found: _LEET[found.group()], chunk)


@lru_cache(maxsize=8192)
def _unrepeat(token: str) -> str:
    """Fold repeated letters: to two, then to one where that gives a lexicon word ("kiiiill" -> "kill")."""
    two = squeeze(token)
    vocabulary = _vocabulary()
    if two in vocabulary or not _DOUBLE.search(two):
        return two
    runs = [found.start() for found in _DOUBLE.finditer(two)][:_MAX_RUNS]
    for size in range(1, len(runs) + 1):
        for chosen in combinations(runs, size):
            candidate = "".join(letter for index, letter in enumerate(two) if index - 1 not in chosen)
            if candidate in vocabulary:
                return candidate
    return two


@lru_cache(maxsize=8192)
def _correct(token: str) -> str:
    """A token of five letters or more one edit away from a lexicon word becomes that word."""
    if len(token) < 5 or token in _vocabulary() or not token.isalpha():
        return token
    near = [
        word
        for word in lexicon.FUZZY_WORDS
        if word[0] == token[0] and abs(len(word) - len(token)) <= 1 and OSA.distance(token, word, score_cutoff=1) <= 1
    ]
    return min(near, key=lambda word: abs(len(word) - len(token)), default=token)


def _segment(letters: str) -> list[str] | None:
    """Split a run of joined letters into lexicon words ("killmyself" -> kill, myself), or ``None``."""
    best: list[list[str] | None] = [[]] + [None] * len(letters)
    for end in range(1, len(letters) + 1):
        for start in range(max(0, end - 12), end):
            head = best[start]
            if head is not None and letters[start:end] in lexicon.SEGMENT_WORDS:
                best[end] = [*head, letters[start:end]]
                break
    return best[-1]


def _pieces(text: str) -> list[str]:
    """Words and clause marks, with leetspeak and dotted letters undone."""
    pieces: list[str] = []
    for chunk in text.split():
        chunk = _deleet(chunk)
        if _SPACED.fullmatch(chunk):
            chunk = re.sub(r"[^a-z]", "", chunk)
        for piece in _PIECES.findall(chunk):
            pieces.append(BOUNDARY if not (piece[0].isalnum() or piece[0] in "'_") else piece)
    return pieces


def _join_spaced(pieces: list[str]) -> list[str]:
    """Join runs of three or more single letters ("k i l l") back into words."""
    joined: list[str] = []
    run: list[str] = []
    for piece in [*pieces, BOUNDARY]:
        if len(piece) == 1 and piece.isalpha():
            run.append(piece)
            continue
        if len(run) >= 3:
            letters = "".join(run)
            joined.extend(_segment(letters) or [letters])
        else:
            joined.extend(run)
        run = []
        joined.append(piece)
    return joined[:-1]


@lru_cache(maxsize=16384)
def _rewrite(piece: str) -> tuple[str, ...]:
    """The words one piece of a message stands for, e.g. "im" -> ("i", "am")."""
    if piece == BOUNDARY:
        return (piece,)
    word = WORD_MAP.get(piece)
    if word is None:
        bare = piece.strip("'")
        word = WORD_MAP.get(bare)
        if word is None:
            bare = _unrepeat(bare.replace("'", ""))
            word = WORD_MAP.get(bare, _correct(bare))
    return tuple(word.split())


def _join_words(tokens: list[str]) -> list[str]:
    """Join words split by a space ("my self", "sui cide") when together they make a lexicon word."""
    joined: list[str] = []
    index = 0
    while index < len(tokens):
        pair = tokens[index] + tokens[index + 1] if index + 1 < len(tokens) else ""
        following = tokens[index + 2] if index + 2 < len(tokens) else ""
        if pair in lexicon.JOIN_WORDS and not (pair == "myself" and following in lexicon.NOT_AFTER_MY_SELF):
            joined.append(pair)
            index += 2
        else:
            joined.append(tokens[index])
            index += 1
    return joined


def screen_text(text: str) -> str:
    """The message as lexicon patterns see it, e.g. "I’m not OK. Wanna d!e" -> "i am not ok | want to die"."""
    pieces = _join_spaced(_pieces(fold(text).translate(_TRANSLATE)))
    tokens = [token for piece in pieces for token in _rewrite(piece)]
    tokens = _join_words(tokens)
    kept: list[str] = []
    for token in tokens:
        if token == BOUNDARY and (not kept or kept[-1] == BOUNDARY):
            continue
        kept.append(token)
    while kept and kept[-1] == BOUNDARY:
        kept.pop()
    return " ".join(kept)
