"""The tuner's DCQCN ramp rule judged in the real netsim binary (``cargo build -p netsim``):
an 8-to-1 incast across the spine pauses the fabric links even on DCQCN's ramp; the rule
reads the run as a switch's telemetry (PFC frames sent, marks), asks to mark earlier, and its
proposals, applied through the product's tuning pass, pause less than the starting ramp on
two fresh seeds in the same test, losing nothing; under one leaf, where nothing pauses, the
rule keeps the ramp. Fifteen runs of about a tenth of a second each (bench/dcqcn_tuning.py
runs the larger loop)."""

from __future__ import annotations

from bench import dcqcn_tuning as bench
from controller.settings import TwinSettings

NETSIM = TwinSettings().netsim
SENDERS = 8
SEEDS = [1, 2]


def test_the_rules_ramp_pauses_less_than_dcqcns_on_fresh_seeds() -> None:
    rounds = bench.tune(NETSIM, SENDERS, max_rounds=4)
    start, tuned = rounds[0].ramp, rounds[-1].ramp
    # The starting runs paused, so every round asked to mark earlier: Kmax down the steps.
    assert rounds[0].outcome.pause_frames > 0
    first = rounds[0].change
    assert first is not None
    assert first.evidence.inputs["ports_pausing"] == 2  # leaf uplink and spine groups
    assert tuned.kmax_bytes < start.kmax_bytes
    assert tuned.kmin_bytes < tuned.kmax_bytes
    judged = bench.judge(NETSIM, {"start": start, "tuned": tuned}, SENDERS, SEEDS)
    for before, after in zip(judged["start"], judged["tuned"], strict=True):
        assert before.lossless_drops == after.lossless_drops == 0
        assert before.unfinished == after.unfinished == 0
        assert after.pause_us < before.pause_us
        assert after.pause_frames < before.pause_frames


def test_an_incast_that_does_not_pause_keeps_its_ramp() -> None:
    # Under one leaf the computed figures do not pause; the receiver's port is underused and
    # marks, but its queue overruns Kmax: marking later would walk Kmax towards XOFF (and, in
    # this twin, lengthened the incast), so the rule holds. One run.
    (only,) = bench.tune(NETSIM, 4, one_leaf=True)
    assert only.outcome.pause_frames == 0
    assert only.change is not None
    assert only.change.held is not None
    assert "overruns the ramp" in only.change.held
