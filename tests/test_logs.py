"""Logs as one JSON object per line (UNHOOKED_LOG_FORMAT=json): the escalation line included."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import run


def test_json_logs_are_one_object_per_line_and_the_escalation_is_one_of_them(tmp_path: Path) -> None:
    result = run(
        "chat",
        stdin="I want to kill myself tonight\n",
        env={"UNHOOKED_LOG_FORMAT": "json", "UNHOOKED_LOG_LEVEL": "INFO"},
        tmp=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # "[operator alert] ..." is the terminal's stand-in for the operators' chat, not a log line
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.strip() and not line.startswith("[")]
    escalations = [line for line in lines if line.get("event") == "escalation"]
    assert len(escalations) == 1
    line = escalations[0]
    assert line["logger"] == "unhooked.escalations" and line["severity"] == "WARNING"
    assert line["level"] == "imminent" and line["category"] and line["rule"] and len(line["user_key"]) == 32
    assert {"time", "id", "at"} <= line.keys() and "message" not in line
    assert "myself tonight" not in result.stderr


def test_text_logs_stay_the_default_and_a_wrong_format_is_explained(tmp_path: Path) -> None:
    text = run("chat", stdin="I want to kill myself tonight\n", tmp=tmp_path)
    assert ' WARNING unhooked.escalations: {"acked_at": null' in text.stderr
    wrong = run("chat", stdin="hi\n", env={"UNHOOKED_LOG_FORMAT": "yaml"}, tmp=tmp_path)
    assert wrong.returncode == 1
    assert "UNHOOKED_LOG_FORMAT must be text or json" in wrong.stderr
