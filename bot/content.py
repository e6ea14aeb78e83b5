"""Load the intent and response YAML into a Catalog, reporting every problem with its file and line."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.errors import ContentError
from bot.lexicon import Rule
from bot.matcher import IntentPhrases
from bot.models import Example, Intent, Passage, Problem
from bot.rules import RuleReader, floor_file
from bot.yamlfile import YamlList, YamlMap, read_yaml

ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
PASSAGE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
ACTIONS = ("answer", "continue")

INTENT_FIELDS = ("id", "title", "menu", "action", "examples", "keywords", "responses")
PASSAGE_FIELDS = ("id", "text", "section", "source", "follow_ups")
SAFETY_FILE = Path("safety") / "patterns.yml"
"""Moderators' safety patterns, relative to the content root; optional."""
FLOOR_NAME = "bot/floor/floor.yml"


@dataclass(frozen=True)
class Catalog:
    """Every intent and passage, checked and cross-referenced; the engine's read-only content."""

    root: Path
    intents: Mapping[str, Intent]
    passages: Mapping[str, Passage]
    article_title: str
    safety_rules: tuple[Rule, ...] = ()
    """Moderators' crisis-screen rules from ``safety/patterns.yml``; they add to the floor in code."""

    def phrases(self) -> list[IntentPhrases]:
        """What the matcher needs: each intent's examples and keywords."""
        return [
            IntentPhrases(
                intent.id,
                tuple(example.text for example in intent.examples),
                intent.keywords,
                whole_only=self.conversational(intent),
            )
            for intent in self.intents.values()
        ]

    def conversational(self, intent: Intent) -> bool:
        """Small talk or "tell me more": no passage of the intent is quoted from the article."""
        passages = (self.passages.get(passage_id) for passage_id in intent.responses)
        return not any(passage.quoted for passage in passages if passage is not None)

    def menu(self) -> list[Intent]:
        """The intents offered as topics, in their menu order."""
        listed = [intent for intent in self.intents.values() if intent.menu is not None]
        return sorted(listed, key=lambda intent: (intent.menu, intent.id))


class _Reader(RuleReader):
    """Turns raw YAML data into intents, passages and safety rules."""

    def intent(self, data: Any, path: Path) -> Intent | None:
        if not isinstance(data, YamlMap):
            self.error(path, 1, "an intent file must be a mapping with `id:`, `examples:` and `responses:`")
            return None
        self.fields(data, path, INTENT_FIELDS, "an intent")
        intent_id = self.identifier(data, path, ID_PATTERN, "")
        title = self.text(data, "title", path, required=False)
        menu = data.get("menu")
        if menu is not None and (isinstance(menu, bool) or not isinstance(menu, int) or menu < 1):
            self.error(path, data.lines["menu"], "'menu' must be the topic's position in the menu: 1, 2, 3, ...")
            menu = None
        if menu is not None and title is None:
            self.error(path, data.lines["menu"], "an intent listed in the menu needs a `title:` to show on its button")
        action = data.get("action", "answer")
        if action not in ACTIONS:
            self.error(path, data.lines.get("action", data.line), f"'action' must be one of: {', '.join(ACTIONS)}")
            action = "answer"
        examples = self.text_list(data, "examples", path, required=True)
        keywords = self.text_list(data, "keywords", path, required=False)
        responses = self.text_list(data, "responses", path, required=action == "answer")
        if intent_id is None:
            return None
        return Intent(
            id=intent_id,
            examples=tuple(Example(text, line) for text, line in examples),
            responses=tuple(text for text, _ in responses),
            keywords=tuple(text for text, _ in keywords),
            title=title,
            menu=menu,
            action=action,
            path=path,
            line=data.line,
        )

    def intents(self, data: Any, path: Path) -> list[Intent]:
        intent = self.intent(data, path)
        return [intent] if intent else []

    def passages(self, data: Any, path: Path) -> list[Passage]:
        if not isinstance(data, YamlMap) or not isinstance(data.get("passages"), YamlList):
            self.error(
                path, getattr(data, "line", 1), "a response file must have `passages:` followed by a list of passages"
            )
            return []
        self.fields(data, path, ("passages",), "a response file")
        found = []
        for item, line in zip(data["passages"], data["passages"].lines, strict=True):
            if not isinstance(item, YamlMap):
                self.error(path, line, "each passage must be a mapping with `id:`, `text:` and `section:`")
                continue
            passage = self.passage(item, path)
            if passage is not None:
                found.append(passage)
        return found

    def passage(self, item: YamlMap, path: Path) -> Passage | None:
        self.fields(item, path, PASSAGE_FIELDS, "a passage")
        passage_id = self.identifier(item, path, PASSAGE_ID_PATTERN, ", with dots between parts")
        text = self.text(item, "text", path, required=True)
        source = item.get("source", "article")
        if source not in ("article", "bot"):
            self.error(path, item.lines["source"], "'source' must be `article` (quoted) or `bot` (the bot's own words)")
        section = self.text(item, "section", path, required=source == "article")
        if source == "bot" and section is not None:
            self.error(
                path, item.lines["section"], "a `source: bot` line is not from the article, so it has no `section:`"
            )
        follow_ups = self.text_list(item, "follow_ups", path, required=False)
        if passage_id is None or text is None:
            return None
        return Passage(
            id=passage_id,
            text=" ".join(text.split()),
            section=section if source == "article" else None,
            follow_ups=tuple(name for name, _ in follow_ups),
            path=path,
            line=item.line,
        )

    def safety_rules(self, data: Any, path: Path) -> list[Rule]:
        """Moderators' crisis-screen rules, read by the floor's compiler; each is checked against its own examples."""
        if data is None or (isinstance(data, YamlMap) and data.get("patterns") is None and "patterns" in data):
            return []
        if isinstance(data, YamlMap):
            self.fields(data, path, ("patterns",), "the safety file")
        floor = floor_file()
        taken = dict.fromkeys((rule.id for rule in floor.rules), f"the floor in {FLOOR_NAME}")
        entries = self.rule_entries(data, path, "patterns", macros=floor.macros, taken=taken)
        self.check_examples(entries)
        return [entry.rule for entry in entries]


def _files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])


def _cross_check(reader: _Reader, intents: dict[str, Intent], passages: dict[str, Passage]) -> None:
    for intent in intents.values():
        for passage_id in intent.responses:
            if passage_id not in passages:
                reader.error(
                    intent.path,
                    intent.line,
                    f"intent {intent.id!r} uses passage {passage_id!r}, which no file under responses/ defines",
                )
    for passage in passages.values():
        for follow_up in passage.follow_ups:
            target = intents.get(follow_up)
            if target is None:
                reader.error(
                    passage.path,
                    passage.line,
                    f"passage {passage.id!r} suggests {follow_up!r}, which is not an intent id",
                )
            elif target.title is None:
                reader.error(
                    target.path,
                    target.line,
                    f"intent {follow_up!r} is suggested by {passage.id!r}, so it needs a `title:` for its button",
                )


def _collect(
    reader: _Reader, files: Iterable[Path], build: Callable[[Any, Path], Iterable[Any]], kind: str
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in files:
        data, problems = read_yaml(path)
        reader.problems.extend(problems)
        if problems:
            continue
        for item in build(data, path):
            if item.id in found:
                first = found[item.id]
                reader.error(
                    path, item.line, f"the {kind} id {item.id!r} is already defined at {first.path}:{first.line}"
                )
            else:
                found[item.id] = item
    return found


def _article_title(reader: _Reader, root: Path) -> str:
    path = root / "source" / "article.yml"
    data, problems = read_yaml(path)
    reader.problems.extend(problems)
    if problems:
        return ""
    if not isinstance(data, YamlMap):
        reader.error(path, 1, "the article file must be a mapping with `title:` and `file:`")
        return ""
    return reader.text(data, "title", path, required=True) or ""


def read_content(root: Path, *, partial: bool = False) -> tuple[Catalog | None, list[Problem]]:
    """Read every content file under ``root``; return the catalogue (if usable) and all problems.

    ``partial`` returns what did load even when there are errors (for ``check``, which goes on checking
    it), and ``None`` only when the content folders are missing.
    """
    reader = _Reader()
    intents_dir, responses_dir = root / "intents", root / "responses"
    for folder in (intents_dir, responses_dir):
        if not folder.is_dir():
            reader.error(
                folder,
                1,
                f"the folder {folder.name}/ is missing; point UNHOOKED_CONTENT_DIR at the folder"
                " that holds intents/ and responses/",
            )
    if reader.problems:
        return None, reader.problems
    intents = _collect(reader, _files(intents_dir), reader.intents, "intent")
    passages = _collect(reader, _files(responses_dir), reader.passages, "passage")
    for intent in intents.values():
        stem = intent.path.stem
        if stem != intent.id:
            reader.error(
                intent.path,
                intent.line,
                f"the file is named {stem!r} but holds intent {intent.id!r}; name the file {intent.id}.yml",
            )
    if not intents:
        reader.error(intents_dir, 1, "no intent files were found; add at least one intents/<id>.yml")
    _cross_check(reader, intents, passages)
    title = _article_title(reader, root)
    rules = _safety_rules(reader, root / SAFETY_FILE)
    if not partial and any(problem.level == "error" for problem in reader.problems):
        return None, reader.problems
    catalog = Catalog(root=root, intents=intents, passages=passages, article_title=title, safety_rules=rules)
    return catalog, reader.problems


def _safety_rules(reader: _Reader, path: Path) -> tuple[Rule, ...]:
    if not path.exists():
        return ()
    data, problems = read_yaml(path)
    reader.problems.extend(problems)
    if problems:
        return ()
    return tuple(reader.safety_rules(data, path))


def load_catalog(root: Path) -> Catalog:
    """Load the content under ``root``, or raise ``ContentError`` naming every problem."""
    catalog, problems = read_content(root)
    if catalog is None:
        raise ContentError(problems)
    return catalog
