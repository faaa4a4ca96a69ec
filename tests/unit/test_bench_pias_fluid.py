"""The fluid MLFQ model of bench/pias_fluid.py, on flows worked by hand (capacity 1 byte per
second, so sizes are also service times), and one property no scheduling can change."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from bench.pias_fluid import Flow, draw_size, fluid_fcts, poisson_flows
from bench.pias_mlfq import (
    mlfq_fct_of_size,
    mlfq_mean_fct,
    mlfq_optimum,
    truncated_second_moment,
)
from controller.qos.pias import FlowSizeCdf, load_workload

# A (3000 B) at t = 0, B (1000 B) at t = 1000.
TWO = [Flow(0.0, 3000.0), Flow(1000.0, 1000.0)]


def test_processor_sharing_splits_the_link_between_active_flows() -> None:
    # A alone to t = 1000 (2000 left); then both at 1/2: B done at 3000 (FCT 2000), A has
    # 1000 left and finishes alone at 4000.
    assert fluid_fcts(TWO, [], 1.0) == pytest.approx([4000.0, 2000.0])


def test_a_demoted_flow_waits_while_a_new_one_is_served_alone() -> None:
    # Threshold 1000: A reaches it just as B arrives; B in the top queue is served alone
    # (done at 2000, FCT 1000), A resumes and finishes at 4000.
    assert fluid_fcts(TWO, [1000.0], 1.0) == pytest.approx([4000.0, 1000.0])
    # Thresholds above every flow's size: one queue, processor sharing again.
    assert fluid_fcts(TWO, [5000.0], 1.0) == pytest.approx([4000.0, 2000.0])


def test_flows_within_one_level_share_and_move_down_together() -> None:
    # A and B (both 2000 B) at t = 0, threshold 500: shared to 500 each (t = 1000), both in
    # level 2, and share on (600 each at t = 1200); C (300 B) arrives at 1200 into level 1 and
    # runs alone to 1500; A and B then share what is left (1400 each at 1/2: 2800 s) and
    # finish at 4300.
    flows = [Flow(0.0, 2000.0), Flow(0.0, 2000.0), Flow(1200.0, 300.0)]
    assert fluid_fcts(flows, [500.0], 1.0) == pytest.approx([4300.0, 4300.0, 300.0])


def test_the_link_is_never_idle_with_work_waiting_whatever_the_thresholds() -> None:
    # Every scheme here is work-conserving: the busy periods, so the time the last flow
    # finishes, cannot depend on the thresholds.
    rng = random.Random(7)
    flows = sorted(
        (Flow(rng.uniform(0, 50_000), float(rng.randint(1, 20_000))) for _ in range(40)),
        key=lambda f: f.arrival_s,
    )
    ends = {
        tuple(thresholds): max(f.arrival_s + t for f, t in zip(flows, fcts, strict=True))
        for thresholds in ([], [1000.0], [100.0, 5000.0, 9000.0])
        for fcts in [fluid_fcts(flows, thresholds, 1.0)]
    }
    assert len({round(end, 6) for end in ends.values()}) == 1


def test_sizes_are_drawn_as_netsim_draws_them() -> None:
    web = load_workload("websearch")  # first points (6, 0), (6, 0.15), (13, 0.2) packets
    assert draw_size(web, 0.1) == 6 * 1460  # inside the step at 6 packets
    assert draw_size(web, 0.175) == 10 * 1460  # 9.5 packets, rounded up
    flows = poisson_flows(web, 0.5, 2000, 1, 1e6)
    assert all(b.arrival_s > a.arrival_s for a, b in itertools.pairwise(flows))
    # Offered bytes over the span: the load, within sampling error of a heavy tail.
    offered = sum(f.size_bytes for f in flows) / flows[-1].arrival_s / 1e6
    assert offered == pytest.approx(0.5, rel=0.2)


# Half the flows 1000 B, half 3000 B (E[S] = 2000 B).
TWO_SIZES = FlowSizeCdf(points=((1000.0, 0.0), (1000.0, 0.5), (3000.0, 0.5), (3000.0, 1.0)))


def test_the_model_mean_fct_worked_by_hand() -> None:
    # Load 0.5: lambda = 0.5 / 2000 flows per byte-time. One queue: M/G/1-PS, E[S] / (1 - rho).
    assert mlfq_mean_fct(TWO_SIZES, 0.5, []) == pytest.approx(4000.0)
    # Threshold 1000: rho_1000 = lambda x 1000 = 0.25. A 1000 B flow: 1000 / 0.75 = 1333.3.
    # A 3000 B flow waits lambda E[min(S, 1000)^2] / (2 x 0.75 x 0.5) = 250 / 0.75 = 333.3
    # and sends at 1 - 0.5: 6000; mean (1333.3 + 6333.3) / 2.
    assert mlfq_mean_fct(TWO_SIZES, 0.5, [1000.0]) == pytest.approx(3833.333, rel=1e-6)
    # A threshold inside (1000, 3000) only adds the large flows' bytes to the top queue.
    assert mlfq_mean_fct(TWO_SIZES, 0.5, [2000.0]) > mlfq_mean_fct(TWO_SIZES, 0.5, [1000.0])
    assert mlfq_optimum(TWO_SIZES, 0.5, 2) == [1000]


def test_truncated_second_moment_on_a_uniform_piece() -> None:
    # S uniform on (1000, 3000] after a step at 1000 with half the flows: E[min(S, 2000)^2] =
    # 0.5 x 1000^2 + integral_1000^2000 t^2 (0.5 / 2000) dt + 0.25 x 2000^2 (flows above
    # 2000) = 500 000 + 583 333.3 + 1 000 000.
    cdf = FlowSizeCdf(points=((1000.0, 0.0), (1000.0, 0.5), (3000.0, 1.0)))
    expected = 0.5 * 1000.0**2 + (2000.0**3 - 1000.0**3) / 3 * 0.5 / 2000 + 0.25 * 2000.0**2
    assert truncated_second_moment(cdf, 2000.0) == pytest.approx(expected)


def test_the_model_mean_fct_agrees_with_the_fluid_simulation_per_level() -> None:
    # 10, 200 and 600 packets (the simulation draws whole packets of 1460 B, as netsim does).
    cdf = FlowSizeCdf(points=((14_600.0, 0.0), (14_600.0, 0.6), (292_000.0, 0.9), (876_000.0, 1.0)))
    thresholds, load = [14_600.0, 146_000.0], 0.7
    flows = poisson_flows(cdf, load, 20_000, 3, 1.0)
    kept = list(zip(flows, fluid_fcts(flows, thresholds, 1.0), strict=True))[2000:]  # warm-up
    for low, high in itertools.pairwise([0.0, *thresholds, math.inf]):
        inside = [(f.size_bytes, fct) for f, fct in kept if low < f.size_bytes <= high]
        predicted = [mlfq_fct_of_size(cdf, load, thresholds, size) for size, _ in inside]
        measured = [fct for _, fct in inside]
        assert statistics.fmean(measured) == pytest.approx(statistics.fmean(predicted), rel=0.05)
