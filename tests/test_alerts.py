"""The Prometheus alerting rules and the Grafana dashboard: promtool's own tests, and only metrics the bot serves."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml

from bot.metrics import Metrics
from tests.conftest import REPO

RULES = REPO / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "alerts.test.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "unhooked.json"
METRIC = re.compile(r"\b((?:unhooked|process)_[a-z_]+)\b")
HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")


def served() -> set[str]:
    """Every metric family a running Telegram bot serves on /metrics."""
    from bot.adapters.telegram.health import TelegramMetrics
    from bot.health import Faults

    metrics = Metrics()
    TelegramMetrics(metrics, Faults())
    return {line.split(" ")[2] for line in metrics.registry.render().splitlines() if line.startswith("# TYPE ")}


def family(name: str) -> str:
    for part in HISTOGRAM_PARTS:
        if name.endswith(part) and name.removesuffix(part) in served():
            return name.removesuffix(part)
    return name


def rule_expressions() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


@pytest.mark.parametrize("expressions", [rule_expressions, dashboard_expressions], ids=["alerts", "dashboard"])
def test_every_metric_used_is_one_the_bot_serves(expressions: object) -> None:
    used = {family(name) for expr in expressions() for name in METRIC.findall(expr)}  # type: ignore[operator]
    assert len(used) >= 8
    assert used - served() == set()


def test_the_rules_page_on_lost_and_unacknowledged_escalations() -> None:
    exprs = " ".join(rule_expressions())
    assert 'unhooked_escalations_stored_total{where="nowhere"}' in exprs
    assert 'unhooked_oldest_unacked_escalation_seconds{level="imminent"}' in exprs


def test_promtool_checks_and_tests_the_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); the alerting rules were not run")
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool, "test", "rules", RULE_TESTS.name], cwd=RULE_TESTS.parent, capture_output=True, text=True, check=False
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout
