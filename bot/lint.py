"""Content checks beyond the schema, for ``python -m bot check`` and every reload.

The loader (``bot.content``) already refuses malformed files and broken references. These checks
read the loaded catalogue against the article, the banned-advice list and the test sentences.

Errors and warnings are chosen by what a mistake does to a person reading the bot:

* **errors** (the content is refused, ``check`` exits 1, a reload keeps the old content): anything
  the bot would *say* wrongly or that leaves content unreachable: a passage that is not verbatim
  from the article or sits under the wrong heading, banned advice, a hotline number typed into YAML
  (numbers live in ``bot/resources.py`` so they are right in one place), a broken reference, a
  duplicate example (the same words in two intents make every message like them ambiguous, and
  within one intent they are dead weight), a passage too long to send as one message.
* **warnings** (reported, content still served): things that make matching or maintenance worse
  but say nothing false: near-collisions (an example that, held out, the matcher gives to another
  intent), unused passages, intents without test sentences, passages long enough to be a wall of
  text on a phone.
* **notes**: facts about the check itself, e.g. a content folder has no test sentences.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bot import resources
from bot.article import Article
from bot.content import Catalog, read_content
from bot.conversations import SentenceSet, read_sentences
from bot.matcher import Matcher, MatcherSettings, tokens_of
from bot.meaning import Vectors, examples_index
from bot.models import Intent, Problem
from bot.normalize import for_matching
from bot.yamlfile import FieldReader, YamlList, YamlMap, read_yaml

log = logging.getLogger("unhooked.lint")

TESTS_DIR = Path("tests") / "conversations"
"""Where test sentences live, relative to the content root of a checkout."""
BANNED_ADVICE = Path("policy") / "banned_advice.yml"
ARTICLE = Path("source") / "article.yml"
CONTENT_FOLDERS = ("intents", "responses", "source", "policy")
"""The folders of the content root that hold YAML the bot reads."""
ARTICLE_FIELDS = ("title", "publisher", "file", "opening_section")
DEFAULT_OPENING = "Introduction"
"""The name passages give to the article's text before its first heading."""
LONG_PASSAGE = 800
"""A passage longer than this (characters) is a wall of text on a phone: warning."""
MAX_MESSAGE = 4096
"""Telegram's limit for one message: a longer passage cannot be sent (error)."""


@dataclass(frozen=True)
class BannedPhrase:
    """One phrase of the banned-advice list, folded the way message text is folded."""

    phrase: str
    folded: str
    reason: str
    path: Path
    line: int


def _error(path: Path, line: int, message: str) -> Problem:
    return Problem(path, line, "error", message)


def _warning(path: Path, line: int, message: str) -> Problem:
    return Problem(path, line, "warning", message)


def _normal(text: str) -> str:
    """What the matcher reads: normalised words, content words stemmed."""
    return " ".join(tokens_of(text))


def _item_lines(path: Path, key: str) -> dict[str, tuple[str, int]]:
    """Each entry of a list field (e.g. an intent's keywords) and its line, by its normalised text."""
    data, _ = read_yaml(path)
    items = data.get(key) if isinstance(data, YamlMap) else None
    if not isinstance(items, YamlList):
        return {}
    found: dict[str, tuple[str, int]] = {}
    for item, line in zip(items, items.lines, strict=True):
        if isinstance(item, str):
            found.setdefault(_normal(item), (item.strip(), line))
    return found


def read_article(root: Path) -> tuple[Article | None, list[Problem]]:
    """Check ``source/article.yml`` and read the article file it names."""
    path = root / ARTICLE
    data, problems = read_yaml(path)
    if problems or not isinstance(data, YamlMap):
        return None, []  # the loader has already reported it
    reader = FieldReader()
    reader.fields(data, path, ARTICLE_FIELDS, "the article file")
    name = reader.text(data, "file", path, required=True)
    opening = reader.text(data, "opening_section", path, required=False) or DEFAULT_OPENING
    if name is None:
        return None, reader.problems
    article_path = path.parent / name
    try:
        text = article_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reader.error(path, data.lines["file"], f"the article {name!r} cannot be read as UTF-8 text: {error}")
        return None, reader.problems
    return Article(text, opening), reader.problems


def read_banned_advice(root: Path) -> tuple[list[BannedPhrase], list[Problem]]:
    """Read and check ``policy/banned_advice.yml``: ``rules:``, each with a ``reason:`` and ``phrases:``."""
    path = root / BANNED_ADVICE
    if not path.is_file():
        return [], [_error(path, 1, "the banned-advice list is missing, so response text cannot be screened")]
    data, problems = read_yaml(path)
    if problems:
        return [], problems
    reader = FieldReader()
    rules = data.get("rules") if isinstance(data, YamlMap) else None
    if not isinstance(rules, YamlList) or not rules:
        reader.error(path, getattr(data, "line", 1), "the banned-advice list must have `rules:` and a list of rules")
        return [], reader.problems
    reader.fields(data, path, ("rules",), "the banned-advice list")
    found: dict[str, BannedPhrase] = {}
    for rule, line in zip(rules, rules.lines, strict=True):
        if not isinstance(rule, YamlMap):
            reader.error(path, line, "each rule must have `reason:` and `phrases:`")
            continue
        reader.fields(rule, path, ("reason", "phrases"), "a rule")
        reason = reader.text(rule, "reason", path, required=True) or ""
        for phrase, phrase_line in reader.text_list(rule, "phrases", path, required=True):
            folded = for_matching(phrase)
            if len(folded) < 3:
                reader.error(path, phrase_line, f"{phrase!r} is too short to ban; write a word or a phrase")
            elif folded in found:
                first = found[folded]
                reader.error(path, phrase_line, f"{phrase!r} is already banned on line {first.line}")
            else:
                found[folded] = BannedPhrase(phrase, folded, reason, path, phrase_line)
    return list(found.values()), reader.problems


def unused_passages(catalog: Catalog) -> Iterator[Problem]:
    """Passages no intent answers with: nobody can ever read them."""
    used = {passage_id for intent in catalog.intents.values() for passage_id in intent.responses}
    for passage in catalog.passages.values():
        if passage.id not in used:
            yield _warning(
                passage.path, passage.line, f"no intent uses passage {passage.id!r}; add it to an intent's responses"
            )


def duplicate_examples(catalog: Catalog) -> Iterator[Problem]:
    """The same example (or keyword) twice, within an intent or across intents, once normalised."""
    seen: dict[str, tuple[Intent, int, str]] = {}
    for intent in catalog.intents.values():
        for example in intent.examples:
            key = _normal(example.text)
            if key in seen:
                other, line, text = seen[key]
                where = "this intent" if other is intent else f"intent {other.id!r}"
                yield _error(
                    intent.path,
                    example.line,
                    f"example {example.text!r} is the same as {text!r} of {where} ({other.path}:{line})"
                    f" once normalised (the matcher reads both as {key!r}); keep one",
                )
            else:
                seen[key] = (intent, example.line, example.text)
    owners: dict[str, tuple[Intent, int]] = {}
    for intent in catalog.intents.values():
        for key, (keyword, line) in _item_lines(intent.path, "keywords").items():
            other, first = owners.setdefault(key, (intent, line))
            if other is not intent:
                yield _error(
                    intent.path,
                    line,
                    f"keyword {keyword!r} is already a keyword of {other.id!r} ({other.path}:{first})",
                )


_REVIEWED = re.compile(r"#\s*reviewed:\s*([a-z0-9_][a-z0-9_,\s]*)")
"""A comment on an example's line that silences its near-collision warnings with the intents it names."""


def reviewed(path: Path, line: int, cache: dict[Path, list[str]]) -> frozenset[str]:
    """The intents a moderator marked as reviewed near-collisions on this line (``# reviewed: other_intent``)."""
    if path not in cache:
        try:
            cache[path] = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[path] = []
    lines = cache[path]
    found = _REVIEWED.search(lines[line - 1]) if 0 < line <= len(lines) else None
    return frozenset(found.group(1).replace(",", " ").split()) if found else frozenset()


FOLDS = 5
"""``near_collisions`` holds out every fifth example of each intent in turn: five matchers cover the catalogue."""


def near_collisions(
    catalog: Catalog, settings: MatcherSettings | None = None, vectors: Vectors | None = None
) -> Iterator[Problem]:
    """Examples that the production matcher (by meaning too, given ``vectors``), with them held out, gives elsewhere.

    Cross-validation, as Rasa's ``test nlu`` does it: each example is matched by a matcher built without it
    (and without every fifth example of each intent beside it). One that goes to another intent says a
    message worded like it would get that intent's passages; a close call between two intents is left
    out, since the margin rule already turns it into an honest "which did you mean?". A warning a
    moderator has looked at is silenced in the file itself: ``# reviewed: other_intent`` at the end of
    the example's line (a collision with any other intent still warns).
    """
    settings = settings or MatcherSettings()
    phrases = catalog.phrases()
    files: dict[Path, list[str]] = {}
    for fold in range(FOLDS):
        held_out = [
            dataclasses.replace(
                each, examples=tuple(text for at, text in enumerate(each.examples) if at % FOLDS != fold)
            )
            for each in phrases
        ]
        meaning = None if vectors is None else examples_index(vectors, [(p.intent, p.examples) for p in held_out])
        matcher = Matcher(held_out, settings, meaning)
        for intent in catalog.intents.values():
            for example in intent.examples[fold::FOLDS]:
                found = matcher.match(example.text)
                if found.intent in (None, intent.id) or found.intent in reviewed(intent.path, example.line, files):
                    continue
                other = catalog.intents[found.intent]
                top = found.candidates[0]
                what, line = _source(other, top.example)
                source = f"its {what} at {other.path}:{line}"
                scorers = "" if top.meaning is None else f": fuzzy {top.fuzzy:.0f}, meaning {top.meaning:.0f}"
                if top.nearest and top.nearest != top.example.removeprefix("meaning: "):
                    near, near_line = _source(other, top.nearest)
                    source += f", and nearest in meaning its {near} at {other.path}:{near_line}"
                yield _warning(
                    intent.path,
                    example.line,
                    f"example {example.text!r} of {intent.id!r}, held out, goes to {found.intent!r} (score"
                    f" {found.score:.0f}{scorers}, from {source}): messages worded like it get"
                    f" the passages of {found.intent!r}; make them more distinct, add examples like it to"
                    f" {intent.id!r}, or end this line with `# reviewed: {found.intent}` if that answer is fine",
                )


def _source(intent: Intent, example: str) -> tuple[str, int]:
    """What a matcher candidate names (an example, ``keyword: ...`` or ``meaning: ...``) and its line in the file."""
    example = example.removeprefix("meaning: ")  # only the meaning scorer found the intent: its nearest example
    if example.startswith("keyword: "):
        keyword, line = _item_lines(intent.path, "keywords").get(example.removeprefix("keyword: "), (example, 0))
        return f"keyword {keyword!r}", line or intent.line
    return f"example {example!r}", next((e.line for e in intent.examples if e.text == example), intent.line)


def sentence_coverage(catalog: Catalog, sentences: SentenceSet | None, tests_dir: Path) -> Iterator[Problem]:
    """Every intent has test sentences, and the test files name only real intents."""
    if sentences is None:
        yield Problem(
            tests_dir,
            1,
            "note",
            "there is no test sentences folder here, so intents were not checked for test sentences;"
            " pass --tests DIR with the folder that has them",
        )
        return
    for intent in catalog.intents.values():
        if intent.id not in sentences.files:
            yield _warning(
                intent.path,
                intent.line,
                f"intent {intent.id!r} has no test sentences; add {tests_dir / (intent.id + '.yaml')}",
            )
    for intent_id, path in sentences.files.items():
        if intent_id not in catalog.intents:
            yield _error(path, 1, f"{intent_id!r} is not an intent; rename or remove this test file")
    for failure in sentences.known.values():
        for name in (failure.intent, failure.went_to):
            if name is not None and name not in catalog.intents:
                yield _error(failure.path, failure.line, f"{name!r} is not an intent")


def not_verbatim(catalog: Catalog, article: Article) -> Iterator[Problem]:
    """Quoted passages whose words are not, in order, in the article."""
    for passage in catalog.passages.values():
        if not passage.quoted or article.find(passage.text) >= 0:
            continue
        gap = article.divergence(passage.text)
        if not gap.article:
            where = f'its words from "{gap.passage}" on are not in the article' + (
                f' (it follows the article up to "…{gap.matched}")' if gap.matched else ""
            )
        else:
            where = (
                f'it follows the article up to "…{gap.matched}", then reads "{gap.passage}…"'
                f' where the article reads "{gap.article}…"'
            )
        yield _error(
            passage.path,
            passage.line,
            f"passage {passage.id!r} is not verbatim from the article: {where}; copy it from the article file",
        )


def wrong_sections(catalog: Catalog, article: Article) -> Iterator[Problem]:
    """Quoted passages whose ``section:`` is not a heading, or whose text sits under another heading."""
    headings = ", ".join(repr(section.heading) for section in article.sections)
    for passage in catalog.passages.values():
        if not passage.quoted:
            continue
        section = article.section(passage.section or "")
        if section is None:
            yield _error(
                passage.path,
                passage.line,
                f"passage {passage.id!r} names section {passage.section!r}, which is not a heading of the"
                f" article; the headings are: {headings}",
            )
            continue
        start = article.find(passage.text)
        if start < 0:
            continue  # not_verbatim reports it
        actual = article.section_at(start)
        if actual is not None and actual is not section:
            yield _error(
                passage.path,
                passage.line,
                f"passage {passage.id!r} says section {passage.section!r}, but its text is under {actual.heading!r}",
            )


def long_passages(catalog: Catalog) -> Iterator[Problem]:
    """Passages too long for one message (error) or long enough to be a wall of text (warning)."""
    for passage in catalog.passages.values():
        size = len(passage.text)
        if size > MAX_MESSAGE:
            yield _error(
                passage.path,
                passage.line,
                f"passage {passage.id!r} has {size} characters; one message holds at most {MAX_MESSAGE}: split it",
            )
        elif size > LONG_PASSAGE:
            yield _warning(
                passage.path,
                passage.line,
                f"passage {passage.id!r} has {size} characters, a wall of text on a phone; keep passages under"
                f" {LONG_PASSAGE} or split it",
            )


def banned_advice(catalog: Catalog, banned: list[BannedPhrase]) -> Iterator[Problem]:
    """Text the bot shows (passages and topic titles) that contains a banned phrase."""
    shown = [(p.path, p.line, f"passage {p.id!r}", p.text) for p in catalog.passages.values()]
    shown += [(i.path, i.line, f"the title of {i.id!r}", i.title) for i in catalog.intents.values() if i.title]
    for path, line, what, text in shown:
        padded = f" {for_matching(text)} "
        for phrase in banned:
            if f" {phrase.folded} " in padded:
                yield _error(
                    path,
                    line,
                    f"{what} contains {phrase.phrase!r}, advice the bot must never give: {phrase.reason}"
                    f" ({phrase.path}:{phrase.line})",
                )


_NUMBERS = [
    (number, re.compile(r"(?<!\d)" + r"[\s.-]?".join(re.escape(d) for d in number if d.isdigit()) + r"(?!\d)"))
    for number in resources.HOTLINE_NUMBERS
]


def hotline_numbers(root: Path) -> Iterator[Problem]:
    """Hotline numbers typed into any content YAML: they belong in ``bot/resources.py``."""
    for folder in CONTENT_FOLDERS:
        for path in sorted([*(root / folder).glob("*.yml"), *(root / folder).glob("*.yaml")]):
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue  # the loader reports unreadable files
            for number_line, text in enumerate(lines, 1):
                for number, pattern in _NUMBERS:
                    if pattern.search(text):
                        yield _error(
                            path,
                            number_line,
                            f"the hotline number {number!r} is typed here; hotline facts live in bot/resources.py,"
                            " and the crisis reply adds them: remove it",
                        )
                        break


def lint(
    catalog: Catalog,
    root: Path,
    tests_dir: Path | None = None,
    *,
    collisions: bool = True,
    complete: bool = True,
    vectors: Vectors | None = None,
) -> list[Problem]:
    """Every check on loaded content; ``tests_dir`` defaults to ``tests/conversations`` under ``root``.

    ``collisions=False`` leaves out the near-collision check: it only warns, and it costs the most
    (five matchers built, every example matched), so the serving path skips it. ``complete=False`` says
    some files did not load: the checks that need every intent and passage (unused passages, test
    sentences naming intents) are left out rather than report what the missing files hold. With ``vectors``
    the near-collision check matches by meaning too, as the bot does.
    """
    tests_dir = root / TESTS_DIR if tests_dir is None else tests_dir
    article, problems = read_article(root)
    banned, banned_problems = read_banned_advice(root)
    sentences, sentence_problems = read_sentences(tests_dir)
    problems += banned_problems + sentence_problems
    if complete:
        problems += unused_passages(catalog)
    problems += duplicate_examples(catalog)
    if collisions:
        problems += near_collisions(catalog, vectors=vectors)
    if complete:
        problems += sentence_coverage(catalog, sentences, tests_dir)
    if article is not None:
        problems += not_verbatim(catalog, article)
        problems += wrong_sections(catalog, article)
    problems += long_passages(catalog)
    problems += banned_advice(catalog, banned)
    problems += hotline_numbers(root)
    return problems


def check_content(
    root: Path, tests_dir: Path | None = None, *, collisions: bool = False
) -> tuple[Catalog | None, list[Problem]]:
    """Load and lint the content under ``root``; the catalogue is ``None`` when there is any error.

    This is what decides whether content is served, at start and on every reload, so by default
    it leaves out the near-collision warnings (``python -m bot check`` lists them).
    """
    catalog, problems = read_content(root)
    if catalog is None:
        return None, problems
    try:
        problems += lint(catalog, root, tests_dir, collisions=collisions)
    except Exception as error:  # a bug in a check must not stop the bot: crisis replies work without content
        log.exception("the content checks failed")
        problems.append(_error(root, 1, f"the content checks failed ({error!r}); report this as a bug"))
    if any(problem.level == "error" for problem in problems):
        return None, problems
    return catalog, problems
