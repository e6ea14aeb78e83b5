"""Crisis resources: every hotline fact the bot gives lives here, with when it was checked."""

from __future__ import annotations

CHECKED_ON = "2026-11"
"""When these facts were last compared with their sources (see CHECKED_AGAINST); re-check before each release."""
CHECKED_AGAINST = "the official pages cited in shared/research/safety-anchors.md, section 1"

LIFELINE = "call or text 988, or chat at 988lifeline.org"
"""The 988 Suicide & Crisis Lifeline (US): call, text or chat, free, 24/7."""
EMERGENCY = "if you are in immediate danger, call 911"
"""US emergency services."""
DV_HOTLINE = (
    "the National Domestic Violence Hotline: call 1-800-799-7233, text START to 88788, or chat at thehotline.org"
)
"""The National Domestic Violence Hotline (US)."""
OUTSIDE_US = (
    "Outside the US: Canada, call or text 988 · UK & Ireland, Samaritans 116 123 · "
    "Australia, Lifeline 13 11 14 · elsewhere, findahelpline.com"
)
"""One line for everyone else; Telegram does not tell us where a person is."""
AUTOMATED = "I'm an automated bot: I can't see where you are or send help."
"""Said in every crisis reply, so nobody waits for help that is not coming."""

TEXTS = {
    "emergency": EMERGENCY,
    "lifeline": LIFELINE,
    "dv_hotline": DV_HOTLINE,
    "outside_us": OUTSIDE_US,
}
"""Each resource by the id that escalation records store."""

HOTLINE_NUMBERS = ("988", "911", "1-800-799-7233", "800-799-7233", "88788", "116 123", "13 11 14", "741741")
"""Numbers that must never be typed into content YAML; ``check`` looks for them."""
