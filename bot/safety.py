"""The crisis screen: runs first on every message, and the replies for each track and level.

The lexicon floor lives in code (``bot/lexicon.py``) so that it works when no content file loads;
moderators can add rules in ``safety/patterns.yml``, never remove one.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from re import _constants as sre  # the parser behind `re`, public in all but name since Python 3.11
from re import _parser as sre_parse
from typing import Any

from bot import lexicon, resources
from bot.lexicon import CATEGORIES, FLOOR, TRACKS, Rule
from bot.models import Detection, Level, Reply, ReplyKind, Track
from bot.screen import BOUNDARY, screen_text

SCREEN_FAILED = Detection(Level.CRISIS, "screen_failed", "screen.error")
"""Used when the screen itself fails: crisis resources are the safe answer."""

MAX_PATTERN_CHARS = 1000
"""A moderator's pattern longer than this is refused."""


_MIN_LITERAL = 3
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def _needs(items: Any) -> frozenset[str] | None:
    """Strings of which every match of this parsed sequence contains at least one; ``None`` if unknown."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def close_run() -> None:
        if len(run) >= _MIN_LITERAL:
            candidates.append(frozenset({"".join(run)}))
        run.clear()

    for op, argument in items:
        if op is sre.LITERAL:
            run.append(chr(argument))
            continue
        close_run()
        found: frozenset[str] | None = None
        if op is sre.SUBPATTERN:
            _, added_flags, _, inner = argument
            found = None if added_flags & re.IGNORECASE else _needs(inner)
        elif op is sre.BRANCH:
            parts = [_needs(branch) for branch in argument[1]]
            found = None if any(part is None for part in parts) else frozenset().union(*parts)  # type: ignore[arg-type]
        elif op in _REPEATS and argument[0] >= 1:
            found = _needs(argument[2])
        elif op is sre.ATOMIC_GROUP:
            found = _needs(argument)
        if found:
            candidates.append(found)
    close_run()
    if not candidates:
        return None
    # The most selective: the longest shortest string (spaces do not count), then the fewest strings.
    return max(candidates, key=lambda strings: (min(len(string.strip()) for string in strings), -len(strings)))


@lru_cache(maxsize=4096)
def literals_needed(source: str) -> frozenset[str] | None:
    """Literal strings of which any match of the pattern ``source`` contains at least one, or ``None``.

    Derived from the parsed pattern, so it is exact about what a regex must contain: mandatory
    literal runs, every branch of an alternation, repeats of at least one. Anything it cannot
    reason about (case-insensitive flags, an unparsable pattern) gives ``None``, and the pattern
    is then always tried. This lets the screen skip most patterns on a long message without ever
    skipping one that could match.
    """
    try:
        tree = sre_parse.parse(source)
    except Exception:  # a prefilter must never stop the screen
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    return _needs(tree.data)


Requirement = None | str | tuple[str, tuple["Requirement", ...]]
"""What every match needs in the text: ``None`` (nothing known), a string it contains, or ``("all" | "any", parts)``."""

_MAX_EXACT = 16
"""The most strings a part's exact set may hold; a larger cross product is kept as ``all`` of its parts instead."""


def _all_of(parts: list[Requirement]) -> Requirement:
    """A requirement met when every part is (parts that need nothing drop out)."""
    kept: list[Requirement] = []
    for part in parts:
        if isinstance(part, tuple) and part[0] == "all":
            kept.extend(part[1])
        elif part is not None:
            kept.append(part)
    kept = list(dict.fromkeys(kept))
    return None if not kept else kept[0] if len(kept) == 1 else ("all", tuple(kept))


def _any_of(parts: list[Requirement]) -> Requirement:
    """A requirement met when one part is (a part that needs nothing makes the whole need nothing)."""
    if not parts or any(part is None for part in parts):
        return None
    kept: list[Requirement] = []
    for part in parts:
        kept.extend(part[1] if isinstance(part, tuple) and part[0] == "any" else [part])
    kept = list(dict.fromkeys(kept))
    return kept[0] if len(kept) == 1 else ("any", tuple(kept))


def _contains_one_of(strings: frozenset[str]) -> Requirement:
    """That the text contains one of ``strings``; ``None`` if one is shorter than ``_MIN_LITERAL``."""
    kept: list[str] = []
    for string in sorted(strings, key=len):
        if not any(shorter in string for shorter in kept):
            kept.append(string)
    if any(len(string) < _MIN_LITERAL for string in kept):
        return None
    return _any_of(list(kept))


_Info = tuple[frozenset[str] | None, Requirement]
"""A parsed part: the exact set of strings it can match, when small and known, else what its matches need."""
_EMPTY: _Info = (frozenset({""}), None)


def _requirement_of(info: _Info) -> Requirement:
    exact, requirement = info
    return requirement if exact is None else _contains_one_of(exact)


def _either(infos: list[_Info]) -> _Info:
    """Alternatives: the union of their exact sets while small, else one of their requirements."""
    if all(exact is not None for exact, _ in infos):
        union = frozenset().union(*(exact for exact, _ in infos if exact is not None))
        if len(union) <= _MAX_EXACT:
            return union, None
    return None, _any_of([_requirement_of(info) for info in infos])


def _sequence(items: Any) -> _Info:
    """Parts in a row: runs of exact parts as their cross products while small, and all that the row needs."""
    needs: list[Requirement] = []
    run = frozenset({""})
    for op, argument in items:
        exact, required = _item(op, argument)
        if exact is not None and len(run) * len(exact) <= _MAX_EXACT:
            run = frozenset(head + tail for head in run for tail in exact)
            continue
        needs.append(_contains_one_of(run))
        if exact is None:
            needs.append(required)
        run = exact or frozenset({""})
    if not needs:
        return run, None
    return None, _all_of([*needs, _contains_one_of(run)])


def _item(op: Any, argument: Any) -> _Info:
    """One parsed item; anything not reasoned about needs nothing, so it can only make the prefilter try more."""
    if op is sre.LITERAL:
        return frozenset({chr(argument)}), None
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return _EMPTY  # zero-width: the matched string holds nothing of it
    if op is sre.SUBPATTERN:
        _, added_flags, _, inner = argument
        return (None, None) if added_flags & re.IGNORECASE else _sequence(inner)
    if op is sre.ATOMIC_GROUP:
        return _sequence(argument)
    if op is sre.BRANCH:
        return _either([_sequence(branch) for branch in argument[1]])
    if op in _REPEATS:
        least, most, inner = argument
        if (least, most) == (1, 1):
            return _sequence(inner)
        if (least, most) == (0, 1):
            return _either([_sequence(inner), _EMPTY])
        return (None, _requirement_of(_sequence(inner))) if least >= 1 else (None, None)
    if op is sre.IN and all(kind is sre.LITERAL for kind, _ in argument):
        return frozenset(chr(code) for _, code in argument), None
    return None, None


@lru_cache(maxsize=4096)
def requirement(source: str, flags: int = 0) -> Requirement:
    """What any match of the pattern ``source`` (compiled with ``flags``) needs, as strings combined by all and any.

    Finer than ``literals_needed``, in the manner of RE2's prefilter: a part's exact set of strings is
    carried through concatenations and alternations while small ("hit me", "punched me"), and every
    mandatory part counts, not only the most selective. ``None`` when nothing is known.
    """
    try:
        tree = sre_parse.parse(source, flags)
    except Exception:  # a prefilter must never stop the screen
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    return _requirement_of(_sequence(tree.data))


def _needed_strings(needs: Requirement) -> set[str]:
    if needs is None:
        return set()
    if isinstance(needs, str):
        return {needs}
    return set().union(*(_needed_strings(part) for part in needs[1]))


@dataclasses.dataclass(frozen=True, slots=True)
class _Check:
    """A requirement ready to test: all (or any) of its strings and parts, each string with its rarest piece."""

    every: bool
    strings: tuple[tuple[str, str], ...]
    pieces: frozenset[str]
    parts: tuple[_Check, ...]

    @classmethod
    def of(cls, needs: Requirement, rarest: dict[str, str]) -> _Check | None:
        """The check of ``needs`` (``None`` when it needs nothing), given each string's rarest piece."""
        if needs is None:
            return None
        every, parts = ("any", (needs,)) if isinstance(needs, str) else needs
        strings = tuple((rarest[part], part) for part in parts if isinstance(part, str))
        checks = tuple(cls.of(part, rarest) for part in parts if not isinstance(part, str))
        return cls(every == "all", strings, frozenset(piece for piece, _ in strings), checks)  # type: ignore[arg-type]

    def met(self, pieces: set[str], screened: str) -> bool:
        """Whether ``screened``, whose three-character pieces are ``pieces``, meets the requirement."""
        if self.every:
            return all(piece in pieces and string in screened for piece, string in self.strings) and all(
                part.met(pieces, screened) for part in self.parts
            )
        if not self.pieces.isdisjoint(pieces) and any(
            piece in pieces and string in screened for piece, string in self.strings
        ):
            return True
        return any(part.met(pieces, screened) for part in self.parts)


_PREFIX = 3
"""Literals are found by their first characters; every literal ``literals_needed`` gives is at least this long."""


@dataclasses.dataclass(frozen=True)
class _Prefilter:
    """Which rules a screened text could fire, found from the needed literals present in it.

    Checking each rule's literals one by one cost more than running every pattern; instead each distinct
    literal is filed under its first three characters, a text's three-character pieces pick the few
    literals worth looking for, and the rules needing a literal found are the ones left (with the rules
    that need nothing known, always). Each one left is tried only if the text meets its whole ``requirement``,
    whose strings are looked for only when their rarest three characters are among the text's pieces.
    """

    always: frozenset[int]
    by_prefix: dict[str, tuple[str, ...]]
    rules_needing: dict[str, tuple[int, ...]]
    checks: tuple[_Check | None, ...]

    @classmethod
    def of(cls, rules: tuple[Rule, ...]) -> _Prefilter:
        always: set[int] = set()
        rules_needing: dict[str, list[int]] = {}
        for position, rule in enumerate(rules):
            needed = None if rule.pattern.flags & re.IGNORECASE else literals_needed(rule.pattern.pattern)
            if needed is None or any(len(literal) < _PREFIX for literal in needed):
                always.add(position)
                continue
            for literal in needed:
                rules_needing.setdefault(literal, []).append(position)
        by_prefix: dict[str, list[str]] = {}
        for literal in rules_needing:
            by_prefix.setdefault(literal[:_PREFIX], []).append(literal)
        requirements = tuple(requirement(rule.pattern.pattern, rule.pattern.flags) for rule in rules)
        strings = set().union(*(_needed_strings(needs) for needs in requirements))
        pieces = [{string[at : at + _PREFIX] for at in range(len(string) - _PREFIX + 1)} for string in strings]
        counts = Counter(piece for found in pieces for piece in found)
        rarest = {
            string: min(found, key=lambda piece: (counts[piece], piece))
            for string, found in zip(strings, pieces, strict=True)
        }
        return cls(
            frozenset(always),
            {prefix: tuple(found) for prefix, found in by_prefix.items()},
            {literal: tuple(found) for literal, found in rules_needing.items()},
            tuple(_Check.of(needs, rarest) for needs in requirements),
        )

    def candidates(self, screened: str) -> list[int]:
        """The positions, in order, of the rules that could match ``screened``."""
        chosen = set(self.always)
        pieces = {screened[at : at + _PREFIX] for at in range(len(screened) - _PREFIX + 1)}
        for prefix in pieces & self.by_prefix.keys():
            for literal in self.by_prefix[prefix]:
                if literal in screened:
                    chosen.update(self.rules_needing[literal])
        checks = self.checks
        return [at for at in sorted(chosen) if checks[at] is None or checks[at].met(pieces, screened)]


_PREFILTERS: dict[int, tuple[tuple[Rule, ...], _Prefilter]] = {}
_MAX_PREFILTERS = 16


def _prefilter_of(rules: tuple[Rule, ...]) -> _Prefilter:
    """The prefilter of a rule tuple, built once per tuple (the floor, and each catalogue's rules)."""
    found = _PREFILTERS.get(id(rules))
    if found is not None and found[0] is rules:
        return found[1]
    made = _Prefilter.of(rules)
    if len(_PREFILTERS) >= _MAX_PREFILTERS:
        _PREFILTERS.pop(next(iter(_PREFILTERS)))
    _PREFILTERS[id(rules)] = (rules, made)  # the tuple is kept, so its id is not reused while cached
    return made


def fired(text: str, rules: Iterable[Rule] = FLOOR, *, prefilter: bool = True) -> list[Rule]:
    """Every rule that fires on ``text``, in rule order (``prefilter`` only skips rules that cannot match)."""
    screened = screen_text(text)
    if not screened:
        return []
    rules = rules if isinstance(rules, tuple) else tuple(rules)
    if not prefilter:
        return [rule for rule in rules if rule.pattern.search(screened)]
    return [rules[at] for at in _prefilter_of(rules).candidates(screened) if rules[at].pattern.search(screened)]


def detect(text: str, rules: Iterable[Rule] = FLOOR) -> Detection | None:
    """The most serious detection for ``text``, or ``None``.

    The highest level wins and, at the same level, the rule listed first. When a rule about
    danger from others fires at crisis level or above, the reply takes that track, whose
    resources include 988 as well, so both kinds of help are shown.
    """
    found = fired(text, rules)
    if not found:
        return None
    best = max(found, key=lambda rule: rule.level.rank)  # max keeps the first of equals
    track = best.track
    if best.level.rank >= Level.CRISIS.rank and any(
        rule.track is Track.OTHERS and rule.level.rank >= Level.CRISIS.rank for rule in found
    ):
        track = Track.OTHERS
    return Detection(best.level, best.category, best.id, track, best.window_level)


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
    return (*shown, "lifeline", "outside_us")


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

    Resources come first (911 first when imminent or when the danger comes from someone else),
    then one validating sentence, the bot's limits said plainly, one direct question, and the
    line for people outside the US.
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
    validation, question = _WORDS.get(detection.category, _DEFAULT_WORDS)
    parts += [validation, resources.AUTOMATED, question]
    text = " ".join(parts)
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
            f"{_sentence(resources.EMERGENCY)} You can reach {resources.DV_HOTLINE}, when it is safe for you. "
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


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def _clauses(text: str) -> list[tuple[str, bool]] | None:
    """The message's clauses as the screen sees them, each with whether it was asked as a question.

    ``None`` when any word negates ("not", "never"): "I'm not safe" must never count as safe.
    """
    if _NEGATIONS.intersection(screen_text(text).split()):
        return None
    found = []
    for sentence in _SENTENCE.findall(text):
        question = sentence.rstrip().endswith("?")
        found += [(clause.strip(), question) for clause in screen_text(sentence).split(BOUNDARY) if clause.strip()]
    return found


def says_safe(text: str) -> bool:
    """Whether the message says plainly that the person is safe ("I'm safe now"); "I'm not safe" never does."""
    return any(not question and _SAFE_CLAUSE.fullmatch(clause) for clause, question in _clauses(text) or ())


def only_says_safe(text: str) -> bool:
    """Whether the message says nothing but that the person is safe, so no other answer is owed."""
    return says_safe(text) and all(
        _SAFE_CLAUSE.fullmatch(clause) or _FILLER.fullmatch(clause) for clause, _ in _clauses(text) or ()
    )


@lru_cache(maxsize=1024)
def describes_violence(text: str) -> bool:
    """Whether a passage describes violence or self-harm; such passages are not quoted in crisis turns."""
    return lexicon.VIOLENCE.search(text) is not None


class RuleError(ValueError):
    """A moderator's rule is wrong; ``field`` names the YAML field to point at."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def compile_rule(
    rule_id: str, category: str, level: str, *, pattern: str | None = None, phrase: str | None = None
) -> Rule:
    """A moderator's rule from ``safety/patterns.yml``; raises ``RuleError`` with a sentence on any mistake."""
    if category not in CATEGORIES:
        raise RuleError("category", f"unknown category {category!r}; use one of: {', '.join(CATEGORIES)}")
    try:
        chosen = Level(level)
    except ValueError:
        levels = ", ".join(item.value for item in Level)
        raise RuleError("level", f"unknown level {level!r}; use one of: {levels}") from None
    field = "pattern" if pattern is not None else "phrase"
    if (pattern is None) == (phrase is None):
        raise RuleError(field, "give exactly one of `phrase:` (plain words) or `pattern:` (a regular expression)")
    if phrase is not None:
        screened = screen_text(phrase)
        if not screened:
            raise RuleError(field, "the phrase has no words left after normalisation")
        source = r"\b" + re.escape(screened).replace(r"\ ", " ") + r"\b"
    else:
        source = pattern or ""
        if len(source) > MAX_PATTERN_CHARS:
            raise RuleError(field, f"the pattern is {len(source)} characters long; keep it under {MAX_PATTERN_CHARS}")
    try:
        compiled = re.compile(source)
    except re.error as error:
        message = f"the pattern is not a valid regular expression: {error.msg} at position {error.pos}"
        raise RuleError(field, message) from None
    if compiled.search("") is not None:
        raise RuleError(field, "the pattern matches an empty message, so it would fire on every message")
    return Rule(rule_id, category, chosen, compiled, TRACKS[category])


def pattern_warnings(pattern: str) -> list[str]:
    """Things in a moderator's pattern that can never match the normalised text."""
    warnings = []
    if "'" in pattern or "\u2019" in pattern:
        warnings.append(
            "the pattern contains an apostrophe, but the screen removes apostrophes and expands contractions "
            '("don\'t" is matched as "do not", "I\'m" as "i am"); write the expanded words'
        )
    if re.search(r"[A-Z]", re.sub(r"\\.", "", pattern)):
        warnings.append("the pattern contains capital letters, but the screen lowercases everything first")
    return warnings
