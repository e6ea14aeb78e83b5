"""Crisis resources: every hotline fact the bot gives lives here, with when and how it was checked."""

from __future__ import annotations

CHECKED_ON = "2026-11-29"
"""When these facts were last compared with their sources; re-check before each release."""
CHECKED_AGAINST = "the official pages cited in shared/research/safety-anchors.md, section 1"
CHECKED_HOW = (
    "compared by hand with the research notes, which quote and cite the official pages (988lifeline.org, fcc.gov, "
    "thehotline.org via ovc.ojp.gov, samaritans.org, the Government of Canada release, Lifeline Australia, "
    "findahelpline.com); not checked live, because the machine this was written on reaches no web sites. "
    "Call or visit each one before a release."
)
"""How the check was done, said honestly so the next person knows what is still owed."""

LIFELINE = "call or text 988, or chat at 988lifeline.org"
"""The 988 Suicide & Crisis Lifeline (US): call, text or chat, free, 24/7. [C] in the research notes."""
EMERGENCY = "if you are in immediate danger, call 911"
"""US emergency services. [C]"""
DV_HOTLINE = (
    "the National Domestic Violence Hotline: call 1-800-799-7233, text START to 88788, or chat at thehotline.org"
)
"""The National Domestic Violence Hotline (US). [C]"""
LIFELINE_ES = (
    "En español: llama al 988 y marca 2, envía AYUDA por mensaje de texto al 988, o chatea en 988lifeline.org/es/chat"
)
"""988 in Spanish (call and press 2, text AYUDA, chat), added when a message was read in Spanish. [C]"""
OUTSIDE_US = (
    "Outside the US: Canada, call or text 988 · UK & Ireland, Samaritans 116 123 · "
    "Australia, Lifeline 13 11 14 · elsewhere, findahelpline.com"
)
"""One line for everyone else; Telegram does not tell us where a person is. Each entry is [C]."""
ELSEWHERE = "outside the US, findahelpline.com lists local lines"
"""The short form of ``OUTSIDE_US`` for gentle check-ins."""
AUTOMATED = "I'm an automated bot: I can't see where you are or send help."
"""Said in every crisis reply, so nobody waits for help that is not coming."""

HOTLINE_NUMBERS = ("988", "911", "1-800-799-7233", "800-799-7233", "88788", "116 123", "13 11 14", "741741")
"""Numbers that must never be typed into content YAML; ``check`` looks for them."""
