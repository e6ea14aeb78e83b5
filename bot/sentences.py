"""The sentences of a long message: which ask something, and the pieces the matcher compares one by one."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.normalize import for_matching

_SENTENCE = re.compile(r"[^.!?;\n]+[.!?;\n]*|[.!?;\n]+")

MAX_PIECES = 4
"""At most this many sentences of a long message are compared one by one (those that ask, then the last ones)."""
BACKGROUND = 5.0
"""In a message where a sentence asks, the other sentences score this much less."""
WHOLE_LESS = 3.0
"""In a message where a sentence asks, the message as a whole scores this much less."""
CLEAR_QUESTION = 80.0
"""A sentence asks clearly when its best intent scores at least this; only then is the rest background."""
WINDOW_LESS = 0.0
"""A sentence that asks read with the sentence before it scores this much less than the question alone."""
QUESTION_STARTS = frozenset(
    "why how what when where which who whose should shall is am are was were can could do does did will would"
    " has have may might anyone".split()
)
"""A sentence starting with one of these (after normalising) asks something, with or without a question mark."""
WH_WORDS = frozenset("why how what".split())
"""Found among a sentence's first three words ("so why do I", "and how can I"), these ask too."""


@dataclass(frozen=True)
class Piece:
    """A sentence of a long message, or a window of a sentence that asks and the one before it."""

    text: str
    asks: bool
    window: bool = False


def asks(sentence: str) -> bool:
    """Whether a sentence asks something: a question mark, or a question word where a question starts."""
    if sentence.rstrip().endswith("?"):
        return True
    words = for_matching(sentence).split()
    return bool(words) and (words[0] in QUESTION_STARTS or any(word in WH_WORDS for word in words[:3]))


def pieces_of(text: str) -> list[Piece]:
    """The sentences of a message worth comparing one by one (none for a single sentence).

    The sentences that ask come first, each also with the sentence before it ("She adored me one
    day and ignored me the next. Why did that hook me?"), then the others from the last; at most
    ``MAX_PIECES``.
    """
    sentences = [found.group().strip() for found in _SENTENCE.finditer(text) if found.group().strip(" .!?;\n")]
    if len(sentences) < 2:
        return []
    asking, background = [], []
    for at in reversed(range(len(sentences))):
        if asks(sentences[at]):
            asking.append(Piece(sentences[at], asks=True))
            if at:
                asking.append(Piece(f"{sentences[at - 1]} {sentences[at]}", asks=True, window=True))
        else:
            background.append(Piece(sentences[at], asks=False))
    return [*asking, *background][:MAX_PIECES]
