"""What ``python -m bot match`` shows of a message: the engine's outcome as JSON or text, and the matcher's view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.content import Catalog
from bot.engine import Engine, Outcome
from bot.matcher import tokens_of
from bot.models import Candidate, Match


def here(path: Path) -> Path:
    """``path`` relative to the working folder when it lies inside it, so problems read ``intents/x.yml:3``."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def where(catalog: Catalog | None, candidate: Candidate, example: str | None) -> str | None:
    """The ``file:line`` of an intent's example (or, for a keyword, of the intent's file)."""
    intent = catalog.intents.get(candidate.intent) if catalog else None
    if intent is None or not example:
        return None
    if example.startswith("keyword: "):
        return f"{here(intent.path)}:{intent.line}"
    return next((f"{here(intent.path)}:{e.line}" for e in intent.examples if e.text == example), None)


def _scorers(candidate: Candidate, catalog: Catalog | None, weight: float) -> dict[str, Any]:
    """What each scorer gave one candidate, and the examples behind them."""
    found: dict[str, Any] = {"example_at": where(catalog, candidate, candidate.example)}
    if candidate.meaning is not None:
        found |= {
            "fuzzy": candidate.fuzzy,
            "meaning": candidate.meaning,
            "meaning_weight": weight,
            "nearest": candidate.nearest,
            "nearest_at": where(catalog, candidate, candidate.nearest),
        }
    return found


def as_json(
    text: str, outcome: Outcome, explained: Match | None = None, catalog: Catalog | None = None, weight: float = 0.0
) -> dict[str, Any]:
    """One message's outcome as a JSON object; with ``explained``, the normalised words and the top intents too.

    Each candidate names the example behind its score with its ``file:line`` and, with meaning-based
    matching on, what the fuzzy and the meaning scorers gave and the example nearest in meaning.
    """
    match, detection = outcome.match, outcome.detection
    fields = {
        "text": text,
        "intent": match.intent if match else None,
        "score": match.score if match else None,
        "runner_up": match.runner_up if match else None,
        "runner_up_score": match.runner_up_score if match else None,
        "reason": match.reason if match else ("crisis" if detection else None),
        "crisis": (
            {"level": detection.level.value, "category": detection.category, "rule": detection.rule}
            if detection
            else None
        ),
        "replies": [reply.text for reply in outcome.replies],
    }
    if explained is not None:
        fields["normalized"] = " ".join(tokens_of(text))
        fields["candidates"] = [
            {"intent": c.intent, "score": c.score, "example": c.example, **_scorers(c, catalog, weight)}
            for c in explained.candidates
        ]
    return fields


def as_text(
    text: str, outcome: Outcome, explained: Match | None = None, catalog: Catalog | None = None, weight: float = 0.0
) -> str:
    """One message's outcome as lines for a person to read; with ``explained``, the top intents too."""
    match, detection = outcome.match, outcome.detection
    lines = [f"message:   {text}"]
    if explained is not None:
        lines.append(f"matcher saw: {' '.join(tokens_of(text)) or '(nothing)'}")
    if detection:
        lines.append(f"crisis:    {detection.level.value} ({detection.category}, rule {detection.rule})")
    if match:
        lines.append(f"intent:    {match.intent or '(none: ' + match.reason + ')'}  score {match.score:.1f}")
        lines.append(f"runner-up: {match.runner_up or '-'}  score {match.runner_up_score:.1f}")
    if explained is not None:
        note = "" if match else " (not used: the crisis screen answered first)"
        lines.append(f"top intents{note}:" if explained.candidates else "top intents: none came near")
        for rank, c in enumerate(explained.candidates, 1):
            lines += _candidate_lines(rank, c, catalog, weight)
    lines += [f"reply:     {reply.text}" for reply in outcome.replies]
    return "\n".join(lines) + "\n"


def _shown(example: str | None, at: str | None) -> str:
    if not example:
        return "(none)"
    what = example if example.startswith("keyword:") else repr(example)
    return f"{what}  {at}" if at else what


def _candidate_lines(rank: int, c: Candidate, catalog: Catalog | None, weight: float) -> list[str]:
    """One candidate: its score and example (``file:line``) and, with meaning on, each scorer's share."""
    lines = [f"  {rank}. {c.intent:<22} {c.score:5.1f}  {_shown(c.example, where(catalog, c, c.example))}"]
    if c.meaning is not None and c.fuzzy is not None:
        lines.append(f"       fuzzy   {c.fuzzy:5.1f} x {1 - weight:.2f} = {c.fuzzy * (1 - weight):5.1f}")
        nearest = _shown(c.nearest, where(catalog, c, c.nearest))
        lines.append(f"       meaning {c.meaning:5.1f} x {weight:.2f} = {c.meaning * weight:5.1f}  nearest {nearest}")
    return lines


def weight_of(engine: Engine) -> float:
    """The meaning scorer's share in the engine's matcher (0 with rapidfuzz alone)."""
    matcher = engine.matcher
    return matcher.settings.meaning.weight if matcher is not None and matcher.meaning is not None else 0.0


def matcher_view(engine: Engine, text: str, outcome: Outcome) -> Match | None:
    """The matcher's view of a message: the engine's match, or for a crisis message what it would have been."""
    if outcome.match is not None:
        return outcome.match
    return engine.matcher.match(text) if engine.matcher else None
