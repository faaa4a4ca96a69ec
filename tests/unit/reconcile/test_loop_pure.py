"""The pure parts of the reconcile loop: plans as drift events, the jittered wait."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.intent.models import Reconcile
from controller.reconcile.loop import Drift, drift_of, next_delay_s
from controller.sonic.model import Op, Plan


def test_a_changed_value_is_one_drift_with_both_values() -> None:
    op = Op(
        "change",
        "SCHEDULER",
        "S1",
        {"type": "DWRR", "weight": "30"},
        {"type": "DWRR", "weight": "7"},
    )
    assert drift_of(Plan("sw", (op,))) == [Drift("SCHEDULER", "S1", "weight", "30", "7")]


def test_a_missing_entry_is_a_drift_per_expected_field() -> None:
    op = Op("add", "SCHEDULER", "S1", {"type": "DWRR", "weight": "30"}, {})
    assert drift_of(Plan("sw", (op,))) == [
        Drift("SCHEDULER", "S1", "type", "DWRR", None),
        Drift("SCHEDULER", "S1", "weight", "30", None),
    ]


def test_a_stray_entry_and_a_stray_field_are_drift_expected_absent() -> None:
    stray = Op("delete", "SCHEDULER", "SLUICE_X", {}, {"type": "STRICT"})
    extra_field = Op(
        "change",
        "QUEUE",
        "Ethernet0|3",
        {"scheduler": "S1"},
        {"scheduler": "S1", "wred_profile": "W"},
        False,
    )
    assert drift_of(Plan("sw", (stray, extra_field))) == [
        Drift("SCHEDULER", "SLUICE_X", "type", None, "STRICT"),
        Drift("QUEUE", "Ethernet0|3", "wred_profile", None, "W"),
    ]


def test_a_converged_switch_has_no_drift() -> None:
    assert drift_of(Plan("sw", ())) == []


def test_the_wait_spans_interval_plus_minus_jitter() -> None:
    policy = Reconcile(interval_s=60, jitter_pct=10)
    # unit 0 -> 60 x 0.9 = 54 s; unit 0.5 -> 60 s; unit -> 1 approaches 66 s.
    assert next_delay_s(policy, 0.0) == 54.0
    assert next_delay_s(policy, 0.5) == 60.0
    assert next_delay_s(Reconcile(interval_s=60, jitter_pct=0), 0.9) == 60.0


@given(
    st.floats(min_value=1, max_value=86_400),
    st.floats(min_value=0, max_value=50),
    st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_the_wait_never_leaves_its_band(interval: float, jitter: float, unit: float) -> None:
    delay = next_delay_s(Reconcile(interval_s=interval, jitter_pct=jitter), unit)
    tolerance = 1e-9 * interval
    assert (
        interval * (1 - jitter / 100) - tolerance
        <= delay
        <= interval * (1 + jitter / 100) + tolerance
    )
