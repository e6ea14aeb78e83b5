"""Normalisation for the crisis screen: the text as every lexicon pattern sees it, read once per message.

Folds Unicode forms, curly apostrophes, zero-width characters and fillers used as spaces (the Hangul
filler), accents and diacritics ("kíll"), look-alike letters (Cyrillic, Greek, dotless ı, a capital
I for l inside a word: "kiII"), and case; maps method
emoji to words; undoes leetspeak ("k1ll"), spaced or dotted letters ("k i l l", "s.u.i.c.i.d.e"),
repeated letters ("diiiie"), contractions ("I'm" -> "i am"), chat shorthand and known misspellings,
and corrects tokens one edit away from a few lexicon words ("suicde"). Clause punctuation becomes
`` | `` so that word gaps in patterns stay inside one clause. The work grows only with the length
of the message, which ``normalize.fold`` caps at ``normalize.MAX_CHARS``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from itertools import combinations

from rapidfuzz.distance import OSA

from bot import lexicon
from bot.normalize import CONTRACTIONS, MAX_CHARS, MISSPELLINGS, SHORTHAND, fold, squeeze

BOUNDARY = "|"
"""The token that stands where a clause ended."""

Token = tuple[str, int]
"""A word or a clause mark, with the line of the message it came from."""

_TRANSLATE = str.maketrans(lexicon.EMOJI) | lexicon.CONFUSABLES | lexicon.FILLERS
_MARKS = frozenset({"Mn", "Me"})
"""Unicode categories of the marks that accents and diacritics are made of ("í" is "i" and a mark)."""
_CAPITAL_I_WORD = re.compile(r"[^\W\d_]*I[^\W\d_]*")
_SENTENCE_END = re.compile(r"[.!?]+")
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


def _capital_i(text: str) -> str:
    """Read a capital I as l inside a word when only that makes a lexicon word ("kiII" -> "kill").

    A word with no small letter ("I", "KILL") is read as written, and so is one that is a lexicon
    word already.
    """
    vocabulary = _vocabulary()

    def read(found: re.Match[str]) -> str:
        word = found.group()
        if word.isupper() or word.lower() in vocabulary:
            return word
        spots = [index for index, letter in enumerate(word) if letter == "I"][:_MAX_RUNS]
        for size in range(1, len(spots) + 1):
            for chosen in combinations(spots, size):
                candidate = "".join("l" if index in chosen else letter for index, letter in enumerate(word))
                if candidate.lower() in vocabulary:
                    return candidate
        return word

    return _CAPITAL_I_WORD.sub(read, text)


def _fold(line: str) -> str:
    """One line folded: case, Unicode forms, fillers, emoji, accents and look-alike letters ("kíll" -> "kill")."""
    folded = fold(line).translate(_TRANSLATE)
    if folded.isascii():
        return folded
    bare = "".join(char for char in unicodedata.normalize("NFD", folded) if unicodedata.category(char) not in _MARKS)
    return unicodedata.normalize("NFC", bare).translate(_TRANSLATE)


def _is_mark(piece: str) -> bool:
    """Whether a piece is clause punctuation (".", "?!", ",") rather than a word."""
    return not (piece[0].isalnum() or piece[0] in "'_")


def _pieces(text: str) -> list[Token]:
    """Words and clause marks, each with its line, with look-alikes, leetspeak and dotted letters undone."""
    text = text[:MAX_CHARS]
    if "I" in text:
        text = _capital_i(text)
    pieces: list[Token] = []
    for row, line in enumerate(text.split("\n")):
        for chunk in _fold(line).split():
            chunk = _deleet(chunk)
            if _SPACED.fullmatch(chunk):
                chunk = re.sub(r"[^a-z]", "", chunk)
            pieces += [(piece, row) for piece in _PIECES.findall(chunk)]
    return pieces


def _join_spaced(pieces: list[Token]) -> list[Token]:
    """Join runs of three or more single letters ("k i l l") back into words, across lines too."""
    joined: list[Token] = []
    run: list[Token] = []
    for piece, row in [*pieces, (BOUNDARY, -1)]:
        if len(piece) == 1 and piece.isalpha():
            run.append((piece, row))
            continue
        if len(run) >= 3:
            letters = "".join(letter for letter, _ in run)
            joined += [(word, run[-1][1]) for word in _segment(letters) or [letters]]
        else:
            joined += run
        run = []
        joined.append((piece, row))
    return joined[:-1]


@lru_cache(maxsize=16384)
def _rewrite(piece: str) -> tuple[str, ...]:
    """The words one piece of a message stands for, e.g. "im" -> ("i", "am")."""
    if _is_mark(piece):
        return (piece,)
    word = WORD_MAP.get(piece)
    if word is None:
        bare = piece.strip("'")
        word = WORD_MAP.get(bare)
        if word is None:
            bare = _unrepeat(bare.replace("'", ""))
            word = WORD_MAP.get(bare, _correct(bare))
    return tuple(word.split())


def _join_words(tokens: list[Token]) -> list[Token]:
    """Join words split by a space ("my self", "sui cide") when together they make a lexicon word."""
    joined: list[Token] = []
    index = 0
    while index < len(tokens):
        pair = tokens[index][0] + tokens[index + 1][0] if index + 1 < len(tokens) else ""
        following = tokens[index + 2][0] if index + 2 < len(tokens) else ""
        if pair in lexicon.JOIN_WORDS and not (pair == "myself" and following in lexicon.NOT_AFTER_MY_SELF):
            joined.append((pair, tokens[index + 1][1]))
            index += 2
        else:
            joined.append(tokens[index])
            index += 1
    return joined


@dataclass(frozen=True)
class Screened:
    """A message read once by the screen: the text every pattern runs over, and its words and marks by line."""

    text: str
    """What lexicon patterns see, e.g. "I’m not OK. Wanna d!e" -> "i am not ok | want to die"."""
    tokens: tuple[Token, ...] = ()
    """Each word or clause mark as written (".", "?!", ","), with the line of the message it is on."""

    @cached_property
    def clauses(self) -> tuple[tuple[str, bool], ...]:
        """Each clause's words and whether its sentence was asked as a question.

        A sentence ends at ``.``, ``!`` or ``?`` or at a line break; commas, semicolons and colons
        end a clause inside it.
        """
        found: list[tuple[str, bool]] = []
        sentence: list[str] = []
        words: list[str] = []

        def end_clause() -> None:
            if words:
                sentence.append(" ".join(words))
                words.clear()

        def end_sentence(question: bool) -> None:
            end_clause()
            found.extend((clause, question) for clause in sentence)
            sentence.clear()

        row = self.tokens[0][1] if self.tokens else 0
        for token, line in self.tokens:
            if line != row:
                end_sentence(question=False)
                row = line
            if not _is_mark(token):
                words.append(token)
                continue
            end_clause()
            ending = _SENTENCE_END.search(token)
            if ending is not None:
                end_sentence(question=ending.group().endswith("?"))
        end_sentence(question=False)
        return tuple(found)


def screen(text: str) -> Screened:
    """Read a message once for the screen: what every pattern sees, and its clauses for the crisis-state check."""
    tokens = _join_words([(token, row) for piece, row in _join_spaced(_pieces(text)) for token in _rewrite(piece)])
    kept: list[str] = []
    for token, _ in tokens:
        if not _is_mark(token):
            kept.append(token)
        elif kept and kept[-1] != BOUNDARY:
            kept.append(BOUNDARY)
    while kept and kept[-1] == BOUNDARY:
        kept.pop()
    return Screened(" ".join(kept), tuple(tokens))


def screen_text(text: str) -> str:
    """The message as lexicon patterns see it, e.g. "I’m not OK. Wanna d!e" -> "i am not ok | want to die"."""
    return screen(text).text
