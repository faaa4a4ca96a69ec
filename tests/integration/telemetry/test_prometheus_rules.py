"""sluice's Prometheus rules and configs, checked and unit-tested by the real promtool."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lab.prometheus import RULES_FILE, config_text

pytestmark = pytest.mark.integration

PROMETHEUS_DIR = RULES_FILE.parent


def promtool(*args: str, cwd: Path = PROMETHEUS_DIR) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary is not None, "promtool missing: run scripts/bootstrap.sh"
    return subprocess.run(
        [binary, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


def test_the_rules_file_is_valid() -> None:
    done = promtool("check", "rules", str(RULES_FILE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 14 rules found" in done.stdout


def test_the_compose_config_is_valid() -> None:
    done = promtool("check", "config", "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_lab_config_is_valid(tmp_path: Path) -> None:
    config = tmp_path / "prometheus.yml"
    config.write_text(config_text(["127.0.0.1:9464", "127.0.0.1:9465"], 1.0, RULES_FILE))
    done = promtool("check", "config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr


def test_recording_and_alerting_rules_on_worked_inputs() -> None:
    done = promtool("test", "rules", "sluice.rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "expr: sluice_agent_heartbeat_age_seconds > 30",
            "expr: sluice_agent_heartbeat_age_seconds > 60",
        ),
        (
            '({__name__=~"sluice_port_pfc_(rx|tx)_pause_frames_per_second"}) > 3000',
            '({__name__=~"sluice_port_pfc_(rx|tx)_pause_frames_per_second"}) > 5000',
        ),
        (
            "/ sum by (class) (sluice_queue_tx_packets_per_second > 0)",
            "/ sum by (class) (sluice_queue_ecn_marked_packets_per_second)",
        ),
    ],
)
def test_the_rule_tests_catch_a_changed_rule(tmp_path: Path, old: str, new: str) -> None:
    # The worked examples must be able to fail: the same tests on an altered rule do.
    text = RULES_FILE.read_text()
    assert old in text
    (tmp_path / "sluice.rules.yml").write_text(text.replace(old, new))
    shutil.copy(PROMETHEUS_DIR / "sluice.rules.test.yml", tmp_path)
    done = promtool("test", "rules", "sluice.rules.test.yml", cwd=tmp_path)
    assert done.returncode != 0
    assert "FAILED" in done.stdout + done.stderr
