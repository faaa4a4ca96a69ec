"""bench/tuning_twin.py on a tiny run: the real netsim binary (``cargo build -p netsim``),
the real tuner. Structure only: both runs share the workload and seed, the tuner's verdicts
(and only what applied) reach the tuned intent, every class is reported; no FCT value is
asserted (the figures are in docs/tuning.md)."""

from __future__ import annotations

import math

import pytest

from bench import tuning_twin
from controller.twin.translate import Request

REQUEST = Request("websearch", 0.7, 150, 3, tuning_twin.MIX)
# The PIAS rule judges drift from 200 finished flows of its class (TWIN_PIAS_MIN_FLOWS): a
# mix whose rpc class holds 70 % of the flows gets 280 of them from 400 flows, where the
# bench's mix (rpc 13 %) needs 1600 flows of data mining, 92 CPU s of netsim against 18.
RPC_HEAVY_MIX = (
    ("control", 0.02),
    ("rpc", 0.7),
    ("storage", 0.08),
    ("analytics", 0.12),
    ("best-effort", 0.08),
)


def test_static_and_tuned_run_the_same_flows_and_differ_in_config() -> None:
    static = tuning_twin.static_intent()
    doc = tuning_twin.one_seed(static, REQUEST, 1, tuning_twin.NETSIM, 120.0)

    assert doc["seed"] == 3
    assert doc["workload"]["static"] == doc["workload"]["tuned"]
    assert doc["workload"]["static"]["seed"] == 3
    # Every rule gave a verdict, and what applied (only that) reached the intent the tuned
    # run used. On this workload the ECN rule holds: the twin's ports carry what they are
    # offered (below the utilisation target), which no threshold raises (controller/tuning/
    # ecn.py, "demand-limited"); a tuned intent equal to the static one runs the same flows
    # to the same FCTs.
    applied = doc["rounds"][0]["applied"]
    held = doc["rounds"][0]["held"]
    assert applied or held
    assert bool(applied) == bool(doc["diff"])
    diffed = {entry["path"] for entry in doc["diff"]}
    for c in applied:
        if c["parameter"].startswith("ecn_lambda/"):
            name = c["parameter"].split("/")[1]
            assert f"service_classes[{name}].ecn_lambda" in diffed
    ecn_opinions = [
        c
        for c in held
        if c["parameter"].startswith("ecn_lambda/") and c["inputs"].get("opinion") is not False
    ]
    assert ecn_opinions
    assert all(c["held"].startswith("demand-limited") for c in ecn_opinions)
    if not doc["diff"]:
        assert doc["tuned"] == doc["static"]
    assert all(
        f"service_classes[{c['parameter'].removeprefix('weight/')}].scheduling.weight" in diffed
        for c in applied
        if c["parameter"].startswith("weight/")
    )
    # Weights stay inside the operator's ranges (the tuner's hard bound).
    for entry in doc["diff"]:
        if not entry["path"].endswith(".scheduling.weight"):
            continue  # a class's lambda, when the ECN rule acts on the twin's marks
        name = entry["path"].split("[")[1].split("]")[0]
        low, high = tuning_twin.RANGES[name]
        assert low <= entry["after"] <= high
    names = [c.name for c in static.service_classes]
    for side in ("static", "tuned"):
        assert [row["name"] for row in doc[side]] == [*names, "all"]
        assert all(row["mean_us"] > 0 and row["p99_us"] >= 0 for row in doc[side])
    assert [row["name"] for row in doc["change"]] == [*names, "all"]
    # The static intent is the example's, plus ranges: weights are the example's own.
    weights = {c.name: c.scheduling.weight for c in static.service_classes}
    assert weights["storage"] == 50
    assert weights["analytics"] == 30


def test_summary_reads_each_class_from_the_twin() -> None:
    static = tuning_twin.static_intent()
    run = tuning_twin.run_twin(static, REQUEST, tuning_twin.NETSIM, 120.0)
    summary = tuning_twin.summary_from_run(run, static)

    classes = {q.service_class for q in summary.queues}
    assert classes == {c.name for c in static.service_classes}
    assert all(q.tx_bytes_per_s is not None and q.tx_bytes_per_s > 0 for q in summary.queues)
    # One port's utilisation is the sum of what its classes sent, over its line rate.
    line = summary.queues[0].speed_gbps * 1e9 / 8
    total = sum(q.tx_bytes_per_s or 0.0 for q in summary.queues)
    assert abs((summary.queues[0].utilisation or 0.0) - total / line) < 1e-9
    # Marks per class where the summary reads them (netsim's hops report, leaf_down).
    rows = {
        static.service_classes[int(r["class"])].name: r
        for r in run.raw["hops"]["by_class"]
        if r["hop"] == "leaf_down"
    }
    for queue in summary.queues:
        row = rows[queue.service_class]
        assert queue.mark_fraction == row["marked_packets"] / max(row["packets"], 1)
    assert any((q.mark_fraction or 0.0) > 0 for q in summary.queues)  # the load marks
    # Flow sizes as the hosts' exporters would bin them: every class's finished flows, in
    # cumulative buckets (+Inf last, holding them all), with the class's load.
    per_class: dict[str, list[int]] = {}
    for flow in run.flows:
        name = static.service_classes[int(flow["class"])].name
        per_class.setdefault(name, []).append(int(flow["bytes"]))
    assert set(summary.flow_sizes) == set(per_class)
    for name, sample in summary.flow_sizes.items():
        counts = [count for _, count in sample.buckets]
        assert counts == sorted(counts)
        assert sample.buckets[-1] == (math.inf, len(per_class[name]))
        # a flow of b payload bytes counts as b x 1500 / 1460 on the wire
        smallest = min(per_class[name]) * 1500 / 1460
        first = next(count for edge, count in sample.buckets if edge >= smallest)
        assert first >= 1
        loads = {q.service_class: q.tx_bytes_per_s for q in summary.queues}
        assert sample.load == pytest.approx((loads[name] or 0.0) / line)


def test_a_workload_unlike_the_pias_class_s_own_is_tuned_in_the_twin() -> None:
    # The example's rpc class names websearch for its PIAS thresholds; data-mining flows
    # drift from it (KS distance well above 0.1), and with enough finished flows the PIAS
    # rule proposes thresholds from the measured sizes, which reach the tuned intent.
    static = tuning_twin.static_intent()
    request = Request("datamining", 0.7, 400, 1, RPC_HEAVY_MIX)
    doc = tuning_twin.one_seed(static, request, 1, tuning_twin.NETSIM, 300.0)
    pias = [c for c in doc["rounds"][0]["applied"] if c["parameter"].startswith("pias")]
    assert [c["parameter"] for c in pias] == ["pias/rpc"], doc["rounds"][0]
    assert pias[0]["outputs"]["nearest_workload"] == "datamining"
    assert "service_classes[rpc].pias.thresholds_bytes" in {e["path"] for e in doc["diff"]}
