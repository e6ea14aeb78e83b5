"""Deterministic synthetic content and message mixes, grown from the shipped content for benchmarks."""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from bot.content import Catalog
from bot.matcher import STOPWORDS

SEED = 20_240_601
"""Every generated catalogue and mix starts from this seed, so runs compare like with like."""

CRISIS_MESSAGES = (
    "I want to die",
    "i just want to kill myself tonight",
    "honestly i wish i was dead",
    "he said he will kill me if i leave",
    "i have been cutting myself again",
)
OFF_TOPIC = (
    "what's the weather like tomorrow",
    "can you recommend a good pizza place",
    "asdfgh qwerty",
    "ok",
    "lol",
    "my cat knocked over a plant",
)
PREFIXES = ("", "", "", "honestly ", "so ", "it has been months and ", "sorry to bother you but ")
_WORD = re.compile(r"[a-z]{4,}")


def vocabulary(root: Path) -> list[str]:
    """Content words of the article, sorted: the words synthetic intents are made of."""
    text = (root / "source" / "trauma-bonding-article.txt").read_text(encoding="utf-8").lower()
    return sorted(set(_WORD.findall(text)) - STOPWORDS)


def _variant(example: str, vocab: list[str], rng: random.Random) -> str:
    """The example with about three in four of its content words swapped for article words, and maybe one more."""
    words = example.split()
    out = [rng.choice(vocab) if word.lower() not in STOPWORDS and rng.random() < 0.75 else word for word in words]
    if rng.random() < 0.5:
        out.insert(rng.randrange(len(out) + 1), rng.choice(vocab))
    return " ".join(out)


def scaled_content(shipped: Path, factor: int, into: Path) -> Path:
    """Write a content tree with ``factor`` times the shipped intents into ``into``; return its root.

    The shipped files are copied as they are. Each extra intent is a variant of a shipped one:
    the same number of examples and keywords, with content words swapped for words of the
    article, answering with the shipped intent's passages. ``factor=1`` is the shipped content.
    """
    if factor < 1:
        raise ValueError("factor must be 1 or more")
    root = into / f"content-x{factor}"
    if root.exists():
        shutil.rmtree(root)
    for folder in ("intents", "responses", "source"):
        shutil.copytree(shipped / folder, root / folder)
    rng = random.Random(f"{SEED}-{factor}")
    vocab = vocabulary(shipped)
    originals = sorted((root / "intents").glob("*.yml"))
    for copy in range(1, factor):
        for path in originals:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            intent_id = f"{data['id']}_x{copy}"
            extra = {
                "id": intent_id,
                "examples": [_variant(example, vocab, rng) for example in data["examples"]],
                "responses": list(data.get("responses") or []),
            }
            if data.get("action") == "continue":
                extra["action"] = "continue"
            if data.get("keywords"):
                extra["keywords"] = [f"{rng.choice(vocab)} {rng.choice(vocab)}" for _ in data["keywords"]]
            (root / "intents" / f"{intent_id}.yml").write_text(yaml.safe_dump(extra, sort_keys=False), "utf-8")
    return root


def _typo(text: str, rng: random.Random) -> str:
    if len(text) < 6:
        return text
    at = rng.randrange(1, len(text) - 1)
    kind = rng.random()
    if kind < 0.4:
        return text[:at] + text[at + 1 :]
    if kind < 0.8:
        return text[: at - 1] + text[at] + text[at - 1] + text[at + 1 :]
    return text[:at] + text[at] + text[at:]


@dataclass(frozen=True)
class Message:
    """One benchmark message: who sends it, what, and whether it is a button tap."""

    user: str
    text: str
    topic: str | None = None
    kind: str = "question"
    """``question``, ``button``, ``fallback``, ``crisis`` or ``long``."""


def message_mix(catalog: Catalog, count: int, users: int, seed: int = SEED) -> list[Message]:
    """A realistic mix: mostly questions with typos, some button taps, fallbacks, a few crises and long messages.

    Shares: 70% questions (an example of any intent, often with a typo or a lead-in), 8% button
    taps, 15% off-topic or unclear messages, 2% crisis messages, 5% long messages (a paragraph
    ending in a question). Senders are drawn from ``users`` people, a few of them much more
    talkative than the rest, as in a real chat.
    """
    rng = random.Random(f"{seed}-{count}-{users}-{len(catalog.intents)}")
    examples = [example.text for intent in catalog.intents.values() for example in intent.examples]
    menu = [intent.id for intent in catalog.menu()] or list(catalog.intents)
    vocab = sorted({word for example in examples for word in example.lower().split()})
    people = [f"user-{number}" for number in range(users)]
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(users)]
    mix = []
    for sender in rng.choices(people, weights, k=count):
        roll = rng.random()
        if roll < 0.70:
            text = rng.choice(PREFIXES) + rng.choice(examples)
            mix.append(Message(sender, _typo(text, rng) if rng.random() < 0.5 else text))
        elif roll < 0.78:
            topic = rng.choice(menu)
            mix.append(Message(sender, catalog.intents[topic].title or topic, topic, "button"))
        elif roll < 0.93:
            text = rng.choice(OFF_TOPIC) if rng.random() < 0.5 else " ".join(rng.sample(vocab, rng.randint(2, 7)))
            mix.append(Message(sender, text, kind="fallback"))
        elif roll < 0.95:
            mix.append(Message(sender, rng.choice(CRISIS_MESSAGES), kind="crisis"))
        else:
            filler = " ".join(rng.choices(vocab, k=rng.randint(60, 160)))
            mix.append(Message(sender, f"{filler}. {rng.choice(examples)}", kind="long"))
    return mix
