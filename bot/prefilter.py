"""Which screen rules could fire on a text: found exactly, from the strings every match of a rule needs.

Running every pattern over a long message cost more than the rest of the screen. Each rule's pattern is
read once (through the parser behind ``re``) for what any match of it must contain, in the manner of
RE2's prefilter; one pass of a trie-shaped regex then finds which of those strings a text holds, and a
rule is tried only if the text meets its requirement. Anything the reading cannot reason about needs
nothing, so a rule is skipped only when it cannot match.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from re import _constants as sre  # the parser behind `re`, public in all but name since Python 3.11
from re import _parser as sre_parse
from typing import Any

from bot.lexicon import Rule

log = logging.getLogger("unhooked.safety")

_MIN_LITERAL = 3
"""Strings shorter than this are in nearly every text: a requirement made of one needs nothing."""
_MAX_LITERAL = 40
"""Longer strings are looked for by their start alone (a text holding a string holds its start)."""
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_SHARED_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE
"""The flags that mean the same to ``regex`` (which compiles the rules, ``bot.bounded``) and to ``re``'s parser."""


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
    for string in sorted({string[:_MAX_LITERAL] for string in strings}, key=len):
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

    In the manner of RE2's prefilter: a part's exact set of strings is carried through concatenations
    and alternations while small ("hit me", "punched me"), and every mandatory part counts. ``None``
    when nothing is known.
    """
    try:
        tree = sre_parse.parse(source, flags)
    except Exception:  # a prefilter must never stop the screen
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    return _requirement_of(_sequence(tree.data))


def _strings_of(needs: Requirement) -> set[str]:
    if needs is None:
        return set()
    if isinstance(needs, str):
        return {needs}
    return set().union(*(_strings_of(part) for part in needs[1]))


def _key(needs: Requirement) -> frozenset[str] | None:
    """Strings of which a text meeting ``needs`` holds one, from its most selective part; ``None`` if none."""
    if needs is None:
        return None
    if isinstance(needs, str):
        return frozenset({needs})
    kind, parts = needs
    keys = [_key(part) for part in parts]
    if kind == "any":
        return None if None in keys else frozenset().union(*keys)  # type: ignore[arg-type]
    known = [key for key in keys if key is not None]
    return max(known, key=lambda key: (min(map(len, key)), -len(key)), default=None)


@dataclasses.dataclass(frozen=True, slots=True)
class _Check:
    """A requirement ready to test against the set of needed strings a text holds."""

    every: bool
    strings: frozenset[str]
    parts: tuple[_Check, ...]

    @classmethod
    def of(cls, needs: str | tuple[str, tuple[Requirement, ...]]) -> _Check:
        every, parts = ("any", (needs,)) if isinstance(needs, str) else needs
        return cls(
            every == "all",
            frozenset(part for part in parts if isinstance(part, str)),
            tuple(cls.of(part) for part in parts if not isinstance(part, str)),  # type: ignore[arg-type]
        )

    def met(self, present: set[str]) -> bool:
        if self.every:
            return self.strings <= present and all(part.met(present) for part in self.parts)
        return not self.strings.isdisjoint(present) or any(part.met(present) for part in self.parts)


def _trie(strings: Iterable[str]) -> str:
    """A regex that matches, where it is tried, the longest of ``strings`` starting there.

    Siblings start with different characters and a string that goes on is tried before the one that
    ends (a greedy ``?``), so backtracking can only shorten the match to another of the strings.
    """
    root: dict[str, dict] = {}
    for string in strings:
        node = root
        for character in string:
            node = node.setdefault(character, {})
        node[""] = {}

    def pattern(node: dict[str, dict]) -> str:
        branches = [re.escape(character) + pattern(child) for character, child in sorted(node.items()) if character]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body

    return pattern(root)


@dataclasses.dataclass(frozen=True)
class Finder:
    """Finds, in one pass in C, every one of a fixed set of strings that occurs in a text."""

    longest: re.Pattern[str] | None
    starting: dict[str, tuple[str, ...]]
    """The longest string found at a position -> every string of the set it starts with."""

    @classmethod
    def of(cls, strings: Iterable[str]) -> Finder:
        kept = {string for string in strings if string}
        if not kept:
            return cls(None, {})
        starting = {
            string: tuple(string[:end] for end in range(1, len(string) + 1) if string[:end] in kept) for string in kept
        }
        return cls(re.compile(f"(?=({_trie(kept)}))"), starting)

    def present(self, text: str) -> set[str]:
        """The strings of the set that occur in ``text``, overlapping ones included."""
        found: set[str] = set()
        if self.longest is not None:
            for longest in self.longest.findall(text):
                found.update(self.starting[longest])
        return found


@dataclasses.dataclass(frozen=True)
class Prefilter:
    """The rules of one tuple that a screened text could fire.

    Each rule is filed under its requirement's most selective part (``_key``); the strings a text holds
    pick the rules filed under one of them, and each of those is kept if the text meets its whole
    requirement. Rules whose requirement is unknown are always kept.
    """

    finder: Finder
    always: frozenset[int]
    filed: dict[str, tuple[int, ...]]
    checks: tuple[_Check | None, ...]

    @classmethod
    def of(cls, rules: tuple[Rule, ...]) -> Prefilter:
        requirements = [requirement(rule.pattern.pattern, rule.pattern.flags & _SHARED_FLAGS) for rule in rules]
        always: set[int] = set()
        filed: dict[str, list[int]] = {}
        for position, needs in enumerate(requirements):
            key = _key(needs)
            if key is None:
                always.add(position)
            for string in key or ():
                filed.setdefault(string, []).append(position)
        return cls(
            Finder.of(set().union(*map(_strings_of, requirements))),
            frozenset(always),
            {string: tuple(positions) for string, positions in filed.items()},
            tuple(None if needs is None else _Check.of(needs) for needs in requirements),
        )

    def candidates(self, screened: str) -> list[int]:
        """The positions, in order, of the rules that could match ``screened``."""
        present = self.finder.present(screened)
        chosen = set(self.always)
        for string in present & self.filed.keys():
            chosen.update(self.filed[string])
        checks = self.checks
        return [at for at in sorted(chosen) if checks[at] is None or checks[at].met(present)]  # type: ignore[union-attr]


@lru_cache(maxsize=16)
def _built(rules: tuple[Rule, ...]) -> Prefilter:
    return Prefilter.of(rules)


_BY_IDENTITY: dict[int, tuple[tuple[Rule, ...], Prefilter]] = {}
_MAX_BY_IDENTITY = 16


def prefilter_of(rules: tuple[Rule, ...]) -> Prefilter:
    """The prefilter of a rule tuple, built once per distinct tuple; a tuple seen before is found without hashing it."""
    found = _BY_IDENTITY.get(id(rules))
    if found is not None and found[0] is rules:
        return found[1]
    try:
        made = _built(rules)
    except Exception:  # a prefilter must never stop the screen: then every rule is tried
        log.exception("could not build the crisis screen's prefilter; every pattern runs on every message")
        made = Prefilter(Finder(None, {}), frozenset(range(len(rules))), {}, (None,) * len(rules))
    if len(_BY_IDENTITY) >= _MAX_BY_IDENTITY:
        _BY_IDENTITY.pop(next(iter(_BY_IDENTITY)))
    _BY_IDENTITY[id(rules)] = (rules, made)  # the tuple is kept, so its id is not reused while cached
    return made
