"""The fit check: each measured queue against the twin's figures for its class and port kind,
within the stated tolerances, with worked numbers; a mis-fitted twin is refused and its worst
misfits named first."""

from __future__ import annotations

import pytest

from controller.tuning.fit import Tolerance, TwinQueue, check_fit
from controller.tuning.summary import QueueSummary, TelemetrySummary

MTU = 1500  # the occupancy floor is 4 MTU = 6000 B
KINDS = {("leaf1", "Ethernet0"): "leaf_down", ("leaf1", "Ethernet48"): "leaf_up"}
GBPS = 25.0
LINE_BYTES_PER_S = GBPS * 1e9 / 8


def measured(
    utilisation: float,
    share: float,
    marks: float,
    p50: float,
    p95: float,
    *,
    port: str = "Ethernet0",
) -> QueueSummary:
    return QueueSummary(
        "leaf1",
        port,
        "storage",
        GBPS,
        utilisation=utilisation,
        occupancy_p50_bytes=p50,
        occupancy_p95_bytes=p95,
        mark_fraction=marks,
        tx_bytes_per_s=share * LINE_BYTES_PER_S,
    )


def twin(utilisation: float, share: float, marks: float, p50: float, p95: float) -> TwinQueue:
    return TwinQueue("storage", "leaf_down", utilisation, share, marks, p50, p95)


def summary(*queues: QueueSummary) -> TelemetrySummary:
    return TelemetrySummary(0.0, 600.0, queues=queues)


def test_a_twin_inside_every_tolerance_fits() -> None:
    # utilisation 0.62 / 0.55 (0.07 apart), the class's share 0.20 / 0.26, marks 0.03 / 0.05,
    # p50 3000 / 0 B (3000 B apart: inside the 6000 B floor although the ratio is infinite),
    # p95 40 000 / 70 000 B (1.75x).
    verdict = check_fit(
        summary(measured(0.62, 0.20, 0.03, 3000.0, 40_000.0)),
        [twin(0.55, 0.26, 0.05, 0.0, 70_000.0)],
        KINDS,
        mtu_bytes=MTU,
    )
    assert verdict.fits
    assert (verdict.compared, verdict.misfits) == (1, ())
    assert "reproduces the fabric's 1 queues" in verdict.reason()


def test_a_mis_fitted_twin_is_refused_worst_misfit_first() -> None:
    # The fabric's storage queue carries 0.7 of the line on a port at 0.9, marks 20 % and
    # queues 200 kB at p95; the twin, given no offered storage traffic, carries none of it.
    verdict = check_fit(
        summary(measured(0.9, 0.7, 0.2, 10_000.0, 200_000.0)),
        [twin(0.31, 0.0, 0.0, 0.0, 1_500.0)],
        KINDS,
        mtu_bytes=MTU,
    )
    assert not verdict.fits
    found = [(m.metric, round(m.severity, 2)) for m in verdict.misfits]
    # p95: 198 500 B apart / 6000 = 33.08 (ratio 133x / 2 = 66.7: the smaller counts);
    # class share 0.7 / 0.1 = 7; utilisation 0.59 / 0.1 = 5.9; marks 0.2 / 0.1 = 2 (ratio
    # infinite); p50: 10 000 B apart / 6000 = 1.67 (ratio infinite).
    assert found == [
        ("occupancy p95 B", 33.08),
        ("class utilisation", 7.0),
        ("utilisation", 5.9),
        ("mark fraction", 2.0),
        ("occupancy p50 B", 1.67),
    ]
    reason = verdict.reason()
    assert reason.startswith("the twin does not reproduce the fabric: 1 of 1 queues outside")
    assert "leaf1 Ethernet0 storage occupancy p95 B: measured 200000, twin 1500" in reason
    assert "storage mark fraction" not in reason  # only the three worst are named


@pytest.mark.parametrize(
    ("fabric", "model", "fits"),
    [
        (0.001, 0.004, True),  # 4x, but 0.003 apart
        (0.3, 0.5, True),  # 0.2 apart, but 1.67x
        (0.05, 0.25, False),  # 0.2 apart and 5x
    ],
)
def test_a_mark_fraction_fits_by_either_bound(fabric: float, model: float, fits: bool) -> None:
    verdict = check_fit(
        summary(measured(0.5, 0.2, fabric, 0.0, 0.0)),
        [twin(0.5, 0.2, model, 0.0, 0.0)],
        KINDS,
        mtu_bytes=MTU,
    )
    assert verdict.fits is fits


def test_tolerances_are_the_policys_and_unmeasured_figures_are_not_judged() -> None:
    queue = QueueSummary("leaf1", "Ethernet0", "storage", GBPS, utilisation=0.5)
    model = twin(0.58, 0.9, 0.9, 1e6, 1e6)  # only utilisation is measured: 0.08 apart
    assert check_fit(summary(queue), [model], KINDS, mtu_bytes=MTU).fits
    strict = Tolerance(utilisation=0.05)
    verdict = check_fit(summary(queue), [model], KINDS, mtu_bytes=MTU, tolerance=strict)
    assert [m.metric for m in verdict.misfits] == ["utilisation"]


def test_queues_the_twin_has_no_figures_for_are_named_and_nothing_compared_is_no_fit() -> None:
    uplink = measured(0.5, 0.2, 0.0, 0.0, 0.0, port="Ethernet48")  # leaf_up: no twin row
    unknown = measured(0.5, 0.2, 0.0, 0.0, 0.0, port="Ethernet99")  # no kind
    verdict = check_fit(summary(uplink, unknown), [twin(0.5, 0.2, 0, 0, 0)], KINDS, mtu_bytes=MTU)
    assert not verdict.fits
    assert verdict.compared == 0
    assert verdict.not_compared == ("leaf1 Ethernet48 storage", "leaf1 Ethernet99 storage")
    assert "could not be checked" in verdict.reason()
