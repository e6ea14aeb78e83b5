"""Bad input, generated: the engine and the content loader answer anything with a reply or a named problem,
never a crash, and within a small, fixed amount of memory.

Example counts come from the hypothesis profile in conftest.py (HYPOTHESIS_PROFILE=ci runs more).
"""

from __future__ import annotations

import asyncio
import re
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.content import Catalog, read_content
from bot.engine import Engine
from bot.models import Incoming, ReplyKind
from bot.normalize import MAX_CHARS
from bot.store.memory import MemoryStore
from bot.yamlfile import MAX_DEPTH, MAX_FILE_BYTES, read_yaml
from tests.conftest import SECRET

# Every code point, lone surrogates and unassigned ones included: what a JSON update may carry.
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=300)
GARBAGE = st.binary(max_size=400).map(lambda raw: raw.decode("utf-8", errors="surrogateescape"))
MESSAGES = st.one_of(ANY_TEXT, GARBAGE, st.text(max_size=300))


@pytest.fixture(scope="module")
def run(catalog: Catalog) -> Iterator[Callable[..., object]]:
    """Runs engine calls on one event loop that lives as long as the module's engine."""
    with asyncio.Runner() as runner:
        engine = runner.run(_engine(catalog))

        def handle(text: str, topic: str | None = None, user: str = "fuzz") -> object:
            return runner.run(engine.handle(Incoming(user, text, "fuzz", topic)))

        yield handle
        runner.run(engine.aclose())


async def _engine(catalog: Catalog) -> Engine:
    return Engine(MemoryStore(), SECRET, catalog)


@given(text=MESSAGES, topic=st.one_of(st.none(), st.sampled_from(["miss_them", "nope", ""]), ANY_TEXT))
def test_anything_a_person_sends_gets_a_reply(run: Callable[..., object], text: str, topic: str | None) -> None:
    outcome = run(text, topic)
    assert outcome.replies
    assert all(isinstance(reply.text, str) and reply.text.strip() for reply in outcome.replies)


@given(before=ANY_TEXT, after=ANY_TEXT)
def test_a_crisis_is_caught_whatever_surrounds_it(run: Callable[..., object], before: str, after: str) -> None:
    outcome = run(f"{before[:200]} . I want to die . {after}")
    assert outcome.replies[0].kind is ReplyKind.CRISIS


@given(user=ANY_TEXT.filter(bool))
def test_any_user_id_is_accepted(run: Callable[..., object], user: str) -> None:
    assert run("why do I miss him", user=user).replies


@pytest.mark.parametrize("size", [MAX_CHARS + 1, 100_000, 5_000_000])
def test_a_huge_message_costs_no_more_than_a_long_one(run: Callable[..., object], size: int) -> None:
    text = ("why do I miss him so much when it was so bad " * (size // 40 + 1))[:size]
    tracemalloc.start()
    try:
        outcome = run(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.replies
    assert peak < 2_000_000, f"handling a {size}-character message took {peak} bytes at its peak"


# Content files


INTENT = "id: hello\ntitle: Say hello\nexamples:\n  - hello there\nresponses:\n  - hello.reply\n"
RESPONSE = "passages:\n  - id: hello.reply\n    source: bot\n    text: Hi.\n"
YAML_PIECES = [
    "id: hello\n",
    "examples:\n",
    "  - hi\n",
    "responses: [hello.reply]\n",
    "- ",
    "? ",
    ": ",
    "{",
    "}",
    "[",
    "]",
    "&a ",
    "*a ",
    "!!python/object:os.system ",
    "!!float ",
    "!!binary ",
    "!!set ",
    "!custom ",
    "<<: ",
    "---\n",
    "...\n",
    "'",
    '"',
    "|\n",
    ">-\n",
    "#",
    "\t",
    "  ",
    "\n",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "~",
    "null",
    "yes",
    "1e400",
    "0x",
    "9" * 50,
    "\\",
    "\u2028",
    "\ufeff",
    "\x85",
]
YAMLISH = st.lists(st.sampled_from(YAML_PIECES), max_size=40).map("".join)


def _mutated(draw: st.DrawFn) -> str:
    text = INTENT
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 5))
        text = text[:at] + draw(st.text(max_size=4)) + text[at + cut :]
    return text


MUTATED = st.composite(_mutated)()


def _content_root(base: Path, intent: bytes) -> Path:
    root = base / "content"
    for folder in ("intents", "responses", "source"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "source" / "article.yml").write_text('title: "A test article"\n')
    (root / "responses" / "hello.yml").write_text(RESPONSE)
    (root / "intents" / "hello.yml").write_bytes(intent)
    return root


def _check_problems(root: Path, intent: bytes) -> None:
    catalog, problems = read_content(root)
    # YAML also breaks lines at \r, NEL, U+2028 and U+2029, and numbers lines the same way.
    lines = len(re.split(r"\r\n|[\n\r\x85\u2028\u2029]", intent.decode("utf-8", "replace")))
    for problem in problems:
        assert problem.path.is_relative_to(root), problem
        assert 1 <= problem.line <= lines + 1, problem
        assert problem.level in ("error", "warning") and problem.message, problem
    if catalog is None:
        assert any(problem.level == "error" for problem in problems)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intent=st.one_of(YAMLISH, MUTATED, ANY_TEXT).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_intent_file_loads_or_is_named_with_its_line(tmp_path: Path, intent: bytes) -> None:
    _check_problems(_content_root(tmp_path, intent), intent)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intent=st.binary(max_size=600))
def test_binary_garbage_is_a_named_problem(tmp_path: Path, intent: bytes) -> None:
    _check_problems(_content_root(tmp_path, intent), intent)


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("billion-laughs", _bomb(), "anchors and aliases"),
        ("quadratic-blowup", "a: &a " + "x" * 200_000 + "\nb: [" + ", ".join(["*a"] * 3000) + "]\n", "anchors"),
        ("deep-flow", "[" * (MAX_FILE_BYTES // 2) + "]" * (MAX_FILE_BYTES // 2 - 1), "nested more than"),
        ("deep-block", "".join(" " * i + "- x:\n" for i in range(0, 2 * (MAX_DEPTH + 5), 2)), "nested more than"),
        ("python-object", "id: !!python/object/apply:os.system [echo pwned]\n", "could not determine a constructor"),
        ("bad-float", "id: hello\nexamples: [!!float abc]\n", "cannot be read as !!float"),
        ("huge-integer", "id: " + "9" * 5000 + "\n", "cannot be read as !!int"),
        ("control-character", "id: hello\nexamples:\n  - a\x01b\n", "U+0001"),
    ],
)
def test_hostile_yaml_is_refused_cheaply(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / f"{name}.yml"
    path.write_text(text)
    tracemalloc.start()
    try:
        data, problems = read_yaml(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data is None
    assert len(problems) == 1 and expected in problems[0].message, problems
    assert problems[0].line >= 1
    limit = 4 * len(text) + 1_000_000  # expanded, the bomb would take gigabytes
    assert peak < limit, f"refusing {name} took {peak} bytes at its peak; the file is {len(text)}"


def test_a_problem_points_at_the_line_of_the_bad_character(tmp_path: Path) -> None:
    path = tmp_path / "x.yml"
    path.write_text("id: hello\nexamples:\n  - fine\n  - bad\x07bell\n")
    assert read_yaml(path)[1][0].line == 4
