"""One escalation record format: the spool's lines, the database's rows and the operators' records all come from it."""

from __future__ import annotations

import ast
import json

import pytest

from bot.config import PACKAGE_DIR
from bot.models import Level
from bot.operators import EXPORT_FIELDS, Entry, as_record
from bot.spool import Spool
from bot.store import codec
from tests.records import escalation

FULL = escalation("e1", level=Level.IMMINENT, excerpt="redacted", acked_by="sam", acked_at=300.0, alerted_at=200.0)


@pytest.mark.parametrize("record", [FULL, escalation("e2")])
def test_every_form_reads_back_the_same_escalation(record) -> None:
    assert codec.from_json(codec.to_json(record)) == record
    assert codec.from_row(codec.to_row(record)) == record
    assert codec.from_record(json.loads(json.dumps(codec.to_record(record)))) == record


@pytest.mark.parametrize("line", ["[]", '{"id": "x"}', '{"id": "x", "level": "nope", "resources": []}'])
def test_what_is_not_an_escalation_record_is_refused(line: str) -> None:
    with pytest.raises(ValueError, match=r"not an (object|escalation record)|is not a valid Level"):
        codec.from_json(line)


def test_the_spool_writes_the_codecs_lines(tmp_path) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(FULL)
    assert spool.path.read_text() == codec.to_json(FULL) + "\n"


def test_the_operators_record_is_the_codecs_with_times_as_text() -> None:
    record = as_record(Entry(FULL))
    assert (*codec.FIELDS, "stored") == EXPORT_FIELDS
    assert record == {
        **codec.to_record(FULL),
        "at": "1970-01-01T00:01:40Z",
        "alerted_at": "1970-01-01T00:03:20Z",
        "acked_at": "1970-01-01T00:05:00Z",
        "stored": "database",
    }


def test_no_module_but_the_codec_builds_an_escalation_from_stored_fields() -> None:
    """``Escalation(**record)`` or ``Level(record[...])`` outside the codec would be a second format."""
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path.name == "codec.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            unpacked = isinstance(node, ast.Call) and (
                any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords)
            )
            if unpacked and getattr(node.func, "id", None) == "Escalation":
                found.append(f"{path.relative_to(PACKAGE_DIR)}:{node.lineno}")
    assert found == []


def test_adapters_get_the_store_from_the_service_not_through_the_engine() -> None:
    found = [
        f"{path.relative_to(PACKAGE_DIR)}"
        for path in sorted((PACKAGE_DIR / "adapters").rglob("*.py"))
        if "sessions.store" in path.read_text()
    ]
    assert found == []
