r"""The engine every crisis-screen rule runs on: regular expressions with a time bound, and the check before them.

Rules are written in the syntax of Python's ``re`` (parsed by its parser, which the prefilter reads too) and
run on the ``regex`` package, which matches the same language the same way and stops a search after
``BOUND`` seconds of CPU time. ``check`` refuses, before any of that, a line whose shape can make a
backtracking engine try millions of ways on one long message (``backtracking``): a repeated group whose
inside repeats too with nothing to mark where one repetition ends (``(?:\w+\s?)*``), or two repeats in
a row that match the same letters (``\w+\s?\w+``). The bound is the second line, for what the check misses.
"""

from __future__ import annotations

import re
import string
from re import _constants as sre  # the parser behind `re`, public in all but name since Python 3.11
from re import _parser as sre_parse
from typing import Any

import regex

BOUND = 0.1
"""CPU seconds one rule may search one message for; past it the search stops and counts as a match."""

Pattern = regex.Pattern
"""A compiled rule pattern (the ``regex`` package's, which takes ``timeout=``)."""

_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)
"""Repeats that backtrack (a possessive repeat never gives back what it took)."""
_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)
_FEW = 4
"""A group repeated at most this many times may hold parts of a few lengths (the floor's <ADV> does): a few ways."""
_SAMPLE = frozenset(string.ascii_letters + string.digits + string.punctuation + " \t\n_\u00a0éжß中")
"""Characters standing for every other: a character set is known by which of these it holds."""
_CATEGORIES = {
    name: frozenset(char for char in _SAMPLE if re.fullmatch(expression, char))
    for name, expression in (
        (sre.CATEGORY_DIGIT, r"\d"),
        (sre.CATEGORY_NOT_DIGIT, r"\D"),
        (sre.CATEGORY_SPACE, r"\s"),
        (sre.CATEGORY_NOT_SPACE, r"\S"),
        (sre.CATEGORY_WORD, r"\w"),
        (sre.CATEGORY_NOT_WORD, r"\W"),
    )
}

NESTED = (
    "this line can hold up the crisis screen, and so every person's reply, for seconds on one long message: "
    "a repeated group such as (...)*, (...)+ or (...){0,5} holds a part that repeats too (+, * or ?), and "
    "nothing marks where one repetition ends, so the screen may try millions of ways to split the words "
    "between them. End each repetition with something its inside cannot match, as the floor's <G3> ends "
    "each word with a space: (?:[^ |]+ ){0,3}"
)
ADJACENT = (
    "this line can hold up the crisis screen, and so every person's reply, on a long message: two repeats in "
    "a row (such as \\w+\\s?\\w+ or .*.*) can match the same letters, so the screen tries every way of sharing "
    "the message between them. Put something between them that neither can match, such as a space: \\w+ \\w+"
)


def parse(source: str) -> Any:
    """The parse of ``source`` by ``re``'s parser; raises ``re.error`` (with ``msg`` and ``pos``) if it is invalid."""
    return sre_parse.parse(source)


def compile_pattern(source: str) -> Pattern:
    """``source`` compiled for the screen; raises ``re.error`` if ``re`` would not accept it."""
    parse(source)
    try:
        return regex.compile(source)
    except regex.error as error:  # nothing ``re`` accepts should get here; said the same way if it does
        raise re.error(error.msg, source, error.pos) from None


def search(pattern: Pattern, text: str) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``text``; ``None`` if it ran out of its ``BOUND``.

    The search keeps the interpreter's lock (``concurrent=False``) until it ends: one that lets go of it (as
    ``regex`` does by default) waits for the lock again while another thread runs, and its clock runs on, so a
    search of a millisecond on the crisis screen's thread ran out of the bound while the event loop was busy
    and counted as a match (a false crisis reply under load, seen in the 5,000-message test).
    """
    try:
        return pattern.search(text, timeout=BOUND, concurrent=False) is not None
    except TimeoutError:
        return None


def backtracking(source: str) -> str | None:
    """Why ``source`` can backtrack catastrophically (``NESTED`` or ``ADJACENT``), or ``None`` if it cannot."""
    return _sequence(list(parse(source).data))


def _sequence(items: list[tuple[Any, Any]]) -> str | None:
    """The problem of a row of items: in one of them, or between two repeats with only optional items between."""
    open_repeats: list[frozenset[str]] = []
    for op, argument in items:
        found = _item(op, argument)
        if found is not None:
            return found
        least = _width([(op, argument)])[0]
        if op in _REPEATS and argument[1] == sre.MAXREPEAT:
            chars = _chars([(op, argument)])
            if any(chars & before for before in open_repeats):
                return ADJACENT
            open_repeats.append(chars)
        elif least > 0:
            open_repeats.clear()  # a part every match needs stands between this repeat and the next
    return None


def _item(op: Any, argument: Any) -> str | None:
    """The problem inside one item, if any."""
    if op in _REPEATS:
        _, most, inner = argument
        if most > 1 and _ambiguous(list(inner), most):
            return NESTED
        return _sequence(list(inner))
    if op is sre.SUBPATTERN:
        return _sequence(list(argument[3]))
    if op is sre.ATOMIC_GROUP or op is sre.POSSESSIVE_REPEAT:
        return _sequence(list(argument if op is sre.ATOMIC_GROUP else argument[2]))
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return _sequence(list(argument[1]))
    if op is sre.BRANCH:
        return next((found for branch in argument[1] if (found := _sequence(list(branch)))), None)
    return None


def _ambiguous(body: list[tuple[Any, Any]], times: int) -> bool:
    """Whether a repetition of ``body`` (``times`` at most) can end in more than one place: no delimiter ends it."""
    varying = _varying(body, finite=times > _FEW)  # a few repetitions of a few lengths make a few ways
    if not varying:
        return False
    while len(body) == 1 and body[0][0] is sre.SUBPATTERN:
        body = list(body[0][1][3])
    consuming = [(op, argument) for op, argument in body if op not in _ZERO_WIDTH]
    ends = [consuming[0], consuming[-1]] if consuming else []
    return not any(_width([end])[0] > 0 and not (_chars([end]) & varying) for end in ends)


def _varying(items: list[tuple[Any, Any]], *, finite: bool) -> frozenset[str]:
    """What parts of varying length take: repeats without limit; with ``finite``, ``?``, ``{m,n}`` and "x|xx" too."""
    found: set[str] = set()
    for op, argument in items:
        if op in _REPEATS and argument[0] != argument[1] and (finite or argument[1] == sre.MAXREPEAT):
            found |= _chars([(op, argument)])
        elif op in _REPEATS or op is sre.ATOMIC_GROUP or op is sre.POSSESSIVE_REPEAT:
            found |= _varying(list(argument if op is sre.ATOMIC_GROUP else argument[2]), finite=finite)
        elif op is sre.SUBPATTERN:
            found |= _varying(list(argument[3]), finite=finite)
        elif op is sre.BRANCH and finite and _choice_varies(argument[1]):
            found |= _chars([(op, argument)])
        elif op is sre.BRANCH:
            for branch in argument[1]:
                found |= _varying(list(branch), finite=finite)
    return frozenset(found)


def _choice_varies(branches: list[Any]) -> bool:
    """Whether alternatives of different lengths can be taken on the same text ("x|xx", which ``re`` reads x(?:|x)).

    Alternatives that start differently ("really |so ") are chosen by their first letter, so they do not vary.
    """
    if len({_width(list(branch)) for branch in branches}) < 2:
        return False
    starts = [_first(list(branch)) for branch in branches]
    if any(_width(list(branch))[0] == 0 for branch in branches):
        return True
    return any(one & other for at, one in enumerate(starts) for other in starts[at + 1 :])


def _first(items: list[tuple[Any, Any]]) -> frozenset[str]:
    """The characters a match of ``items`` can start with."""
    found: set[str] = set()
    for op, argument in items:
        if op in _ZERO_WIDTH:
            continue
        if op in (*_REPEATS, sre.POSSESSIVE_REPEAT):
            found |= _first(list(argument[2]))
        elif op is sre.SUBPATTERN:
            found |= _first(list(argument[3]))
        elif op is sre.BRANCH:
            for branch in argument[1]:
                found |= _first(list(branch))
        else:
            found |= _chars([(op, argument)])
        if _width([(op, argument)])[0] > 0:
            break
    return frozenset(found)


def _chars(items: list[tuple[Any, Any]]) -> frozenset[str]:
    """The characters (of ``_SAMPLE``) that ``items`` can take from the text; lookarounds take none."""
    found: set[str] = set()
    for op, argument in items:
        if op is sre.LITERAL:
            found.add(chr(argument))
        elif op is sre.NOT_LITERAL:
            found |= _SAMPLE - {chr(argument)}
        elif op is sre.IN:
            found |= {char for char in _SAMPLE if _in(argument, char)}
        elif op in (*_REPEATS, sre.POSSESSIVE_REPEAT):
            found |= _chars(list(argument[2]))
        elif op is sre.SUBPATTERN:
            found |= _chars(list(argument[3]))
        elif op is sre.ATOMIC_GROUP:
            found |= _chars(list(argument))
        elif op is sre.BRANCH:
            for branch in argument[1]:
                found |= _chars(list(branch))
        elif op not in _ZERO_WIDTH:
            found |= _SAMPLE  # any character, a back-reference, or what is not reasoned about: anything
    return frozenset(found)


def _in(argument: list[tuple[Any, Any]], char: str) -> bool:
    r"""Whether a character class (``[...]``, ``\w``) holds ``char``."""
    negate, held = False, False
    for op, value in argument:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            held |= char == chr(value)
        elif op is sre.RANGE:
            held |= value[0] <= ord(char) <= value[1]
        elif op is sre.CATEGORY:
            held |= char in _CATEGORIES.get(value, _SAMPLE)
    return held != negate


def _width(items: list[tuple[Any, Any]]) -> tuple[int, int]:
    """The least and most characters ``items`` can take."""
    return sre_parse.SubPattern(sre_parse.State(), items).getwidth()
