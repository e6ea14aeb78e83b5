"""Redacted excerpts for escalation records, stored only when an operator opts in."""

from __future__ import annotations

import re

EXCERPT_CHARS = 160
"""The longest excerpt kept, after redaction."""

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE), "[link]"),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "[email]"),
    (re.compile(r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|me|co|uk|us|ca|au|info|app)\b\S*", re.IGNORECASE), "[link]"),
    (re.compile(r"(?<![\w@])@\w{2,}"), "[handle]"),
    (
        re.compile(
            r"\b((?i:(?:my|his|her|their|our) (?:full |real |first |last )?name(?:'s| is)|i am called|i'm called"
            r"|call me|named))\s+(?!(?:at|on|in|if|when|a|an|the|back|later|now|so|and|or|but|please)\b)"
            r"[\w'-]+(?:\s+[A-Z][\w'-]*)?"
        ),
        r"\1 [name]",
    ),
    (re.compile(r"(?<=[a-z0-9,;] )(?!I\b|I'|OK\b)[A-Z][a-z'-]+(?: [A-Z][a-z'-]+)*"), "[name]"),
    (re.compile(r"\+?\d[\d\s().:/-]*\d|\d"), "[number]"),
)
"""Links, emails, @handles, names (after "my name is" and the like, and capitalised mid-sentence), digits."""


def redact(text: str) -> str:
    """The text with links, emails, @handles, names and every digit replaced by a placeholder."""
    text = " ".join(text.split())
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    return text


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A redacted excerpt, cut at a word boundary to at most ``limit`` characters."""
    redacted = redact(text[: limit * 8])
    if len(redacted) <= limit:
        return redacted
    cut = redacted[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"
