"""The tuner's summary read from a real Prometheus holding a backfilled history
(history.py), then one tuning pass over it: telemetry in, changes with evidence out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.intent.loader import parse_intent
from controller.prometheus.promql import make_promql
from controller.telemetry.tuning_summary import read_summary
from controller.tuning.summary import TelemetrySummary
from controller.tuning.tune import propose
from lab.prometheus import running_prometheus
from tests.integration.tuning.history import tuner_intent, write_history

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TelemetrySummary]:
    root: Path = tmp_path_factory.mktemp("tuner-prometheus")
    end = int(time.time()) - 2
    history = write_history(root / "history.om", end)
    with running_prometheus(root / "server", history=history) as server:
        client = make_promql(server.url, 10.0)
        try:
            yield read_summary(client, datetime.fromtimestamp(end, UTC), 600)
        finally:
            client.close()


def test_queues_carry_the_windows_aggregates(summary: TelemetrySummary) -> None:
    queues = {(q.port, q.service_class): q for q in summary.queues}
    # Queue 0 has no class: nothing to tune, left out.
    assert set(queues) == {("Ethernet0", "storage"), ("Ethernet4", "bulk")}
    storage = queues["Ethernet0", "storage"]
    assert storage.speed_gbps == 25
    assert storage.utilisation == pytest.approx(0.5)
    # Marks 0.1 for 60 samples and 0.2 for 60: mean 0.15.
    assert storage.mark_fraction == pytest.approx(0.15)
    # Occupancy 0, 1000, ..., 119 000: Prometheus' quantile interpolates at rank q (n - 1):
    # p95 at 0.95 x 119 = 113.05 -> 113 050; p50 at 59.5 -> 59 500.
    assert storage.occupancy_p95_bytes == pytest.approx(113_050)
    assert storage.occupancy_p50_bytes == pytest.approx(59_500)
    assert storage.threshold_bytes == pytest.approx(100_000)
    assert storage.tx_bytes_per_s == pytest.approx(1.5e9)
    # Pause frames on storage's priority join its queue: 3/s for 60 samples, 1/s for 60.
    assert storage.pfc_tx_pause_per_s == pytest.approx(2.0)
    assert storage.pfc_rx_pause_per_s == pytest.approx(0.5)
    bulk = queues["Ethernet4", "bulk"]
    assert (bulk.speed_gbps, bulk.mark_fraction, bulk.dropped_packets_per_s) == (100, 0.0, 2.0)
    assert bulk.threshold_bytes is None
    assert bulk.pfc_tx_pause_per_s is None  # no pause series for its port and class


def test_host_metrics_give_fan_in_packet_sizes_and_flow_sizes(summary: TelemetrySummary) -> None:
    (level,) = summary.qjump_levels
    # Fan-in: host1 peaks at 3, host2 at 5 once; packets: host2's 1000 B once.
    assert (level.level, level.max_fan_in, level.max_packet_bytes) == (7, 5, 1000)
    rpc = summary.flow_sizes["rpc"]
    edges = [edge for edge, _ in rpc.buckets]
    assert edges == [10_000, 50_000, 2_000_000, float("inf")]
    # increase() extrapolates every bucket by the same factor, so the fractions are exact:
    # 5 : 9 : 10 : 10 of the total.
    fractions = [count / rpc.flows for _, count in rpc.buckets]
    assert fractions == pytest.approx([0.5, 0.9, 1.0, 1.0])
    # Two hosts x 10 flows per 5 s over ~600 s: about 2 400 flows.
    assert 2_300 < rpc.flows < 2_500
    assert rpc.load is None  # rpc has no queue in this history


def test_the_hosts_small_flows_give_each_class_its_p99_fct(summary: TelemetrySummary) -> None:
    # rpc's small flows: 0.8 of them within 1 ms, 0.9 within 2 ms, all within 10 ms; the p99
    # lies 0.09 / 0.1 into (2, 10] ms: 2 + 0.9 x 8 = 9.2 ms. bulk finished medium flows only.
    assert set(summary.small_flow_fct) == {"rpc"}
    rpc = summary.small_flow_fct["rpc"]
    assert rpc.p99_us == pytest.approx(9_200)
    assert 2_300 < rpc.flows < 2_500  # two hosts x 10 flows per 5 s over ~600 s


def test_a_tuning_pass_over_the_summary(summary: TelemetrySummary) -> None:
    intent = parse_intent(tuner_intent())
    found = {c.parameter: c for c in propose(intent, summary, now_s=summary.end_s, last_changed={})}
    # storage marks (0.15) at utilisation 0.5 < 0.9: lambda 1 -> 1.25 (25 % step);
    # K = 25e9 / 8 x 40e-6 x 1.25 = 156 250 B.
    ecn = found["ecn_lambda/storage/25gbps"]
    assert ecn.applies
    assert ecn.proposed == 1.25
    assert ecn.related["standard_threshold_bytes"] == 156_250
    assert ecn.evidence.inputs["mark_fraction_mean"] == pytest.approx(0.15)
    # bulk never marks and drops 2/s: DynaQ.
    assert found["algorithm/bulk"].proposed == "dynaq"
