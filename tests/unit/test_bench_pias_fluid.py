"""The fluid MLFQ model of bench/pias_fluid.py, on flows worked by hand (capacity 1 byte per
second, so sizes are also service times), and one property no scheduling can change."""

from __future__ import annotations

import itertools
import random

import pytest

from bench.pias_fluid import Flow, draw_size, fluid_fcts, poisson_flows
from controller.qos.pias import load_workload

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
