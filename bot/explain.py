"""What ``python -m bot match`` shows of a message: the engine's outcome as JSON or text, and the matcher's view."""

from __future__ import annotations

from typing import Any

from bot.engine import Engine, Outcome
from bot.matcher import tokens_of
from bot.models import Match


def as_json(text: str, outcome: Outcome, explained: Match | None = None) -> dict[str, Any]:
    """One message's outcome as a JSON object; with ``explained``, the normalised words and the top intents too."""
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
            {"intent": c.intent, "score": c.score, "example": c.example} for c in explained.candidates
        ]
    return fields


def as_text(text: str, outcome: Outcome, explained: Match | None = None) -> str:
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
            what = c.example if c.example.startswith("keyword:") else repr(c.example)
            lines.append(f"  {rank}. {c.intent:<22} {c.score:5.1f}  {what}")
    lines += [f"reply:     {reply.text}" for reply in outcome.replies]
    return "\n".join(lines) + "\n"


def matcher_view(engine: Engine, text: str, outcome: Outcome) -> Match | None:
    """The matcher's view of a message: the engine's match, or for a crisis message what it would have been."""
    if outcome.match is not None:
        return outcome.match
    return engine.matcher.match(text) if engine.matcher else None
