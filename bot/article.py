"""The source article as `check` reads it: text folded for verbatim comparison, and its sections."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from bot.normalize import APOSTROPHES, DOUBLE_QUOTES

DASHES = "\u2012\u2013\u2014\u2015\u2212"
"""Dashes between words (figure, en, em, bar, minus); a hyphen inside a word stays as it is."""
_STYLE = str.maketrans(
    {
        **dict.fromkeys(APOSTROPHES, "'"),
        **dict.fromkeys(DOUBLE_QUOTES, '"'),
        **dict.fromkeys(DASHES, " - "),
        "\u2010": "-",
        "\u2011": "-",
        "\u2026": "...",
    }
)
_DASH = re.compile(r"\s*-{2,}\s*|\s+-\s*|\s*-\s+")
_SPACES = re.compile(r"\s+")

HEADING_MAX_WORDS = 12
"""A line of the article this short, without closing punctuation, is a section heading."""
_CLOSING = ".?!:;,\"')”’…"


def fold_style(text: str) -> str:
    """Fold what differs between copies of the same words: Unicode forms, whitespace, quote and dash styles.

    Case and punctuation stay, so the comparison is still word for word. A spaced dash, a double
    hyphen and an em dash all read as ``-``; "..." and "…" compare equal.
    """
    text = unicodedata.normalize("NFKC", text).translate(_STYLE)
    return _SPACES.sub(" ", _DASH.sub(" - ", text)).strip()


def is_heading(line: str) -> bool:
    """Whether an article line is a heading: short, and not ending like a sentence."""
    line = line.strip()
    return bool(line) and len(line.split()) <= HEADING_MAX_WORDS and not line.endswith(tuple(_CLOSING))


@dataclass(frozen=True)
class Section:
    """One part of the article: its heading and where its text lies in the folded article."""

    heading: str
    start: int
    end: int


@dataclass(frozen=True)
class Divergence:
    """Where a passage stops following the article."""

    matched: str
    """The end of the longest opening of the passage that is in the article."""
    passage: str
    """What the passage says next."""
    article: str
    """What the article says there instead (empty when the opening itself is not found)."""


class Article:
    """The article's text, folded once, with its sections in order."""

    def __init__(self, text: str, opening: str) -> None:
        self.text = ""
        self.sections: list[Section] = []
        heading, start = opening, 0
        for raw in text.splitlines():
            if not raw.strip():
                continue
            if is_heading(raw):
                self._close(heading, start)
                heading, start = raw.strip(), len(self.text)
                continue
            self.text += ("" if not self.text else " ") + fold_style(raw)
        self._close(heading, start)

    def _close(self, heading: str, start: int) -> None:
        if len(self.text) > start or heading:
            self.sections.append(Section(heading, start, len(self.text)))

    def section(self, heading: str) -> Section | None:
        """The section with this heading (quote and dash styles folded), if any."""
        wanted = fold_style(heading).casefold()
        return next((s for s in self.sections if fold_style(s.heading).casefold() == wanted), None)

    def find(self, passage: str) -> int:
        """Where the folded passage starts in the folded article, or -1."""
        return self.text.find(fold_style(passage))

    def section_at(self, position: int) -> Section | None:
        """The section a position of the folded article lies in."""
        return next((s for s in self.sections if s.start <= position < s.end), None)

    def divergence(self, passage: str, context: int = 40) -> Divergence:
        """Where a passage that is not verbatim first departs from the article."""
        folded = fold_style(passage)
        low, high = 0, len(folded)
        while low < high:  # the longest opening of the passage found in the article
            middle = (low + high + 1) // 2
            if folded[:middle] in self.text:
                low = middle
            else:
                high = middle - 1
        where = self.text.find(folded[:low]) if low else -1
        after = self.text[where + low : where + low + context] if where >= 0 else ""
        return Divergence(folded[max(0, low - context) : low], folded[low : low + context], after)
