"""The tuner step's pure parts: the intent it writes and how it finds its proposal and
rollout (the step itself runs in tests/integration/lab/test_demo_tuner.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.intent.loader import load_intent_file
from lab.demo_common import DemoError
from lab.demo_tuner import (
    SOAK_S,
    WINDOW_S,
    tuned_intent,
    tuner_off,
    tuner_rollout,
    wait_for_pass,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


def test_the_tuned_intent_turns_the_tuner_on_with_ranges_and_is_valid(tmp_path: Path) -> None:
    out = tuned_intent(EXAMPLE, tmp_path / "tuned.yaml")
    intent = load_intent_file(out)
    tuning = intent.fabric.tuning
    assert (tuning.mode.value, tuning.window_s) == ("auto", WINDOW_S)
    assert (tuning.rollout.soak_s, tuning.rollout.agent_fallback) == (SOAK_S, "none")
    ranges = {
        c.name: (c.scheduling.weight_min, c.scheduling.weight, c.scheduling.weight_max)
        for c in intent.service_classes
        if c.scheduling.weight is not None
    }
    assert ranges == {
        "storage": (20, 50, 70),
        "analytics": (15, 30, 75),
        "best-effort": (10, 20, 40),
    }
    # Nothing else moved: the example's classes and switches are the same.
    before = yaml.safe_load(EXAMPLE.read_text())
    after = yaml.safe_load(out.read_text())
    assert [s["name"] for s in after["switches"]] == [s["name"] for s in before["switches"]]


def test_the_rollout_is_the_tuners_for_the_version() -> None:
    rollouts = [
        {"id": 1, "to_version": 4, "created_by": "admin"},
        {"id": 2, "to_version": 4, "created_by": "tuner"},
        {"id": 3, "to_version": 5, "created_by": "tuner"},
    ]
    assert tuner_rollout(rollouts, 4) == rollouts[1]
    assert tuner_rollout(rollouts, 6) is None


def test_waiting_for_a_pass_returns_the_newest_or_gives_up() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    answers = iter([[], [{"id": 1, "state": "no_change"}, {"id": 2, "state": "approved"}]])
    assert wait_for_pass(lambda: next(answers), lambda: now[0], sleep)["id"] == 2
    with pytest.raises(DemoError, match="no tuning pass"):
        wait_for_pass(lambda: [], lambda: now[0], sleep, timeout_s=2.0)


def test_a_pending_proposal_is_the_pass_half_done_not_its_outcome() -> None:
    # What the API answers while the worker's pass runs in auto mode: the proposal stored
    # pending, then, a read later, approved as version 4 (the race the demo lost once: it
    # took the pending one for the outcome and said "the tuner's pass changed nothing").
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    pending = {"id": 3, "state": "pending", "new_version": None}
    approved = {"id": 3, "state": "approved", "new_version": 4}
    reads = iter([[pending], [pending], [approved]])
    found = wait_for_pass(lambda: next(reads), lambda: now[0], sleep)
    assert (found["state"], found["new_version"]) == ("approved", 4)
    assert now[0] == 1.0  # two reads saw it pending, each followed by one 0.5 s wait
    # Never leaving pending is the worker's failure, named as such.
    with pytest.raises(DemoError, match="proposal 3 was still pending"):
        wait_for_pass(lambda: [pending], lambda: now[0], sleep, timeout_s=2.0)


def test_turning_the_tuner_off_keeps_everything_else(tmp_path: Path) -> None:
    tuned = yaml.safe_load(tuned_intent(EXAMPLE, tmp_path / "tuned.yaml").read_text())
    off = tuner_off(tuned)
    assert off["fabric"]["tuning"] == {**tuned["fabric"]["tuning"], "mode": "off"}
    assert {**off, "fabric": tuned["fabric"]} == tuned
    assert tuned["fabric"]["tuning"]["mode"] == "auto"  # the input is left as it was
