"""The crisis screen: runs first on every message, and the replies for each track and level.

The floor's rules live in ``bot/floor/floor.yml``, inside the package, so that they apply when no
content file loads; moderators can add rules in ``safety/patterns.yml``, never remove one. Both are
compiled by ``bot.rules``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from functools import lru_cache

from bot import bounded, lexicon, resources
from bot.lexicon import Rule
from bot.models import Detection, Level, Reply, ReplyKind, Track
from bot.prefilter import prefilter_of
from bot.rules import floor
from bot.screen import Screened, screen

SCREEN_FAILED = Detection(Level.CRISIS, "screen_failed", "screen.error")
"""Used when the screen itself fails: crisis resources are the safe answer."""


def prepare(rules: tuple[Rule, ...]) -> None:
    """Build the screen's prefilter for ``rules`` now (about 0.1 s), so that no person's first message waits for it.

    Never raises: a prefilter that cannot be built is replaced by one that tries every rule.
    """
    prefilter_of(rules)


def _read(text: str | Screened) -> Screened:
    """The message as the screen reads it; a message already read is not read again."""
    return text if isinstance(text, Screened) else screen(text)


def fired(
    text: str | Screened,
    rules: Iterable[Rule] | None = None,
    *,
    prefilter: bool = True,
    timed_out: list[Rule] | None = None,
) -> list[Rule]:
    """Every rule that fires on ``text``, in rule order (``prefilter`` only skips rules that cannot match).

    ``text`` is a message or what ``bot.screen.screen`` made of it; ``rules`` defaults to the floor's. A rule
    whose search runs out of its time bound (``bot.bounded.BOUND``) counts as fired, so that a slow pattern
    never makes a message look safer than it would have, and is added to ``timed_out`` when given.
    """
    screened = _read(text).text
    if not screened:
        return []
    rules = floor() if rules is None else rules if isinstance(rules, tuple) else tuple(rules)
    found = []
    for at in prefilter_of(rules).candidates(screened) if prefilter else range(len(rules)):
        matched = bounded.search(rules[at].pattern, screened)
        if matched is None and timed_out is not None:
            timed_out.append(rules[at])
        if matched is not False:
            found.append(rules[at])
    return found


def detect(
    text: str | Screened, rules: Iterable[Rule] | None = None, *, timed_out: list[Rule] | None = None
) -> Detection | None:
    """The most serious detection for ``text``, or ``None``.

    The highest level wins and, at the same level, the rule listed first. When a rule about
    danger from others fires at crisis level or above, the reply takes that track, whose
    resources include 988 as well, so both kinds of help are shown. When any rule that fired
    reads Spanish, the reply adds 988's Spanish line. ``timed_out`` collects the rules that ran out of their
    time bound, which count as fired (``fired``).
    """
    found = fired(text, rules, timed_out=timed_out)
    if not found:
        return None
    best = max(found, key=lambda rule: rule.level.rank)  # max keeps the first of equals
    track = best.track
    if best.level.rank >= Level.CRISIS.rank and any(
        rule.track is Track.OTHERS and rule.level.rank >= Level.CRISIS.rank for rule in found
    ):
        track = Track.OTHERS
    language = next((rule.language for rule in found if rule.language), None)
    return Detection(best.level, best.category, best.id, track, best.window_level, language)


def in_crisis_window(detection: Detection) -> Detection:
    """The detection as it counts while the person is already in a crisis state: never below crisis."""
    floor = detection.window_level or Level.CRISIS
    if detection.level.rank >= floor.rank:
        return detection
    return dataclasses.replace(detection, level=floor)


def resources_for(detection: Detection) -> tuple[str, ...]:
    """The ids of the resources a crisis reply shows, in the order it shows them."""
    shown = []
    if detection.level is Level.IMMINENT or detection.track is Track.OTHERS:
        shown.append("emergency")
    if detection.track is Track.OTHERS:
        shown.append("dv_hotline")
    shown.append("lifeline")
    if detection.language == "es":
        shown.append("lifeline_es")
    return (*shown, "outside_us")


PREVIEW_LINE = "Thank you for writing. Here is what I can share."
"""The first line of every reply that leads with 911: a lock-screen preview shows this, not the danger."""
_SAFE_QUESTION = "Are you safe right now?"
_SUICIDE_QUESTION = "Are you thinking about suicide right now?"
_GLAD = "I'm really glad you told me."
_WORDS: dict[str, tuple[str, str]] = {
    lexicon.SUICIDAL: (_GLAD, _SUICIDE_QUESTION),
    lexicon.PASSIVE: ("Feeling like you don't want to be here is heavy, and I'm glad you told me.", _SUICIDE_QUESTION),
    lexicon.METHOD: (_GLAD, _SAFE_QUESTION),
    lexicon.ATTEMPT: ("I'm really glad you told me, and I want you to get help right now.", _SAFE_QUESTION),
    lexicon.SELF_HARM: (
        "You don't deserve to be in this much pain, and I'm glad you told me.",
        "Are you hurt, or thinking about suicide, right now?",
    ),
    lexicon.FAREWELL: ("I'm really glad you wrote to me.", "Are you thinking about ending your life?"),
    lexicon.HOPELESSNESS: ("That sounds incredibly painful, and I'm glad you told me.", _SUICIDE_QUESTION),
    lexicon.PARTNER_DANGER: (
        "What you're describing sounds frightening, and it is not your fault.",
        "Are you somewhere safe right now?",
    ),
    lexicon.PARTNER_SUICIDE_THREAT: (
        "A partner threatening to hurt themselves if you leave is a serious warning sign, and it is not your fault.",
        _SAFE_QUESTION,
    ),
    lexicon.THIRD_PARTY: (
        "These lines can also help you help someone you're worried about.",
        "Do you know if they are safe right now?",
    ),
    lexicon.HARM_OTHERS: (
        "It sounds like things feel unbearable right now, and I'm glad you said it here.",
        "Are you or anyone else in danger right now?",
    ),
}
"""One validating sentence and one direct question per category."""
_DEFAULT_WORDS = ("I'm really glad you wrote.", _SAFE_QUESTION)


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def crisis_reply(detection: Detection) -> Reply:
    """The reply for a crisis or imminent detection, built from ``resources_for`` in that order.

    Resources come first (911 first when imminent or when the danger comes from someone else,
    after ``PREVIEW_LINE`` so that a lock-screen preview gives nothing away), then one validating
    sentence, the bot's limits said plainly, one direct question, and the line for people outside the US.
    """
    others = detection.track is Track.OTHERS
    shown = resources_for(detection)
    parts = []
    for resource in shown:
        if resource == "emergency":
            parts.append(_sentence(resources.EMERGENCY))
        elif resource == "dv_hotline":
            parts.append(f"You can reach {resources.DV_HOTLINE}, when it is safe for you.")
        elif resource == "lifeline" and others:
            parts.append(f"For thoughts of suicide, {resources.LIFELINE}.")
        elif resource == "lifeline":
            parts.append(f"Please {resources.LIFELINE}: you can talk to a trained counselor right now.")
        elif resource == "lifeline_es":
            parts.append(_sentence(resources.LIFELINE_ES))
    validation, question = _WORDS.get(detection.category, _DEFAULT_WORDS)
    parts += [validation, resources.AUTOMATED, question]
    text = " ".join(parts)
    if shown[0] == "emergency":
        text = f"{PREVIEW_LINE}\n{text}"
    if "outside_us" in shown:
        text += f"\n\n{resources.OUTSIDE_US}"
    return Reply(text, kind=ReplyKind.CRISIS)


def concern_reply(detection: Detection) -> Reply:
    """A gentle check-in for an ambiguous message: no alarm, one direct question, help offered without pressure."""
    if detection.track is Track.OTHERS:
        text = (
            f"That sounds frightening. {_SAFE_QUESTION} If you ever want to talk it through, you can reach "
            f"{resources.DV_HOTLINE}, when it is safe for you; {resources.EMERGENCY}."
        )
    else:
        text = (
            "That sounds really heavy. Sometimes when people feel this way, they have thoughts of ending their life. "
            f"Is that happening for you? If it ever is, you can {resources.LIFELINE}, any time "
            f"({resources.ELSEWHERE})."
        )
    return Reply(text, kind=ReplyKind.CHECK_IN)


def reminder(track: Track) -> Reply:
    """The short line that keeps help in view on every turn while a crisis state lasts."""
    if track is Track.OTHERS:
        lead = (
            f"{PREVIEW_LINE}\n{_sentence(resources.EMERGENCY)} "
            f"You can reach {resources.DV_HOTLINE}, when it is safe for you. "
            "For thoughts of suicide, call or text 988."
        )
    else:
        lead = f"If you need it, you can {resources.LIFELINE}, any time ({resources.ELSEWHERE})."
    return Reply(f"{lead} {_SAFE_QUESTION} You can tell me “I'm safe” when you are.", kind=ReplyKind.CRISIS)


SAFE_ACK = Reply(
    f"I'm glad you're safe. If that changes, you can {resources.LIFELINE}, any time, or {resources.EMERGENCY}.",
    kind=ReplyKind.CHECK_IN,
)
"""The reply when a person in a crisis state says they are safe."""

_SAFE_CLAUSE = re.compile(
    r"(?:(?:yes|yeah|yep|yup|no|nope|ok|okay|honestly|thanks|thank you|do not worry|i promise|really|well) )*"
    r"(?:i am|i feel|i am feeling|feeling|we are|i think i am|i am in a|i am at a|i am somewhere|the kids and i are"
    r"|we are all|we are both|i am home and|i am at home and|i am back home and|i am now)? ?"
    r"(?:really |totally |completely |perfectly |definitely |actually )?"
    r"(?:safe|safe place|okay now|ok now|alright now|fine now|all right now|safe and (?:okay|ok|sound|well)"
    r"|out of danger|in a safe place)"
    r"(?: now| right now| for now| at the moment| here| at home| again| thanks| thank you| i promise| honestly"
    r"| tonight| with (?:a friend|my family|my sister|my mom|family|friends))*"
)
_FILLER = re.compile(r"(?:yes|yeah|yep|no|nope|ok|okay|thanks|thank you|i promise|honestly|really|well| )+")
_NEGATIONS = frozenset({"not", "never", "nor", "hardly", "barely", "without"})


def _clauses(text: str | Screened) -> tuple[tuple[str, bool], ...] | None:
    """The message's clauses as the screen read them, each with whether it was asked as a question.

    ``None`` when any word negates ("not", "never"): "I'm not safe" must never count as safe.
    """
    screened = _read(text)
    if _NEGATIONS.intersection(screened.text.split()):
        return None
    return screened.clauses


def says_safe(text: str | Screened) -> bool:
    """Whether the message says plainly that the person is safe ("I'm safe now"); "I'm not safe" never does."""
    return any(not question and _SAFE_CLAUSE.fullmatch(clause) for clause, question in _clauses(text) or ())


def only_says_safe(text: str | Screened) -> bool:
    """Whether the message says nothing but that the person is safe, so no other answer is owed."""
    return says_safe(text) and all(
        _SAFE_CLAUSE.fullmatch(clause) or _FILLER.fullmatch(clause) for clause, _ in _clauses(text) or ()
    )


@lru_cache(maxsize=1024)
def describes_violence(text: str) -> bool:
    """Whether a passage describes violence or self-harm; such passages are not quoted in crisis turns."""
    return lexicon.VIOLENCE.search(text) is not None
