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
from controller.qos.lossless import DcqcnEcn
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


# The feedback: each pass judges the class's last applied step (its stored Change, as the
# tuning service keeps it) on the pause rate now. Margin 10 %.


def passes(intent: Intent, *pauses: float, kmax: int | None = None) -> tuple[Intent, list[Change]]:
    """One pass per pause rate, a minimum interval apart, each applied change stored as the
    history the next pass reads (``last_changed``, ``last_applied``)."""
    changed: dict[str, float] = {}
    applied: dict[str, dict[str, Any]] = {}
    verdicts: list[Change] = []
    for n, rate in enumerate(pauses):
        now = 10_000 + n * 900
        summary = TelemetrySummary(0, 600, queues=(queue(pauses_sent=rate),))
        changes = propose(intent, summary, now_s=now, last_changed=changed, last_applied=applied)
        (change,) = [c for c in changes if c.parameter == KEY]
        verdicts.append(change)
        if change.applies:
            intent = apply_changes(intent, [change]).intent
            changed[KEY], applied[KEY] = now, change.as_dict()
    return intent, verdicts


def test_a_pmax_climb_that_cuts_pauses_goes_on_and_stops_when_they_no_longer_fall() -> None:
    # Kmax 90 000 sits at its 85 000 B floor (inside the band): pauses raise Pmax.
    # 100/s: 1 -> 2 %. 85/s (cut 15 % >= 10 %): the step helped, again: 2 -> 3 % (doubling
    # to 4 limited to 2.5 by the 25 % step, then a whole percent). 80/s (cut 5.9 % < 10 %): the
    # raise did not help: held at 3 %, no further raise, and says so.
    _, (first, second, third) = passes(lossless_intent(kmax_bytes=90_000), 100.0, 85.0, 80.0)
    assert (first.proposed, second.proposed) == ((5_000, 90_000, 2), (5_000, 90_000, 3))
    assert "cut the pauses 100 -> 85 pause frames/s" in str(second.evidence.inputs["verdict"])
    assert second.evidence.inputs["last_step_pauses_sent_per_s"] == 100.0
    assert not third.applies
    assert third.held is not None
    assert "raising Pmax did not help, no further raise (Pmax stays 3 %)" in third.held
    assert third.evidence.inputs["last_step"] == "(5000, 90000, 2) -> (5000, 90000, 3)"
    # The same passes blind to the history: the rule raises Pmax on 80/s as before.
    blind = propose(
        lossless_intent(kmax_bytes=90_000, pmax_pct=3),
        TelemetrySummary(0, 600, queues=(queue(pauses_sent=80.0),)),
        now_s=20_000,
        last_changed={},
    )
    assert next(c for c in blind if c.parameter == KEY).proposed == (5_000, 90_000, 4)


def test_a_step_after_which_pauses_rose_steps_back_and_the_ramp_then_holds() -> None:
    # 100/s: Pmax 1 -> 2 %. 120/s (rose 20 % >= 10 %): back to 1 % (Kmax and Kmin as they
    # were). 110/s, pauses still seen: the step back is not undone, the ramp holds at 1 %.
    intent, (raised, back, after) = passes(lossless_intent(kmax_bytes=90_000), 100.0, 120.0, 110.0)
    assert raised.proposed == (5_000, 90_000, 2)
    assert back.applies
    assert (back.current, back.proposed) == ((5_000, 90_000, 2), (5_000, 90_000, 1))
    assert back.evidence.outputs["step"] == "back"
    assert "the pauses rose 100 -> 120 pause frames/s" in str(back.evidence.inputs["verdict"])
    assert not after.applies
    assert after.held is not None
    assert "stepped back" in after.held
    storage = next(c for c in intent.service_classes if c.name == "storage")
    assert storage.dcqcn == DcqcnEcn(5_000, 90_000, 1)


def test_a_kmax_cut_steps_back_whole_past_the_max_step_and_goes_on_when_pauses_hold() -> None:
    # 12/s: Kmax 200 000 -> 150 000. 11.5/s (cut 4 %, not 10 %): a cut of Kmax goes on to
    # its floor: 150 000 -> 112 500. 13/s (rose 13 %): back to 150 000 B in one step, a 33 %
    # move the 25 % maximum step would not allow a new value (it returns to one that ran).
    _, (cut, again, back) = passes(lossless_intent(), 12.0, 11.5, 13.0)
    assert cut.proposed == (3_750, 150_000, 1)
    assert again.proposed == (2_812, 112_500, 1)
    assert "Kmax goes on to its floor" in str(again.evidence.inputs["verdict"])
    assert (back.current, back.proposed) == ((2_812, 112_500, 1), (3_750, 150_000, 1))
    assert back.evidence.bounds == ()


def test_a_step_back_waits_out_the_minimum_interval() -> None:
    # The rise is seen 300 s after the step: the minimum interval holds the step back too.
    intent = lossless_intent(kmax_bytes=90_000)
    first = found(intent, queue(pauses_sent=100.0))
    tuned = apply_changes(intent, [first]).intent
    changes = propose(
        tuned,
        TelemetrySummary(0, 600, queues=(queue(pauses_sent=150.0),)),
        now_s=10_300,
        last_changed={KEY: 10_000},
        last_applied={KEY: first.as_dict()},
    )
    (back,) = [c for c in changes if c.parameter == KEY]
    assert back.proposed == back.current == (5_000, 90_000, 2)
    assert back.held is not None
    assert "minimum interval" in back.held


@pytest.mark.parametrize(
    ("record", "why"),
    [
        # The operator set Pmax 5 % since the tuner's step 1 -> 2: that step is not running.
        ("moved", "the ramp is not the step's"),
        # The last step was made without pauses (a "later" one): nothing to judge it on.
        ("later", "not taken against pauses"),
        # A change stored before the feedback existed, without the pause input.
        ("old", "no pause rate recorded"),
    ],
)
def test_a_last_step_that_cannot_be_judged_leaves_the_rule_as_it_was(record: str, why: str) -> None:
    intent = lossless_intent(kmax_bytes=90_000, pmax_pct=2)
    stored = found(lossless_intent(kmax_bytes=90_000), queue(pauses_sent=100.0)).as_dict()
    if record == "moved":
        intent = lossless_intent(kmax_bytes=90_000, pmax_pct=5)
    elif record == "later":
        stored["evidence"]["inputs"]["pfc_pauses_sent_per_s"] = 0.0
    else:
        del stored["evidence"]["inputs"]["pfc_pauses_sent_per_s"]
    changes = propose(
        intent,
        TelemetrySummary(0, 600, queues=(queue(pauses_sent=100.0),)),
        now_s=20_000,
        last_changed={},
        last_applied={KEY: stored},
    )
    (change,) = [c for c in changes if c.parameter == KEY]
    assert change.applies, why  # pauses at the floor: Pmax up, as without a history
    assert change.related["pmax_pct"] == intent_pmax(intent) + 1
    assert "last_step" not in change.evidence.inputs


def intent_pmax(intent: Intent) -> int:
    storage = next(c for c in intent.service_classes if c.name == "storage")
    assert storage.dcqcn is not None
    return storage.dcqcn.pmax_pct
