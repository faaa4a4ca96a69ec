"""The DCQCN ramp rule (controller/tuning/dcqcn.py) with worked numbers.

The intent: tests/unit/intent/intents.py's two leaves (25 and 100 Gb/s ports, RTT 40 us, MTU
1500, 2 000 000 B buffers) with storage lossless on priority 3 (Spectrum-2 figures, 5 m
cables), on DCQCN's ramp Kmin 5 000 B, Kmax 200 000 B, Pmax 1 %. Bounds on Kmax:
floor C x RTT x 0.17 at 100 Gb/s = 12.5e9 B/s x 40e-6 s x 0.17 = 85 000 B; ceiling one byte
below the lowest XOFF point, the 100 Gb/s port's 958 528 B (docs/lossless.md, the
invariants' example): 958 527 B. Policy: hysteresis 10 %, minimum interval 900 s, step 25 %.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.intent.capacity import lowest_xoff_point_bytes
from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.tuning.apply import apply_changes
from controller.tuning.dcqcn import DcqcnGroup, parameter_key, tune_dcqcn
from controller.tuning.evidence import Change
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import QueueSummary, TelemetrySummary
from controller.tuning.tune import propose
from tests.support.lossless import with_lossless_storage
from tests.unit.intent.intents import intent_data

KEY = parameter_key("storage")
POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def lossless_intent(**ramp: int) -> Intent:
    data: dict[str, Any] = dump_intent(with_lossless_storage(parse_intent(intent_data())))
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class["lossless"] |= ramp
    return parse_intent(data)


def queue(
    port: str = "Ethernet4",
    speed: float = 100,
    *,
    marks: float = 0.02,
    utilisation: float = 0.95,
    pauses_sent: float | None = 0.0,
    klass: str = "storage",
    p95: float = 180_000,
) -> QueueSummary:
    return QueueSummary(
        "leaf1", port, klass, speed, utilisation=utilisation, mark_fraction=marks,
        occupancy_p50_bytes=40_000, occupancy_p95_bytes=p95,
        pfc_tx_pause_per_s=pauses_sent, pfc_rx_pause_per_s=0.0 if pauses_sent is not None else None,
    )  # fmt: skip


def found(
    intent: Intent, *queues: QueueSummary, last_changed: dict[str, float] | None = None
) -> Change:
    changes = propose(
        intent,
        TelemetrySummary(0, 600, queues=queues),
        now_s=10_000,
        last_changed=last_changed or {},
    )
    (change,) = [c for c in changes if c.parameter == KEY]
    return change


def test_pauses_mark_earlier_by_the_step() -> None:
    # The congested egress queue (100 Gb/s host port) marks; the pauses were sent by another
    # port, a 25 Gb/s one whose group reached XOFF: one class, one ramp, every port read.
    change = found(
        lossless_intent(),
        queue(marks=0.3),
        queue("Ethernet0", 25, marks=0.0, utilisation=0.5, pauses_sent=12.0),
    )
    # Kmax 200 000 -> wanted 100 000 (halved) -> 150 000 (25 % step); Kmin 5 000 x 0.75.
    assert change.applies
    assert (change.current, change.proposed) == ((5_000, 200_000, 1), (3_750, 150_000, 1))
    assert change.evidence.inputs["pfc_pauses_sent_per_s"] == 12.0
    assert change.evidence.inputs["ports_pausing"] == 1
    assert "max step 25%" in change.evidence.bounds[0]
    # The proposal is the class's lossless block, and the tuned intent compiles its ramp.
    tuned = apply_changes(lossless_intent(), [change]).intent
    storage = next(c for c in tuned.service_classes if c.name == "storage")
    assert storage.lossless is not None
    assert (storage.lossless.kmin_bytes, storage.lossless.kmax_bytes) == (3_750, 150_000)


def test_idle_and_marking_marks_later() -> None:
    # No pause, the marking port at 0.4 of its line rate (target 0.9) and 20 % of its packets
    # marked: Kmax 200 000 -> wanted 400 000 -> 250 000 (step); Kmin 6 250.
    change = found(lossless_intent(), queue(marks=0.2, utilisation=0.4))
    assert change.proposed == (6_250, 250_000, 1)


def test_later_lowers_pmax_first() -> None:
    # Pmax 4 % -> wanted 2 % -> 3 % (25 % step of 4, then whole percents towards 4).
    change = found(lossless_intent(pmax_pct=4), queue(marks=0.2, utilisation=0.4))
    assert change.proposed == (5_000, 200_000, 3)


def test_pauses_at_the_kmax_floor_raise_pmax() -> None:
    # Kmax 90 000 is inside the hysteresis band of the 85 000 B floor: the ramp's end cannot
    # come earlier, so Pmax doubles: 1 -> 2 % (a whole percent at least).
    change = found(lossless_intent(kmax_bytes=90_000), queue(pauses_sent=3.0))
    assert change.proposed == (5_000, 90_000, 2)


def test_kmax_is_clamped_at_its_floor() -> None:
    # Kmax 100 000 -> wanted 50 000 -> floor 85 000 (a 15 % move, inside the 25 % step);
    # Kmin 5 000 x 0.85 = 4 250.
    change = found(lossless_intent(kmax_bytes=100_000), queue(pauses_sent=3.0))
    assert change.proposed == (4_250, 85_000, 1)
    assert change.evidence.bounds == (
        "floor: Kmax 50000 B raised to 85000 B (C x RTT x lambda_min)",
    )


def test_kmax_is_clamped_below_the_xoff_point() -> None:
    # Kmax 800 000 -> wanted 1 600 000 -> ceiling 958 527 (a 19.8 % move, inside the step),
    # one byte below the 100 Gb/s port's XOFF point; Kmin 5 000 x 958 527 / 800 000 = 5 991.
    intent = lossless_intent(kmax_bytes=800_000)
    change = found(intent, queue(marks=0.2, utilisation=0.4))
    assert change.proposed == (5_991, 958_527, 1)
    assert "ceiling" in change.evidence.bounds[0]
    apply_changes(intent, [change])  # parses: Kmin < Kmax
    # Within the hysteresis band of the ceiling (900 000 x 1.1 > 958 527), later has nowhere
    # to go: held, and says why.
    at = found(lossless_intent(kmax_bytes=900_000), queue(marks=0.2, utilisation=0.4))
    assert not at.applies
    assert at.held is not None
    assert "at its bounds" in at.held


def test_pmax_never_passes_100() -> None:
    change = found(lossless_intent(kmax_bytes=85_000, pmax_pct=100), queue(pauses_sent=1.0))
    assert not change.applies
    assert change.held is not None
    assert "Pmax 100 %" in change.held


def test_held_inside_the_hysteresis_band() -> None:
    # With a 60 % band the halving (50 %) is noise: held; Kmax 200 000 is far from the floor.
    ramp = next(c.dcqcn for c in lossless_intent().service_classes if c.name == "storage")
    assert ramp is not None
    group = DcqcnGroup("storage", ramp, 40.0, 0.17, 958_527, 0.9)
    wide = StabilityPolicy(hysteresis_pct=60.0, min_interval_s=900.0, max_step_pct=25.0)
    change = tune_dcqcn(group, [queue(pauses_sent=5.0)], now_s=10_000, last_changed={}, policy=wide)
    assert change is not None
    assert not change.applies
    assert change.held is not None
    assert "hysteresis" in change.held


def test_held_within_the_minimum_interval() -> None:
    change = found(lossless_intent(), queue(pauses_sent=5.0), last_changed={KEY: 9_500})
    assert not change.applies
    assert change.held is not None
    assert "minimum interval" in change.held


@pytest.mark.parametrize(
    ("summary", "reason"),
    [
        (queue(pauses_sent=None), "no PFC pause counters"),
        (queue(marks=0.02, utilisation=0.4), "the ramp holds"),
        (queue(marks=0.2, utilisation=0.9), "later marks would only queue more"),
        # Underused and marking, but the queue's p95 passes Kmax 200 000: it overruns the ramp.
        (queue(marks=0.2, utilisation=0.4, p95=200_000), "overruns the ramp"),
    ],
)
def test_no_evidence_holds(summary: QueueSummary, reason: str) -> None:
    change = found(lossless_intent(), summary)
    assert not change.applies
    assert change.held is not None
    assert reason in change.held


def test_a_lossy_class_is_left_to_the_ecn_rule_and_a_lossless_one_to_this() -> None:
    queues = (
        queue(pauses_sent=5.0),
        queue(klass="bulk", marks=0.3, utilisation=0.4, pauses_sent=None),
    )
    changes = propose(lossless_intent(), TelemetrySummary(0, 600, queues=queues), now_s=10_000,
                      last_changed={})  # fmt: skip
    parameters = {c.parameter for c in changes}
    assert "dcqcn/storage" in parameters
    assert "dcqcn/bulk" not in parameters  # bulk is lossy: no ramp to move
    assert not any(p.startswith("ecn_lambda/storage") for p in parameters)  # not K's
    # Without a lossless class there is no ramp rule at all.
    plain = propose(parse_intent(intent_data()), TelemetrySummary(0, 600, queues=queues),
                    now_s=10_000, last_changed={})  # fmt: skip
    assert not any(c.parameter.startswith("dcqcn/") for c in plain)


def test_the_ceiling_is_the_sized_intents_xoff_point() -> None:
    # The switches report 300 m on leaf1's 100 Gb/s port: its headroom grows (xoff 148 480 B,
    # size 166 912 B), the shared pool shrinks to 1 833 088 B and the XOFF point to 916 544 B.
    # A version written from the proposal is checked against that, so the ramp's ceiling is it.
    intent = lossless_intent(kmax_bytes=800_000)
    data: dict[str, Any] = dump_intent(intent)
    data["switches"][0]["ports"][1]["cable_length_m"] = 300
    sized = parse_intent(data)
    assert lowest_xoff_point_bytes(sized) == 916_544
    later = TelemetrySummary(0, 600, queues=(queue(marks=0.2, utilisation=0.4),))
    changes = propose(intent, later, now_s=10_000, last_changed={}, sized=sized)
    (change,) = [c for c in changes if c.parameter == KEY]
    assert change.proposed[1] == 916_543  # type: ignore[index]
    assert change.evidence.inputs["kmax_ceiling_bytes"] == 916_543
    # Unsized, the 5 m default: the 958 527 B ceiling of the other tests.
    assert found(intent, queue(marks=0.2, utilisation=0.4)).proposed[1] == 958_527  # type: ignore[index]


def test_idle_ports_do_not_dilute_the_marks() -> None:
    # One host port marks 20 % at 0.4 utilisation; three ports carry nothing of the class
    # (no marks): the marking port's 20 % is the evidence, not the mean of 5 % over four.
    idle = [queue(f"Ethernet{4 * i}", marks=0.0, utilisation=0.0) for i in range(2, 5)]
    change = found(lossless_intent(), queue(marks=0.2, utilisation=0.4), *idle)
    assert change.proposed == (6_250, 250_000, 1)
    assert change.evidence.inputs["mark_fraction_marking_mean"] == 0.2
