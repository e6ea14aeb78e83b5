"""Content files as YAML: parsed safely, with the line of every mapping, key and item, and the checks loaders share."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bot.models import Problem

try:
    from yaml.cyaml import CParser
except ImportError:  # pragma: no cover - a PyYAML built without libyaml reads every file with _Loader
    CParser = None

MAX_FILE_BYTES = 1_000_000
"""A content file larger than this is refused before parsing."""
MAX_DEPTH = 20
"""Content needs a few levels of nesting; deeper data is refused before it can exhaust the stack."""


class YamlMap(dict):
    """What ``read_yaml`` makes of a mapping: a dict with ``line`` and ``lines`` (the line of each key)."""

    line: int = 1
    lines: dict[Any, int]


class YamlList(list):
    """What ``read_yaml`` makes of a sequence: a list with ``line`` and ``lines`` (the line of each item)."""

    line: int = 1
    lines: list[int]


class _Checks:
    """What both loaders add to PyYAML: line numbers, and aliases, duplicate keys and deep nesting refused.

    Aliases are refused before anything is built from them, so an alias bomb ("billion laughs")
    costs nothing; nesting is capped, so a file of ``[[[[...`` cannot exhaust the stack; and a
    value that a tag cannot read (``!!float abc``, a 5,000-digit number) becomes a marked error.
    """

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&name, *name) are not allowed in content files", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"lists and mappings are nested more than {MAX_DEPTH} levels deep; content needs only a few",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception:  # a tag's constructor fails on values it does not expect in many ways
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            shown = f" {node.value[:40]!r}" if isinstance(node.value, str) else ""
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"the value{shown} cannot be read as {tag}; remove the tag or fix the value",
                node.start_mark,
            ) from None


def _construct_map(loader: _Checks, node: yaml.MappingNode) -> YamlMap:
    loader.flatten_mapping(node)
    data = YamlMap()
    data.line = node.start_mark.line + 1
    data.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise yaml.constructor.ConstructorError(None, None, "a key must be plain text", key_node.start_mark)
        if key in data:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {key!r} appears twice in this mapping", key_node.start_mark
            )
        data[key] = loader.construct_object(value_node, deep=True)
        data.lines[key] = key_node.start_mark.line + 1
    return data


def _construct_seq(loader: _Checks, node: yaml.SequenceNode) -> YamlList:
    data = YamlList(loader.construct_object(child, deep=True) for child in node.value)
    data.line = node.start_mark.line + 1
    data.lines = [child.start_mark.line + 1 for child in node.value]
    return data


class _Loader(_Checks, yaml.SafeLoader):
    """The pure-Python loader: PyYAML's own messages for every malformed file, and the fallback without libyaml."""


if CParser is None:  # pragma: no cover - a PyYAML built without libyaml reads every file with _Loader alone
    LOADERS: tuple[type, ...] = (_Loader,)
else:

    class _FastLoader(
        _Checks, yaml.composer.Composer, CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver
    ):
        """``_Loader`` with libyaml's scanner and parser underneath: several times quicker, the same data and lines."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    LOADERS = (_FastLoader, _Loader)
"""The loaders ``read_yaml`` tries in turn: a file the first refuses is read again by ``_Loader``, the pure-Python
one, so that every message and line is PyYAML's own."""

for _loader in LOADERS:
    _loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    _loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def read_yaml(path: Path) -> tuple[Any, list[Problem]]:
    """Parse one YAML file safely; return its data (or ``None``) and any problems."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, [
                Problem(path, 1, "error", f"the file is {size} bytes; content files must stay under {MAX_FILE_BYTES}")
            ]
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return None, [Problem(path, 1, "error", f"the file is not UTF-8 text ({error.reason}); save it as UTF-8")]
    except OSError as error:
        return None, [Problem(path, 1, "error", f"the file cannot be read: {error.strerror or error}")]
    for faster in LOADERS[:-1]:
        try:
            return yaml.load(text, Loader=faster), []  # noqa: S506 - a SafeConstructor with _Loader's checks
        except (yaml.YAMLError, RecursionError, MemoryError):
            pass  # read again below, for PyYAML's own message and line
    try:
        return yaml.load(text, Loader=_Loader), []  # noqa: S506 - _Loader is a SafeLoader
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, max(0, error.position)) + 1
        code = f"U+{error.character:04X}" if isinstance(error.character, int) else repr(error.character)
        return None, [
            Problem(path, line, "error", f"this line holds a character YAML does not allow ({code}); remove it")
        ]
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else 1
        reason = error.problem or error.context or "the YAML is malformed"
        if error.context and error.context_mark and error.context.startswith("while scanning"):
            # An unclosed quote or a broken token: YAML notices only where the file (or the next quote) ends,
            # so the problem is reported where the token starts.
            where = line
            line = error.context_mark.line + 1
            opened = "the quote opened on this line is never closed" if "quoted" in error.context else ""
            what = opened or f"{error.context.removeprefix('while scanning ')} starting on this line is broken"
            reason = f"{what} (YAML noticed on line {where}: {reason})"
        elif error.context and error.context_mark and error.problem:
            reason += f" ({error.context} that starts on line {error.context_mark.line + 1})"
        hint = (
            "" if "alias" in reason or "twice" in reason else "; check the indentation, colons and quotes on this line"
        )
        return None, [Problem(path, line, "error", f"this is not valid content YAML: {reason}{hint}")]
    except yaml.YAMLError as error:
        return None, [Problem(path, 1, "error", f"this is not valid YAML: {error}")]
    except (RecursionError, MemoryError) as error:  # pragma: no cover - the limits above should make these unreachable
        return None, [Problem(path, 1, "error", f"this file is too complex to read ({type(error).__name__})")]


@dataclass
class FieldReader:
    """Collects problems while turning raw YAML data into typed values; each loader adds its own readers."""

    problems: list[Problem] = field(default_factory=list)

    def error(self, path: Path, line: int, message: str) -> None:
        self.problems.append(Problem(path, line, "error", message))

    def fields(self, data: YamlMap, path: Path, allowed: tuple[str, ...], what: str) -> None:
        for key in data:
            if key not in allowed:
                self.error(
                    path,
                    data.lines[key],
                    f"unknown field {key!r} in {what}; the fields allowed are: {', '.join(allowed)}",
                )

    def text(self, data: YamlMap, key: str, path: Path, *, required: bool) -> str | None:
        value = data.get(key)
        if value is None:
            if key in data:
                self.error(path, data.lines[key], f"{key!r} is empty; write its value after the colon")
            elif required:
                self.error(path, data.line, f"{key!r} is missing; add `{key}: ...` to this entry")
            return None
        if not isinstance(value, str) or not value.strip():
            self.error(path, data.lines[key], f"{key!r} must be non-empty text")
            return None
        return value.strip()

    def text_list(self, data: YamlMap, key: str, path: Path, *, required: bool) -> list[tuple[str, int]]:
        value = data.get(key)
        if value is None:
            if key in data:
                self.error(
                    path, data.lines[key], f"{key!r} is empty; add entries under it, one per line starting with '- '"
                )
            elif required:
                self.error(path, data.line, f"{key!r} is missing; add a list of entries under `{key}:`")
            return []
        if not isinstance(value, YamlList):
            self.error(path, data.lines[key], f"{key!r} must be a list, one entry per line starting with '- '")
            return []
        items = []
        for item, line in zip(value, value.lines, strict=True):
            if not isinstance(item, str) or not item.strip():
                self.error(
                    path,
                    line,
                    f"each entry of {key!r} must be non-empty text; quote it if it starts with a special character",
                )
            else:
                items.append((item.strip(), line))
        if required and not items and isinstance(value, YamlList) and not value:
            self.error(path, data.lines[key], f"{key!r} is empty; add at least one entry")
        return items

    def identifier(self, data: YamlMap, path: Path, pattern: re.Pattern[str], what: str) -> str | None:
        value = self.text(data, "id", path, required=True)
        if value is not None and not pattern.match(value):
            self.error(
                path, data.lines["id"], f"the id {value!r} must use lowercase letters, digits and underscores{what}"
            )
            return None
        return value
