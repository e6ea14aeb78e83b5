"""One compiler for the crisis screen's rule files: the floor (``bot/floor/floor.yml``) and moderators' patterns.

Both files are read by the same code with the same messages, each naming its file and line. A rule has
an ``id``, a ``category`` and a ``level`` (and optionally a ``window`` level, a ``track`` and a
``language``), its regular expression as ``alternatives`` (one per line; or one ``pattern``, or plain
words as a ``phrase``), and the messages it must catch (``examples``) and must not (``non_examples``).
``<NAME>`` in a line stands for the floor's macro NAME. The floor must compile for the bot to start.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot import bounded, lexicon
from bot.errors import BotError
from bot.lexicon import BUILT_IN_MACROS, CATEGORIES, TRACKS, Rule, floor_data
from bot.models import Level, Problem, Track
from bot.screen import screen_text
from bot.yamlfile import FieldReader, YamlList, YamlMap

RULE_FIELDS = (
    "id",
    "category",
    "level",
    "window",
    "track",
    "language",
    "alternatives",
    "pattern",
    "phrase",
    "examples",
    "non_examples",
    "note",
)
RULE_ID = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
MACRO_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
LANGUAGES = ("es",)
"""Languages the crisis reply has a line for."""
MAX_PATTERN_CHARS = 1000
"""A line (or a moderator's pattern) longer than this is refused."""

_MACRO = re.compile(r"<([A-Z][A-Z0-9_]*)>")

_SOURCES = ("alternatives", "pattern", "phrase")


class RuleError(ValueError):
    """A rule is wrong; ``field`` names the YAML field to point at and ``item`` the line of it, when known."""

    def __init__(self, field: str, message: str, item: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.item = item


class FloorError(BotError):
    """The floor file does not compile: the bot cannot screen messages, so it does not start."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        shown = "; ".join(str(problem) for problem in self.problems[:3])
        super().__init__(
            f"the crisis screen's floor ({lexicon.FLOOR_FILE}) does not compile, so no message could be screened "
            f"and the bot will not start: {shown}. Reinstall the package, or fix the file (python -m bot check "
            "lists every problem)."
        )


@dataclass(frozen=True)
class Entry:
    """One rule as written: the compiled rule, where it stands, and the messages it must and must not catch."""

    rule: Rule
    path: Path
    line: int
    examples: tuple[tuple[str, int], ...] = ()
    non_examples: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RuleFile:
    """A rule file compiled: its entries in order, the macros they may use, and every problem found."""

    entries: tuple[Entry, ...]
    macros: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The compiled rules, in the order ties are broken."""
        return tuple(entry.rule for entry in self.entries)


def expand(template: str, macros: Mapping[str, str]) -> str:
    """Replace every ``<NAME>`` in a line with its macro; raises ``KeyError`` naming an unknown one."""
    return _MACRO.sub(lambda found: macros[found.group(1)], template)


def _lines(value: Any, key_line: int) -> list[tuple[str, int]] | None:
    """A YAML value as lines of text, each with its line in the file; ``None`` if it is not text.

    A list's items are on their own lines; a block (``|``) starts on the line after its key; a
    one-line value sits on the key's line.
    """
    if isinstance(value, YamlList):
        if not all(isinstance(item, str) for item in value):
            return None
        return [(item.strip(), line) for item, line in zip(value, value.lines, strict=True)]
    if not isinstance(value, str):
        return None
    if "\n" not in value:
        return [(value.strip(), key_line)]
    return [(line.strip(), key_line + offset) for offset, line in enumerate(value.split("\n"), 1) if line.strip()]


def compile_rule(
    rule_id: str,
    category: str,
    level: str,
    *,
    alternatives: list[str] | None = None,
    pattern: str | None = None,
    phrase: str | None = None,
    window: str | None = None,
    track: str | None = None,
    language: str | None = None,
    macros: Mapping[str, str] | None = None,
) -> Rule:
    """One rule, from the floor or from moderators; raises ``RuleError`` with a sentence on any mistake."""
    if category not in CATEGORIES:
        raise RuleError("category", f"unknown category {category!r}; use one of: {', '.join(CATEGORIES)}")
    chosen = _level(level, "level")
    raised = _level(window, "window") if window is not None else None
    if raised is not None and raised.rank <= chosen.rank:
        raise RuleError("window", f"the window level {window!r} must be higher than the rule's level {level!r}")
    if track is not None and track not in {item.value for item in Track}:
        raise RuleError("track", f"unknown track {track!r}; use one of: {', '.join(item.value for item in Track)}")
    if language is not None and language not in LANGUAGES:
        raise RuleError("language", f"unknown language {language!r}; the crisis reply has a line for: es")
    given = [name for name, value in zip(_SOURCES, (alternatives, pattern, phrase), strict=True) if value is not None]
    if len(given) != 1:
        raise RuleError(
            "pattern" if pattern is not None else (given or ["phrase"])[0],
            "give exactly one of `phrase:` (plain words) or `pattern:` (a regular expression) or `alternatives:`"
            " (one regular expression a line)",
        )
    if phrase is not None:
        screened = screen_text(phrase)
        if not screened:
            raise RuleError("phrase", "the phrase has no words left after normalisation")
        source = r"\b" + re.escape(screened).replace(r"\ ", " ") + r"\b"
    else:
        source = _source(given[0], alternatives if alternatives is not None else [pattern or ""], macros or {})
    try:
        compiled = bounded.compile_pattern(source)
    except re.error as error:
        message = f"the pattern is not a valid regular expression: {error.msg} at position {error.pos}"
        raise RuleError(given[0], message, _culprit(alternatives, macros or {}, _invalid)) from None
    slow = bounded.backtracking(source)
    if slow is not None:
        raise RuleError(given[0], slow, _culprit(alternatives, macros or {}, bounded.backtracking))
    if bounded.search(compiled, "") is not False:
        raise RuleError(given[0], "the pattern matches an empty message, so it would fire on every message")
    return Rule(rule_id, category, chosen, compiled, Track(track) if track else TRACKS[category], raised, language)


def _level(value: str, key: str) -> Level:
    try:
        return Level(value)
    except ValueError:
        levels = ", ".join(item.value for item in Level)
        raise RuleError(key, f"unknown level {value!r}; use one of: {levels}") from None


def _source(key: str, lines: list[str], macros: Mapping[str, str]) -> str:
    """The regular expression of a rule's lines: each expanded and grouped, joined by ``|``."""
    if not lines:
        raise RuleError(key, "the rule has no lines; write one regular expression per line")
    pieces = []
    for index, line in enumerate(lines):
        if not line:
            raise RuleError(key, "this line is empty; remove it or write a regular expression", index)
        if len(line) > MAX_PATTERN_CHARS:
            message = f"the pattern is {len(line)} characters long; keep it under {MAX_PATTERN_CHARS}"
            raise RuleError(key, message, index)
        try:
            pieces.append(f"(?:{expand(line, macros)})" if key == "alternatives" else expand(line, macros))
        except KeyError as error:
            known = ", ".join(f"<{name}>" for name in macros) or "none"
            raise RuleError(key, f"unknown macro <{error.args[0]}>; the macros are: {known}", index) from None
    return "|".join(pieces)


def _culprit(alternatives: list[str] | None, macros: Mapping[str, str], faulty: Callable[[str], object]) -> int | None:
    """Which line of ``alternatives`` is ``faulty`` on its own (macros expanded), if one is."""
    for index, line in enumerate(alternatives or ()):
        if faulty(expand(line, macros)):
            return index
    return None


def _invalid(source: str) -> bool:
    """Whether ``source`` is not a valid regular expression."""
    try:
        bounded.parse(source)
    except re.error:
        return True
    return False


def pattern_warnings(pattern: str) -> list[str]:
    """Things in a pattern (macros expanded) that can never match the normalised text."""
    warnings = []
    if "'" in pattern or "\u2019" in pattern:
        warnings.append(
            "the pattern contains an apostrophe, but the screen removes apostrophes and expands contractions "
            '("don\'t" is matched as "do not", "I\'m" as "i am"); write the expanded words'
        )
    if re.search(r"[A-Z]", re.sub(r"\\.", "", pattern)):
        warnings.append("the pattern contains capital letters, but the screen lowercases everything first")
    return warnings


class RuleReader(FieldReader):
    """Reads rule files (``macros:`` and a list of rules) into compiled entries, collecting every problem."""

    def macros(self, data: Any, path: Path) -> dict[str, str]:
        """The ``macros:`` mapping, each expanded: several lines (or a list) are one of them, one line as written."""
        raw = data.get("macros") if isinstance(data, YamlMap) else None
        if raw is None:
            return {}
        if not isinstance(raw, YamlMap):
            self.error(path, data.lines["macros"], "`macros:` must map each NAME to its regular expression")
            return {}
        written: dict[str, tuple[str, int]] = {name: (text, 0) for name, text in BUILT_IN_MACROS.items()}
        for name, value in raw.items():
            lines = _lines(value, raw.lines[name])
            if name in BUILT_IN_MACROS:
                self.error(path, raw.lines[name], f"the macro {name} comes from bot/normalize.py; choose another name")
            elif not isinstance(name, str) or not MACRO_NAME.match(name):
                self.error(path, raw.lines[name], f"the macro name {name!r} must be capital letters, digits and _")
            elif not lines or not all(text for text, _ in lines):
                self.error(path, raw.lines[name], f"the macro {name} must be one regular expression, or one per line")
            else:
                texts = [text for text, _ in lines]
                written[name] = (texts[0] if len(texts) == 1 else "(?:" + "|".join(texts) + ")", raw.lines[name])
        done: dict[str, str] = {}
        for name in written:
            self._macro(name, written, done, path, ())
        return done

    def _macro(
        self, name: str, written: dict[str, tuple[str, int]], done: dict[str, str], path: Path, using: tuple[str, ...]
    ) -> str | None:
        if name in done:
            return done[name]
        text, line = written[name]
        for used in dict.fromkeys(_MACRO.findall(text)):
            if used in using or used == name:
                self.error(path, line, f"the macro {name} uses itself through <{used}>; a macro cannot refer back")
                return None
            if used not in written:
                self.error(path, line, f"the macro {name} uses <{used}>, which no macro defines")
                return None
            if self._macro(used, written, done, path, (*using, name)) is None:
                return None
        done[name] = expand(text, done)
        try:
            re.compile(done[name])
        except re.error as error:
            self.error(path, line, f"the macro {name} is not a valid regular expression: {error.msg}")
        return done[name]

    def rule_entries(
        self, data: Any, path: Path, key: str, *, macros: Mapping[str, str], taken: Mapping[str, str]
    ) -> list[Entry]:
        """The rules listed under ``key``; ``taken`` maps ids already used elsewhere to where."""
        items = data.get(key) if isinstance(data, YamlMap) else None
        if not isinstance(items, YamlList):
            self.error(path, getattr(data, "line", 1), f"the safety file must have `{key}:` followed by a list")
            return []
        entries: dict[str, Entry] = {}
        for item, line in zip(items, items.lines, strict=True):
            if not isinstance(item, YamlMap):
                self.error(
                    path,
                    line,
                    "each safety pattern must be a mapping with `id:`, `category:`, `level:` and "
                    "`phrase:`, `pattern:` or `alternatives:`",
                )
                continue
            entry = self.rule_entry(item, path, macros)
            if entry is None:
                continue
            where = taken.get(entry.rule.id) or ("this file" if entry.rule.id in entries else None)
            if where is not None:
                self.error(
                    path, item.lines["id"], f"the safety pattern id {entry.rule.id!r} is already used in {where}"
                )
                continue
            entries[entry.rule.id] = entry
        return list(entries.values())

    def rule_entry(self, item: YamlMap, path: Path, macros: Mapping[str, str]) -> Entry | None:
        """One rule, compiled, with its examples; ``None`` (and a problem) if it cannot be."""
        self.fields(item, path, RULE_FIELDS, "a safety pattern")
        rule_id = self.identifier(item, path, RULE_ID, ", with dots between parts")
        values = {key: self.text(item, key, path, required=key in ("category", "level")) for key in RULE_FIELDS[1:6]}
        values |= {key: self.text(item, key, path, required=False) for key in ("pattern", "phrase")}
        lines: list[tuple[str, int]] | None = None
        if "alternatives" in item:
            lines = _lines(item["alternatives"], item.lines["alternatives"])
            if lines is None:
                self.error(
                    path, item.lines["alternatives"], "'alternatives' must be text, one regular expression a line"
                )
                return None
        examples = self.text_list(item, "examples", path, required=False)
        non_examples = self.text_list(item, "non_examples", path, required=False)
        if rule_id is None or values["category"] is None or values["level"] is None:
            return None
        try:
            rule = compile_rule(
                rule_id, **values, alternatives=[text for text, _ in lines] if lines else None, macros=macros
            )
        except RuleError as error:
            line = item.lines.get(error.field, item.line)
            if error.item is not None and lines:
                line = lines[error.item][1]
            self.error(path, line, str(error))
            return None
        for key in ("alternatives", "pattern"):
            if key in item:
                for warning in pattern_warnings(rule.pattern.pattern):
                    self.problems.append(Problem(path, item.lines[key], "warning", warning))
        return Entry(rule, path, item.line, tuple(examples), tuple(non_examples))

    def check_examples(self, entries: Iterable[Entry]) -> None:
        """Every example must fire its rule and no non-example may; none may take the pattern past its bound."""
        for entry in entries:
            rule = entry.rule
            for example, line in entry.examples:
                if self._tried(entry, example, line) is False:
                    self.error(entry.path, line, f"the example {example!r} is not caught by safety pattern {rule.id!r}")
            for example, line in entry.non_examples:
                if self._tried(entry, example, line) is True:
                    self.error(
                        entry.path,
                        line,
                        f"the non-example {example!r} is caught by safety pattern {rule.id!r}; narrow the pattern "
                        "or move the message to `examples:`",
                    )

    def _tried(self, entry: Entry, example: str, line: int) -> bool | None:
        """Whether the entry's rule fires on ``example``; ``None`` (and an error) if it ran out of its time bound."""
        fired = bounded.search(entry.rule.pattern, screen_text(example))
        if fired is None:
            self.error(
                entry.path,
                line,
                f"safety pattern {entry.rule.id!r} took more than {bounded.BOUND:g} s on {example!r}, so the screen "
                "stops it there and answers as if it matched; simplify the pattern",
            )
        return fired


@functools.cache
def floor_file() -> RuleFile:
    """The floor file compiled, read once; its problems say what stops it compiling (examples are not tried)."""
    data, problems = floor_data()
    reader = RuleReader(list(problems))
    if data is None:
        return RuleFile((), {}, tuple(reader.problems))
    if isinstance(data, YamlMap):
        reader.fields(data, lexicon.FLOOR_FILE, ("macros", "rules"), "the floor file")
    macros = reader.macros(data, lexicon.FLOOR_FILE)
    entries = reader.rule_entries(data, lexicon.FLOOR_FILE, "rules", macros=macros, taken={})
    return RuleFile(tuple(entries), macros, tuple(reader.problems))


def floor() -> tuple[Rule, ...]:
    """The floor's rules, which always apply; raises ``FloorError`` with a sentence if the file does not compile."""
    loaded = floor_file()
    errors = [problem for problem in loaded.problems if problem.level == "error"]
    if errors or not loaded.entries:
        raise FloorError(errors or [Problem(lexicon.FLOOR_FILE, 1, "error", "the floor has no rules")])
    return loaded.rules


def check_floor() -> list[Problem]:
    """Every problem of the floor file, its examples and non-examples tried: what ``check`` and CI report."""
    loaded = floor_file()
    reader = RuleReader(list(loaded.problems))
    reader.check_examples(loaded.entries)
    for entry in loaded.entries:
        if not entry.examples:
            reader.error(
                entry.path, entry.line, f"the floor rule {entry.rule.id!r} has no examples; add at least one message"
            )
    return reader.problems
