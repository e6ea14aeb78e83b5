"""The learned crisis screen at run time: ONNX Runtime and ``tokenizers``, no PyTorch."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.lexicon import CONFUSABLES, TRACKS
from bot.model.corpus import LABELS, NONE
from bot.models import Detection, Level, Track
from bot.normalize import fold

log = logging.getLogger("unhooked.model")

FILES = Path(__file__).parent / "files"
"""Where the package keeps the shipped model: ``crisis.onnx``, ``tokenizer.json`` and ``card.json``."""
MODEL, TOKENIZER, CARD = "crisis.onnx", "tokenizer.json", "card.json"
MAX_TOKENS = 128
"""A message up to this many tokens is read whole; a longer one in overlapping windows."""
WINDOW, STRIDE = 64, 48
"""Tokens per window of a long message, and how far each window starts after the one before."""
IMMINENT_CATEGORIES = frozenset({"attempt"})
"""Categories whose confident detection is imminent: an attempt told by what was done calls for 911 too."""
CONCERN_CATEGORIES = frozenset({"hopelessness"})
"""Categories that stay a gentle check-in however confident the model is (risk factors, not ideation)."""

OUTPUTS = ("probs", "topic")
"""The graph's outputs: the crisis head's label probabilities, and the topic embedding (``bot.model.export``)."""
WANTS = ("want_probs", "want_topic")
"""The graph's flags, one per output: a head not wanted is not run, and its output comes back empty.

Windows after a long message's first need only the crisis head, and a text only embedded needs only the topic
layers; each head is a third of the graph. A graph without the flags (the full-precision export) runs both."""
RECENT = 4096
"""``probabilities`` keeps this many recent texts' topic embeddings for ``embed``: one pass serves both, even
when a burst of updates is screened as it arrives, long before the engine answers (and embeds) each."""
CALL_TOKENS = 256
"""A batch of windows goes through the graph in calls of at most this many tokens, padding included: windows
of like length together, so that few pads are read and the weights are streamed once for many windows."""

_REPEATS = re.compile(r"(.)\1{2,}")


class ModelError(RuntimeError):
    """The model files are missing, unreadable or not the ones their card describes."""


def model_text(text: str) -> str:
    """The text as the model reads it, in training and at run time alike: folded, look-alikes undone, runs cut."""
    return _REPEATS.sub(r"\1\1", fold(text).translate(CONFUSABLES))


@dataclass(frozen=True)
class Card:
    """What ``card.json`` records about the shipped model: labels, thresholds and how it was made."""

    labels: tuple[str, ...]
    concern: float
    """A crisis score at or above this gets the gentle check-in that asks about suicide and names 988."""
    crisis: float
    """A crisis score at or above this gets the crisis reply and an escalation."""
    others: float
    """The share of the crisis score on the partner-danger track above which the reply shows that track too."""
    model_sha256: str
    version: str
    raw: dict[str, object]

    @classmethod
    def read(cls, path: Path) -> Card:
        """Read and check ``card.json``; raises ``ModelError`` with a sentence."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            card = cls(
                tuple(raw["labels"]),
                float(raw["thresholds"]["concern"]),
                float(raw["thresholds"]["crisis"]),
                float(raw["thresholds"]["others"]),
                str(raw["model_sha256"]),
                str(raw["version"]),
                raw,
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ModelError(f"{path} cannot be read as the model's card: {error}") from None
        if card.labels != LABELS:
            raise ModelError(f"{path} names labels {card.labels}, but this version predicts {LABELS}")
        if not 0 < card.concern <= card.crisis < 1:
            raise ModelError(f"{path}: thresholds must satisfy 0 < concern <= crisis < 1")
        return card


@dataclass(frozen=True)
class Assessment:
    """The model's reading of one message: its crisis score and the most likely category."""

    score: float
    """One minus the probability of "not a crisis", in the window that scored highest."""
    category: str
    others: float
    """The share of that window's crisis probability on the partner-danger track."""


def open_session(model: bytes | Path) -> object:
    """An ONNX Runtime session on one thread (ONNX Runtime folds the stored casts back to float32 here).

    Given a path, ONNX Runtime reads the file itself: the process never holds the file's bytes beside the
    unpacked weights (40 MB less at its peak).
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    source = str(model) if isinstance(model, Path) else model
    return onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def inputs(windows: list[list[int]], want: tuple[bool, bool] | None = None) -> dict[str, np.ndarray]:
    """The graph's inputs for windows of token ids: padded to the longest, with the attention mask.

    With ``want``, the flags too (``WANTS``: which outputs to run), for a graph that has them (``has_wants``).
    """
    longest = max(len(window) for window in windows)
    ids = np.zeros((len(windows), longest), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, window in enumerate(windows):
        ids[row, : len(window)] = window
        mask[row, : len(window)] = 1
    flags = {} if want is None else {name: np.array(wanted) for name, wanted in zip(WANTS, want, strict=True)}
    return {"input_ids": ids, "attention_mask": mask, **flags}


def has_wants(session: object) -> bool:
    """Whether a session's graph takes the flags that choose its outputs (``WANTS``)."""
    return set(WANTS) <= {item.name for item in session.get_inputs()}  # type: ignore[attr-defined]


class CrisisModel:
    """One graph, two heads over a shared bottom: crisis probabilities, and the topic embedding for matching.

    ``detect`` adds to the lexicon, never lowers it; ``embed`` gives the topic embedding.
    """

    def __init__(self, folder: Path = FILES) -> None:
        from tokenizers import Tokenizer

        self.folder = folder
        self.card = Card.read(folder / CARD)
        try:
            with (folder / MODEL).open("rb") as file:
                digest = hashlib.file_digest(file, "sha256").hexdigest()
        except OSError as error:
            raise ModelError(f"{folder / MODEL} cannot be read: {error}") from None
        if digest != self.card.model_sha256:
            raise ModelError(f"{folder / MODEL} is not the model its card describes (the checksum differs)")
        try:
            self._session = open_session(folder / MODEL)
            self._tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        except Exception as error:
            raise ModelError(f"the model in {folder} cannot be loaded: {error}") from None
        missing = set(OUTPUTS) - {output.name for output in self._session.get_outputs()}  # type: ignore[attr-defined]
        if missing:
            raise ModelError(
                f"{folder / MODEL} has no {', '.join(sorted(missing))} output (a model from before the topic "
                "embedding); remake it with `python -m bot safety rebuild`"
            )
        self._wants = has_wants(self._session)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._cls, self._sep = self._tokenizer.token_to_id("[CLS]"), self._tokenizer.token_to_id("[SEP]")
        self._tracks = np.array([TRACKS.get(label) is Track.OTHERS for label in LABELS])
        self._recent: OrderedDict[int, np.ndarray] = OrderedDict()
        """A text's hash (never the text) -> its first window's topic embedding, from a recent ``probabilities``."""
        self._lock = threading.Lock()
        """Guards ``_recent``: the crisis screen may run ``probabilities`` on a thread of its own."""

    def _windows(self, text: str) -> list[list[int]]:
        ids = self._tokenizer.encode(model_text(text), add_special_tokens=False).ids
        if len(ids) <= MAX_TOKENS - 2:
            return [[self._cls, *ids, self._sep]]
        starts = range(0, max(len(ids) - WINDOW, 0) + STRIDE, STRIDE)
        return [[self._cls, *ids[start : start + WINDOW], self._sep] for start in starts]

    def _run(self, windows: list[list[int]], want: tuple[bool, bool] = (True, True)) -> tuple[np.ndarray, np.ndarray]:
        """The outputs ``want`` asks for (probabilities, topic) for every window, in order; like lengths together.

        An output not asked for comes back as an empty array when the graph has the flags (``WANTS``).
        """
        order = sorted(range(len(windows)), key=lambda at: len(windows[at]))
        found: list[list[np.ndarray]] = [[np.empty(0)] * len(windows) for _ in OUTPUTS]
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end + 1 - start) * len(windows[order[end]]) <= CALL_TOKENS:
                end += 1
            chunk = order[start:end]
            feed = inputs([windows[at] for at in chunk], want if self._wants else None)
            results = self._session.run(list(OUTPUTS), feed)  # type: ignore[attr-defined]
            for kept, result, wanted in zip(found, results, want, strict=True):
                if wanted:
                    for row, at in enumerate(chunk):
                        kept[at] = result[row]
            start = end
        return np.array(found[0]), np.array(found[1])

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """Each text's label probabilities, from its highest-scoring window (rows in ``LABELS`` order).

        Each text's first window runs both heads (its topic embedding is kept for ``embed``); the windows after
        it, the crisis head alone.
        """
        windows = [self._windows(text) for text in texts]
        firsts, embeddings = self._run([group[0] for group in windows])
        later = [window for group in windows for window in group[1:]]
        rest = self._run(later, (True, False))[0] if later else np.empty((0, len(LABELS)))
        rows, at = [], 0
        for number, (text, group) in enumerate(zip(texts, windows, strict=True)):
            chunk = np.array([firsts[number], *rest[at : at + len(group) - 1]])
            rows.append(chunk[int(np.argmin(chunk[:, 0]))])
            self._remember(hash(text), embeddings[number])
            at += len(group) - 1
        return np.array(rows)

    def _remember(self, key: int, embedding: np.ndarray) -> None:
        with self._lock:
            self._recent[key] = embedding
            self._recent.move_to_end(key)
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length topic embeddings (the base model's, mean-pooled; a long text by its first window).

        A text the crisis head just read is not run again: its topic embedding came out of the same pass.
        """
        with self._lock:
            found = {key: self._recent[key] for key in map(hash, texts) if key in self._recent}
        missing = [text for text in dict.fromkeys(texts) if hash(text) not in found]
        if missing:
            _, embeddings = self._run([self._windows(text)[0] for text in missing], (False, True))
            found.update(zip(map(hash, missing), embeddings, strict=True))
        return np.array([found[hash(text)] for text in texts])

    def assess(self, texts: list[str]) -> list[Assessment]:
        """The crisis score and category of each message, in one pass over them all."""
        found = []
        for row in self.probabilities(texts):
            score = float(1.0 - row[0])
            others = float(row[self._tracks].sum() / score) if score > 0 else 0.0
            found.append(Assessment(score, LABELS[1 + int(np.argmax(row[1:]))], others))
        return found

    def detect(self, texts: list[str]) -> list[Detection | None]:
        """The model's detection for each of ``texts`` (``None`` below the concern threshold), in one pass."""
        return [self._decide(found) for found in self.assess(texts)]

    def _decide(self, found: Assessment) -> Detection | None:
        card = self.card
        if found.score < card.concern or found.category == NONE:
            return None
        if found.score < card.crisis or found.category in CONCERN_CATEGORIES:
            level = Level.CONCERN
        else:
            level = Level.IMMINENT if found.category in IMMINENT_CATEGORIES else Level.CRISIS
        track = Track.OTHERS if found.others >= card.others else TRACKS[found.category]
        return Detection(level, found.category, f"model.{found.category}", track)
