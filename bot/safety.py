"""The crisis screen: runs first on every message and answers with crisis resources.

The lexicon lives in code so that it works when no content file loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot import resources
from bot.models import Detection, Level, Reply, ReplyKind, Track
from bot.normalize import fold, squeeze


@dataclass(frozen=True)
class Rule:
    """One lexicon pattern and what it means when it fires."""

    id: str
    category: str
    level: Level
    pattern: re.Pattern[str]
    track: Track = Track.SELF


def _rule(rule_id: str, category: str, level: Level, pattern: str, track: Track = Track.SELF) -> Rule:
    return Rule(rule_id, category, level, re.compile(pattern), track)


FLOOR: tuple[Rule, ...] = (
    _rule("suicide.kill_myself", "suicidal", Level.CRISIS, r"\b(kill|end|hang)\s*(my\s*self|myself|my life)\b"),
    _rule("suicide.word", "suicidal", Level.CRISIS, r"\bsuicid(e|al)\b"),
    _rule("suicide.want_to_die", "suicidal", Level.CRISIS, r"\b(want|wanna|going) (to )?die\b"),
    _rule("slang.kms", "slang", Level.CRISIS, r"\b(kms|unalive|sewer ?slide)\b"),
    _rule("passive.wish_dead", "passive", Level.CRISIS, r"\bwish (i was|i were|to be) dead\b"),
    _rule("selfharm.cut", "self_harm", Level.CRISIS, r"\b(cut|cutting|hurt|hurting|harm|harming) myself\b"),
    _rule("attempt.took_all", "attempt", Level.IMMINENT, r"\btook (all|the whole bottle|them all)\b"),
    _rule(
        "partner.kill_me",
        "partner_danger",
        Level.IMMINENT,
        r"\b(he|she|they)( will|'ll| is going to| said .{0,20}) kill me\b",
        Track.OTHERS,
    ),
    _rule("partner.choked", "partner_danger", Level.IMMINENT, r"\b(choked|strangled) me\b", Track.OTHERS),
)
"""The floor: patterns that can never be removed by content files."""


SCREEN_FAILED = Detection(Level.CRISIS, "screen_failed", "screen.error")
"""Used when the screen itself fails: crisis resources are the safe answer."""


def screen_text(text: str) -> str:
    """Normalise for detection: folded case, quotes and Unicode forms, letter runs squeezed."""
    return " ".join(squeeze(word) for word in fold(text).split())


def detect(text: str, rules: tuple[Rule, ...] = FLOOR) -> Detection | None:
    """The most serious rule that fires on ``text``, or ``None``."""
    screened = screen_text(text)
    found: Detection | None = None
    for rule in rules:
        if rule.pattern.search(screened) and (found is None or rule.level.rank > found.level.rank):
            found = Detection(rule.level, rule.category, rule.id, rule.track)
    return found


def resources_for(detection: Detection) -> tuple[str, ...]:
    """The ids of the resources a crisis reply shows, in the order it shows them."""
    shown = []
    if detection.level is Level.IMMINENT or detection.track is Track.OTHERS:
        shown.append("emergency")
    if detection.track is Track.OTHERS:
        shown.append("dv_hotline")
    return (*shown, "lifeline", "outside_us")


def crisis_reply(detection: Detection) -> Reply:
    """The reply for a detection: resources first, the bot's limits said plainly."""
    shown = resources_for(detection)
    lead = f"{resources.EMERGENCY.capitalize()}. " if "emergency" in shown else ""
    if detection.track is Track.OTHERS:
        text = (
            f"{lead}What you're describing sounds frightening, and it is not your fault. "
            f"You can reach {resources.DV_HOTLINE}, when it is safe for you. For thoughts of suicide, "
            f"{resources.LIFELINE}. {resources.AUTOMATED} Are you somewhere safe right now?"
        )
    else:
        text = (
            f"{lead}Please {resources.LIFELINE}: you can talk to a trained counselor right now. "
            f"I'm really glad you told me. {resources.AUTOMATED} Are you thinking about suicide right now?"
        )
    return Reply(f"{text}\n\n{resources.OUTSIDE_US}", kind=ReplyKind.CRISIS)
