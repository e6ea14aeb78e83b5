"""Meaning-based matching: example vectors cached by text, reloads that embed only what changed, fusion, fallbacks."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bot.config import Settings
from bot.content import load_catalog
from bot.engine import Engine
from bot.errors import BotError, ConfigError
from bot.matcher import IntentPhrases, Matcher, MatcherSettings
from bot.meaning import MeaningIndex, MeaningSettings, Vectors, load_encoder, vectors_for
from bot.models import Incoming
from bot.store.memory import MemoryStore
from tests.conftest import MINI_CONTENT, SECRET, mode

WORD = re.compile(r"[a-z]+")


class WordEncoder:
    """A small stand-in for the sentence encoder: a hashed bag of words, unit length; it records what it embeds."""

    def __init__(self, knows: dict[str, str] | None = None) -> None:
        self.seen: list[str] = []
        self.fail = False
        self.knows = knows or {}
        """Paraphrases it reads as the sentence they paraphrase, as a real encoder would place them near it."""

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("the model failed")
        self.seen += texts
        rows = np.zeros((len(texts), 384), dtype=np.float32)
        for row, text in enumerate(self.knows.get(text, text) for text in texts):
            for word in WORD.findall(text.lower()):
                rows[row, zlib.crc32(word.encode()) % 384] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1, norms)


CHANGED_MISS = MINI_CONTENT["intents/miss.yml"].replace("  - I keep missing her every day\n", "  - I long for him\n")


async def test_a_reload_that_changes_one_intents_examples_embeds_only_what_changed(
    mini_content: Callable[..., Path],
) -> None:
    encoder = WordEncoder()
    engine = Engine(MemoryStore(), SECRET, load_catalog(mini_content()), vectors=Vectors(encoder))
    assert sorted(encoder.seen) == sorted(["hello there", "good morning to you", *MISS_EXAMPLES])
    encoder.seen.clear()
    changed = load_catalog(mini_content({"intents/miss.yml": CHANGED_MISS}))
    engine.use(changed)
    assert encoder.seen == ["I long for him"]
    assert engine.matcher is not None and engine.matcher.meaning is not None
    await engine.aclose()


MISS_EXAMPLES = ["why do I miss him so much", "I keep missing her every day"]


def test_a_cache_file_spares_the_next_start_all_embedding(tmp_path: Path) -> None:
    first, second = WordEncoder(), WordEncoder()
    texts = ["why do I miss him", "should I go back"]
    vectors = Vectors(first, tmp_path / "vectors.npz").of(texts)
    again = Vectors(second, tmp_path / "vectors.npz")
    assert np.allclose(again.of(texts), vectors, atol=1e-3)
    assert (second.seen, again.embedded) == ([], 0)


def test_every_vector_comes_back_from_a_cache_file_also_when_its_key_ends_in_zero_bytes(tmp_path: Path) -> None:
    texts = [f"message number {number}" for number in range(600)]  # several keys end in a zero byte
    vectors = Vectors(WordEncoder(), tmp_path / "vectors.npz")
    vectors.of(texts)
    assert any(vectors._key(text).endswith(b"\0") for text in texts)
    again = Vectors(WordEncoder(), tmp_path / "vectors.npz")
    again.of(texts)
    assert again.embedded == 0


def test_the_vector_cache_and_the_folder_it_makes_are_its_owners_only(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "data" / "example-vectors.npz"
    Vectors(WordEncoder(), path).of(["why do I miss him"])
    assert (mode(path), mode(path.parent)) == (0o600, 0o700)


def test_vectors_shipped_in_the_models_folder_spare_a_start_embedding_them(tmp_path: Path) -> None:
    class FolderEncoder(WordEncoder):
        folder = tmp_path

    path = Vectors(FolderEncoder()).ship(["why do I miss him", "should I go back"])
    assert path == tmp_path / "example-vectors.npz"
    assert path.stat().st_mode & 0o777 == 0o644
    encoder = FolderEncoder()
    fresh = Vectors(encoder, tmp_path / "cache" / "vectors.npz")
    fresh.of(["why do I miss him", "should I go back", "a new example"])
    assert encoder.seen == ["a new example"]


def test_vectors_that_cannot_be_shipped_say_so_and_leave_nothing_half_written(tmp_path: Path) -> None:
    class FolderEncoder(WordEncoder):
        folder = tmp_path

    (tmp_path / "example-vectors.npz").mkdir()  # in the way of the new file, even for root
    (tmp_path / "example-vectors.npz" / "kept").write_text("")
    with pytest.raises(BotError, match=r"could not write .*example-vectors\.npz \(.+\); nothing was changed there"):
        Vectors(FolderEncoder()).ship(["why do I miss him", "should I go back"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["example-vectors.npz"]  # no temporary file left


def test_the_shipped_vectors_hold_every_example_of_the_shipped_content() -> None:
    model = load_encoder()
    if isinstance(model, Exception):
        pytest.fail(f"the shipped model does not load: {model}")
    catalog = load_catalog(Settings.from_env({}).content_dir)
    texts = [example.text for intent in catalog.intents.values() for example in intent.examples]
    vectors = Vectors(model)
    missing = [text for text in texts if vectors._key(text) not in vectors._known]
    assert not missing, (
        f"{len(missing)} examples have no shipped vector (first: {missing[0]!r}); run `make vectors` "
        "(python -m bot safety vectors) and commit bot/model/files/example-vectors.npz"
    )


def test_a_cache_file_from_another_model_is_not_read_as_this_ones(tmp_path: Path) -> None:
    class OtherEncoder(WordEncoder):
        pass

    Vectors(WordEncoder(), tmp_path / "vectors.npz").of(["why do I miss him"])
    other = OtherEncoder()
    Vectors(other, tmp_path / "vectors.npz").of(["why do I miss him"])
    assert other.seen == ["why do I miss him"]


def test_an_unreadable_cache_file_is_embedded_afresh(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "vectors.npz").write_bytes(b"not a cache")
    encoder = WordEncoder()
    with caplog.at_level(logging.WARNING):
        Vectors(encoder, tmp_path / "vectors.npz").of(["why do I miss him"])
    assert encoder.seen == ["why do I miss him"]
    assert "cannot be read" in caplog.text


INTENTS = [
    IntentPhrases("miss_them", ("why do I miss her if it was so bad", "I keep missing him")),
    IntentPhrases("go_back", ("should I go back to him", "I want to return to her")),
    IntentPhrases("greeting", ("hi", "hello"), whole_only=True),
]


PARAPHRASE = "my heart still aches for that woman after everything"


def index(encoder: WordEncoder) -> MeaningIndex:
    return MeaningIndex(Vectors(encoder), [(i.intent, i.examples) for i in INTENTS])


def test_meaning_lifts_a_paraphrase_the_fuzzy_scorers_miss() -> None:
    encoder = WordEncoder({PARAPHRASE: "why do I miss her if it was so bad"})
    settings = MatcherSettings(meaning=MeaningSettings(weight=0.7))
    alone, fused = Matcher(INTENTS, settings), Matcher(INTENTS, settings, meaning=index(encoder))
    assert alone.match(PARAPHRASE).intent is None
    match = fused.match(PARAPHRASE)
    assert match.intent == "miss_them"
    best = match.candidates[0]
    assert best.nearest == "why do I miss her if it was so bad" and best.meaning == 100.0
    assert best.fuzzy is not None and best.fuzzy < best.score


def test_the_threshold_and_honest_fallback_still_hold_with_meaning() -> None:
    fused = Matcher(INTENTS, meaning=index(WordEncoder()))
    assert fused.match("what is the weather like in paris").intent is None
    strict = Matcher(INTENTS, MatcherSettings(threshold=101.0), meaning=index(WordEncoder()))
    assert strict.match("why do I miss her if it was so bad").reason == "low_confidence"


def test_a_model_failing_on_a_message_leaves_the_fuzzy_answer(caplog: pytest.LogCaptureFixture) -> None:
    encoder = WordEncoder()
    fused = Matcher(INTENTS, meaning=index(encoder))
    encoder.fail = True
    with caplog.at_level(logging.ERROR):
        match = fused.match("should I go back to him")
    assert (match.intent, match.score) == ("go_back", 100.0)
    assert match.candidates[0].meaning is None
    assert "meaning-based matching failed" in caplog.text


async def test_without_a_loadable_model_the_bot_matches_as_it_did(tmp_path: Path, catalog) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    assert isinstance(load_encoder(empty), Exception)
    assert vectors_for(str(empty)) is None
    assert vectors_for("off") is None
    engine = Engine(MemoryStore(), SECRET, catalog, vectors=vectors_for(str(empty)))
    plain = Matcher(catalog.phrases())
    for text in ("why do I miss him", "what is the weather", "should I go back to her"):
        outcome = await engine.handle(Incoming("someone", text, "test"))
        assert outcome.match == plain.match(text)
    await engine.aclose()


def test_the_model_folder_is_a_setting(tmp_path: Path) -> None:
    assert Settings.from_env({}).meaning_model is None
    assert Settings.from_env({"UNHOOKED_MEANING_MODEL": "off"}).meaning_model == "off"
    assert Settings.from_env({"UNHOOKED_MEANING_MODEL": str(tmp_path)}).meaning_model == str(tmp_path)
    with pytest.raises(ConfigError, match="UNHOOKED_MEANING_MODEL"):
        Settings.from_env({"UNHOOKED_MEANING_MODEL": str(tmp_path / "missing")})
    assert Settings.from_env({"UNHOOKED_DB": ":memory:"}).vector_cache is None


MODEL = os.environ.get("UNHOOKED_MEANING_MODEL") or None


def test_the_model_embeds_a_message_the_crisis_head_just_read_without_running_again() -> None:
    model = load_encoder(Path(MODEL) if MODEL and MODEL != "off" else None)
    if isinstance(model, Exception):
        pytest.skip(f"no model to run: set UNHOOKED_MEANING_MODEL to a model folder ({model})")
    text = "why do I miss him when he was so cruel to me"
    fresh = model.embed([text])
    runs = []
    run = model._run
    model._run = lambda windows, want=(True, True): runs.append(windows) or run(windows, want)
    try:
        model.probabilities([text])
        again = model.embed([text])
    finally:
        del model._run
    assert len(runs) == 1
    assert np.allclose(again, fresh, atol=1e-5)
    assert np.isclose(np.linalg.norm(again[0]), 1.0, atol=1e-3)


def test_explain_names_each_scorers_share_and_the_examples_file_and_line(catalog) -> None:
    from bot import explain
    from bot.engine import Outcome

    encoder = WordEncoder()
    matcher = Matcher(
        catalog.phrases(),
        meaning=MeaningIndex(
            Vectors(encoder), [(i.id, [e.text for e in i.examples]) for i in catalog.intents.values()]
        ),
    )
    match = matcher.match("why do I still miss him")
    text = explain.as_text("why do I still miss him", Outcome((), match), match, catalog, 0.4)
    first = text.splitlines().index("top intents:") + 1
    lines = text.splitlines()[first : first + 3]
    assert lines[0].split()[:3] == ["1.", "miss_them", "100.0"] and "intents/miss_them.yml:" in lines[0]
    assert lines[1].split() == ["fuzzy", "100.0", "x", "0.60", "=", "60.0"]
    assert lines[2].split()[:6] == ["meaning", "100.0", "x", "0.40", "=", "40.0"] and "nearest" in lines[2]
    document = explain.as_json("why do I still miss him", Outcome((), match), match, catalog, 0.4)
    best = document["candidates"][0]
    assert (best["fuzzy"], best["meaning"], best["meaning_weight"]) == (100.0, 100.0, 0.4)
    assert best["nearest_at"].startswith("intents/miss_them.yml:")


def test_eval_shows_per_intent_where_meaning_and_fuzzy_disagree(catalog) -> None:
    from bot.conversations import Sentence
    from bot.evaluate import Result
    from bot.understanding import disagreement_report, disagreements

    knows = {"the weather is grey and so am i": "I long for him every day"}
    index = MeaningIndex(
        Vectors(WordEncoder(knows)), [(i.id, [e.text for e in i.examples]) for i in catalog.intents.values()]
    )
    sentences = [Sentence("the weather is grey and so am i", "miss_them", Path("x.yaml"), 1),
                 Sentence("why do I miss him", "miss_them", Path("x.yaml"), 2)]  # fmt: skip
    results = [Result(sentence, None, 0.0, "low_confidence", None) for sentence in sentences]
    found = {d.intent: d for d in disagreements(catalog, results, index)}
    assert (found["miss_them"].sentences, found["miss_them"].disagree, found["miss_them"].meaning_right) == (2, 1, 1)
    assert found["miss_them"].texts == ("the weather is grey and so am i",)
    assert "miss_them" in disagreement_report(list(found.values()))


async def test_the_bot_answers_by_rapidfuzz_while_the_examples_are_embedded_then_by_meaning_too(catalog) -> None:
    engine = Engine(MemoryStore(), SECRET, catalog)
    assert engine.matcher is not None and engine.matcher.meaning is None
    encoder = WordEncoder()
    learning = asyncio.create_task(engine.learn_meaning(Vectors(encoder)))
    first = await engine.handle(Incoming("someone", "why do I miss him", "test"))
    assert first.match is not None and first.match.candidates[0].meaning is None
    await learning
    assert engine.matcher.meaning is not None and len(encoder.seen) >= 1000
    later = await engine.handle(Incoming("someone else", "why do I miss him", "test"))
    assert later.match is not None and later.match.candidates[0].meaning is not None
    await engine.aclose()
