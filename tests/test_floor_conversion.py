"""The floor read from ``bot/floor/floor.yml`` decides exactly as the rules in Python it replaced.

``tests/safety/floor_detections.json`` was written by the Python rules before they were deleted:
for every message in ``tests/safety/`` (must_catch, must_not_catch, ambiguous) and in
``tests/conversations/``, as written and in capitals, the detection and every rule that fired.
A deliberate change to the floor that changes one of them rewrites the file with
``python -m tests.test_floor_conversion`` and shows the difference in review.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from bot import safety

TESTS = Path(__file__).parent
FIXTURE = TESTS / "safety" / "floor_detections.json"


def messages() -> list[str]:
    """Every message of the safety sets and the conversation tests, once, as written and in capitals."""
    found: list[str] = []
    catch = yaml.safe_load((TESTS / "safety" / "must_catch.yaml").read_text("utf-8"))
    found += [item["text"] for items in catch.values() for item in items]
    quiet = yaml.safe_load((TESTS / "safety" / "must_not_catch.yaml").read_text("utf-8"))
    found += [text for items in quiet.values() for text in items]
    found += yaml.safe_load((TESTS / "safety" / "ambiguous.yaml").read_text("utf-8"))
    for path in sorted((TESTS / "conversations").glob("*.yaml")):
        data = yaml.safe_load(path.read_text("utf-8"))
        for item in [*(data.get("tests") or ()), *(data.get("failures") or ())]:
            found.append(item if isinstance(item, str) else item["text"])
    return list(dict.fromkeys(variant for text in found for variant in (text, text.upper())))


def decisions(texts: list[str]) -> dict[str, Any]:
    """What the floor decides for each text: the detection's fields and the ids of every rule that fired."""
    made: dict[str, Any] = {}
    for text in texts:
        found = safety.detect(text)
        made[text] = {
            "detection": None
            if found is None
            else [
                found.level.value,
                found.category,
                found.rule,
                found.track.value,
                found.language,
                found.window_level.value if found.window_level else None,
            ],
            "fired": [rule.id for rule in safety.fired(text)],
        }
    return made


def test_the_floor_decides_as_the_python_rules_did() -> None:
    recorded = json.loads(FIXTURE.read_text("utf-8"))
    now = decisions(list(recorded))
    changed = [f"{text!r}: {recorded[text]} -> {now[text]}" for text in recorded if recorded[text] != now[text]]
    assert not changed, "\n".join(changed[:20])


def test_the_recording_covers_every_message_of_the_test_sets() -> None:
    recorded = json.loads(FIXTURE.read_text("utf-8"))
    missing = [text for text in messages() if text not in recorded]
    assert not missing, f"{len(missing)} messages are not in {FIXTURE.name}; run python -m tests.test_floor_conversion"


if __name__ == "__main__":
    rows = sorted(decisions(messages()).items())
    lines = [f"{json.dumps(text, ensure_ascii=False)}: {json.dumps(made, ensure_ascii=False)}" for text, made in rows]
    FIXTURE.write_text("{\n" + ",\n".join(lines) + "\n}\n", "utf-8")
    sys.stdout.write(f"wrote {FIXTURE}\n")
