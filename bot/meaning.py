"""Meaning-based matching: sentence embeddings of the intents' examples, and the nearest example to a message.

The encoder is the learned crisis screen's model (``bot.model.runtime.CrisisModel``), whose topic
branch is stock all-MiniLM-L6-v2 over the crisis head's shared bottom: one model in memory and one pass
serve both. Examples are embedded when content loads; their vectors are kept by a hash of their text,
so a reload embeds only the examples that changed, and with a cache file a restart embeds none. A
message is compared with every example by cosine similarity; each intent keeps its nearest example.
On a large catalogue each intent's mean vector picks the intents worth comparing first.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from bot import private
from bot.errors import BotError
from bot.models import Candidate, Intent

log = logging.getLogger("unhooked.meaning")

BATCH = 64
"""Examples embedded per call of the encoder."""
SHORTLIST = 48
"""On a catalogue of more intents than this, only the intents whose mean vector is nearest are compared."""
OFF = "off"
"""``UNHOOKED_MEANING_MODEL=off``: match by rapidfuzz alone."""
KEY_BYTES = 20
"""A vector's key: the SHA-1 of the model's checksum and the example's text."""
SHIPPED = "example-vectors.npz"
"""In a model's folder: its vectors of the shipped content's examples (``python -m bot safety vectors``)."""


@dataclass(frozen=True)
class MeaningSettings:
    """How the nearest example's cosine similarity becomes a score, and its share beside rapidfuzz's."""

    weight: float = 0.55
    """An intent's score is this share of its meaning score, the rest its fuzzy score."""
    floor: float = 0.0
    """The cosine similarity to the nearest example that counts as a meaning score of 0."""
    full: float = 0.8
    """The cosine similarity that counts as a meaning score of 100 (a close paraphrase, for stock MiniLM)."""
    fuzzy_floor: float = 40.0
    """The fuzzy score of an intent the fuzzy scorers did not find at all."""


class Encoder(Protocol):
    """What meaning-based matching needs of a model: unit-length sentence embeddings, one row per text."""

    def embed(self, texts: list[str]) -> np.ndarray: ...


def load_encoder(folder: Path | None = None) -> Encoder | Exception:
    """The model in ``folder`` (the package's own when ``None``): the crisis screen's own instance, or the error."""
    from bot.crisis import load_model

    return load_model(folder)  # type: ignore[return-value]


def vectors_for(model: str | None, cache_file: Path | None = None) -> Vectors | None:
    """Example vectors over the configured model (``None``: the shipped one), or ``None`` when off or unloadable."""
    if model == OFF:
        return None
    encoder = load_encoder(Path(model) if model else None)
    if isinstance(encoder, Exception):
        log.warning("meaning-based matching is off, rapidfuzz matches alone: %s", encoder)
        return None
    return Vectors(encoder, cache_file)


class Vectors:
    """Example vectors by a hash of their text, embedded once per process (and per cache file)."""

    def __init__(self, encoder: Encoder, cache_file: Path | None = None) -> None:
        self.encoder = encoder
        self.cache_file = cache_file
        card = getattr(encoder, "card", None)
        self._salt = str(getattr(card, "model_sha256", type(encoder).__name__)).encode() + b"\0"
        """Vectors are kept by model and text: a cache file written with another model is never read as this one's."""
        self._known: dict[bytes, np.ndarray] = {}
        self._lock = threading.Lock()
        """Examples are embedded on a worker thread at start and on the event loop at a reload."""
        self.embedded = 0
        """How many texts this process has embedded (the rest came from memory or the cache file)."""
        folder = getattr(encoder, "folder", None)
        if folder is not None:
            self._read(Path(folder) / SHIPPED)
        if cache_file is not None:
            self._read(cache_file)

    def _key(self, text: str) -> bytes:
        return hashlib.sha1(self._salt + text.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()

    def _read(self, path: Path) -> None:
        if not path.exists():
            return
        try:
            with np.load(path) as data:
                keys, rows = data["keys"], data["vectors"]
            # numpy's fixed-width bytes drop a digest's trailing zero bytes; put them back
            known = (
                (bytes(key).ljust(KEY_BYTES, b"\0"), row.astype(np.float32))
                for key, row in zip(keys, rows, strict=True)
            )
            self._known.update(known)
        except (OSError, ValueError, KeyError) as error:
            log.warning("the vector cache %s cannot be read (%s); examples are embedded afresh", path, error)

    def _write(self, path: Path, only: Sequence[bytes] | None = None) -> OSError | None:
        """Write the vectors (``only`` those keys) to ``path`` whole or not at all; the error if it could not."""
        chosen = list(self._known) if only is None else only
        keys = np.array(chosen, dtype=f"S{KEY_BYTES}")
        rows = np.array([self._known[key] for key in chosen], dtype=np.float16)
        try:
            private.make_folder(path.parent)  # the database's folder, if the cache is written first
            # owner-only (0600), like every file mkstemp makes
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".npz")
        except OSError as error:
            log.warning("could not write the vector cache %s: %s", path, error)
            return error
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, keys=keys, vectors=rows)
            Path(temporary).replace(path)
        except OSError as error:
            Path(temporary).unlink(missing_ok=True)
            log.warning("could not write the vector cache %s: %s", path, error)
            return error
        return None

    def ship(self, texts: Sequence[str]) -> Path:
        """Write the vectors of ``texts`` (only theirs) into the model's folder, for every later start; return it."""
        folder = getattr(self.encoder, "folder", None)
        if folder is None:
            raise ValueError("this encoder has no folder to keep its vectors in")
        with self._lock:
            self._of(texts)
            path = Path(folder) / SHIPPED
            failed = self._write(path, list(dict.fromkeys(self._key(text) for text in texts)))
        if failed is not None:
            raise BotError(f"could not write {path} ({failed.strerror or failed}); nothing was changed there")
        path.chmod(0o644)  # a package file: readable by the service's own user wherever it is installed
        return path

    def of(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts`` (rows in order), embedding only those never seen before."""
        with self._lock:
            return self._of(texts)

    def _of(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(text) for text in texts]
        missing = list(dict.fromkeys(key for key in keys if key not in self._known))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            for start in range(0, len(missing), BATCH):
                chunk = missing[start : start + BATCH]
                rows = self.encoder.embed([by_key[key] for key in chunk])
                self._known.update(zip(chunk, np.asarray(rows, dtype=np.float32), strict=True))
            self.embedded += len(missing)
            if self.cache_file is not None:
                self._write(self.cache_file)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._known[key] for key in keys])


def index_of(intents: Iterable[Intent], vectors: Vectors | None) -> MeaningIndex | None:
    """The intents' examples by meaning (only those not embedded yet are embedded), or ``None`` without vectors."""
    if vectors is None:
        return None
    return MeaningIndex(vectors, [(intent.id, [e.text for e in intent.examples]) for intent in intents])


class _Remembering:
    """An encoder that keeps each text's vector: only ever for test sentences, never for people's messages."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self._seen: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in self._seen]
        if missing:
            self._seen.update(zip(missing, np.asarray(self.encoder.embed(missing)), strict=True))
        return np.array([self._seen[text] for text in texts])


class _Examples:
    """An encoder for the content's own examples read as messages: their vectors come from, and stay in, ``vectors``."""

    def __init__(self, vectors: Vectors) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.vectors.of(texts)


def examples_index(vectors: Vectors, intents: Iterable[tuple[str, Sequence[str]]]) -> MeaningIndex:
    """An index that reads examples as messages (``python -m bot check``): each embedded once, never people's words."""
    index = MeaningIndex(vectors, intents)
    index.encoder = _Examples(vectors)
    return index


@dataclass(frozen=True)
class Nearest:
    """An intent's nearest example to a message, and their cosine similarity."""

    similarity: float
    example: str


class MeaningIndex:
    """Every example's vector, grouped by intent, for finding each intent's nearest example to a message."""

    def __init__(self, vectors: Vectors, intents: Iterable[tuple[str, Sequence[str]]]) -> None:
        self.encoder = vectors.encoder
        owners, texts = [], []
        for intent, examples in intents:
            owners += [intent] * len(examples)
            texts += list(examples)
        self._texts = texts
        self._intents = list(dict.fromkeys(owners))
        order = {intent: at for at, intent in enumerate(self._intents)}
        self._owner = np.array([order[owner] for owner in owners], dtype=np.int64)
        self._matrix = vectors.of(texts) if texts else np.zeros((0, 384), dtype=np.float32)
        self._starts = np.searchsorted(self._owner, np.arange(len(self._intents)))
        means = np.add.reduceat(self._matrix, self._starts, axis=0) if texts else self._matrix
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        self._means = means / np.where(norms == 0, 1, norms)

    def embed(self, texts: list[str]) -> np.ndarray:
        """The vectors of messages or sentences (never cached: people's words are not kept)."""
        return np.asarray(self.encoder.embed(texts), dtype=np.float32)

    def remembering(self) -> MeaningIndex:
        """A copy whose encoder keeps what it embeds: for a sweep that reads the test sentences again."""
        twin = copy.copy(self)
        twin.encoder = _Remembering(self.encoder)
        return twin

    def nearest(self, query: np.ndarray, only: Iterable[str] | None = None) -> dict[str, Nearest]:
        """Each intent's nearest example to one message vector (a shortlist of intents on a large catalogue)."""
        if not self._texts:
            return {}
        picked = range(len(self._intents))
        if len(self._intents) > SHORTLIST:
            picked = np.argsort(self._means @ query)[-SHORTLIST:]
        if only is not None:
            allowed = set(only)
            picked = [at for at in picked if self._intents[at] in allowed]
        found = {}
        for at in picked:
            start = self._starts[at]
            end = self._starts[at + 1] if at + 1 < len(self._starts) else len(self._texts)
            sims = self._matrix[start:end] @ query
            best = int(np.argmax(sims))
            found[self._intents[at]] = Nearest(float(sims[best]), self._texts[start + best])
        return found


MAX_QUESTIONS = 1
"""Besides the whole message, at most this many of its sentences that ask are embedded."""


def meaning_score(similarity: float, settings: MeaningSettings) -> float:
    """A cosine similarity on the fuzzy scorers' scale: ``settings.floor`` is 0, ``settings.full`` is 100."""
    span = settings.full - settings.floor
    return 100.0 * min(1.0, max(0.0, (similarity - settings.floor) / span))


def fuse(
    index: MeaningIndex,
    settings: MeaningSettings,
    fuzzy: dict[str, tuple[float, str]],
    texts: list[str],
    whole_only: set[str],
) -> list[Candidate]:
    """Every intent's fused score, best first: ``settings.weight`` of its meaning score, the rest its fuzzy score.

    ``texts`` is the whole message, then sentences of it that ask; small talk (``whole_only``) is
    compared with the whole message only. An intent the fuzzy scorers did not find counts
    ``settings.fuzzy_floor`` there; one the meaning scorer did not compare (outside the shortlist) counts 0.
    """
    vectors = index.embed(texts[: 1 + MAX_QUESTIONS])
    near = index.nearest(vectors[0])
    for vector in vectors[1:]:
        for intent, found in index.nearest(vector).items():
            if intent not in whole_only and found.similarity > near.get(intent, _FAR).similarity:
                near[intent] = found
    weight = settings.weight
    ranked = []
    for intent in {*fuzzy, *near}:
        score, example = fuzzy.get(intent, (settings.fuzzy_floor, ""))
        found = near.get(intent, _FAR)
        meaning = meaning_score(found.similarity, settings)
        fused = (1 - weight) * score + weight * meaning
        shown = example or f"meaning: {found.example}"
        ranked.append(Candidate(intent, round(fused, 1), shown, round(score, 1), round(meaning, 1), found.example))
    return sorted(ranked, key=lambda candidate: candidate.score, reverse=True)


_FAR = Nearest(-1.0, "")
