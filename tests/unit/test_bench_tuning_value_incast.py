"""bench/tuning_value.py's incast class (no simulation): the netsim parts it adds beside the
Poisson classes carry the load asked of them over the Poisson arrivals' span, every event
from all the other hosts to one, each seed its own draw and the same draw again."""

from __future__ import annotations

from bench.tuning_value import SCENARIOS, STORAGE_SHARE, bench_intent
from controller.qos.pias import load_workload

FLOWS = 1000
HOSTS = 4  # the example fabric: 2 leaves x 2 hosts, 25 Gb/s host links
LINK_BYTES_PER_S = 25e9 / 8


def test_the_incast_class_carries_its_load_over_the_poisson_span() -> None:
    first, second = SCENARIOS["incast"]
    intent = bench_intent()
    assert first.extra(intent, FLOWS, 1) == []  # phase one: storage idle, no incast
    parts = second.extra(intent, FLOWS, 1)
    storage = [c.name for c in intent.service_classes].index("storage")
    assert {p["kind"] for p in parts} == {"incast"}
    assert {p["class"] for p in parts} == {storage}
    assert {(p["senders"], p["bytes"]) for p in parts} == {(HOSTS - 1, 64_000)}
    assert {p["receiver"] for p in parts} == set(range(HOSTS))
    # The span the 750 Poisson flows' arrivals take at load 0.525 of the four host links.
    span_s = 750 * load_workload("websearch").mean_bytes() / (0.525 * HOSTS * LINK_BYTES_PER_S)
    starts = [p["at_ns"] / 1e9 for p in parts]
    assert starts == sorted(starts)
    assert starts[0] > 0
    assert starts[-1] < span_s
    carried = len(parts) * (HOSTS - 1) * 64_000 / span_s / (HOSTS * LINK_BYTES_PER_S)
    # Poisson event counts: within 10 % of the 0.175 asked (2 000-odd events).
    assert abs(carried - 0.7 * STORAGE_SHARE) < 0.1 * 0.7 * STORAGE_SHARE


def test_each_seed_draws_its_own_incast_and_the_same_one_again() -> None:
    second = SCENARIOS["incast"][1]
    intent = bench_intent()
    assert second.extra(intent, FLOWS, 1) == second.extra(intent, FLOWS, 1)
    assert second.extra(intent, FLOWS, 1) != second.extra(intent, FLOWS, 2)
