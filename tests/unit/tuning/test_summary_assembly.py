"""The summary builder's pure part: samples (as PromQL answers them) to summaries."""

from __future__ import annotations

import math

import pytest

from controller.prometheus.promql import Sample
from controller.telemetry.tuning_summary import (
    assemble_flow_sizes,
    assemble_qjump,
    assemble_queues,
    class_loads,
)


def queue_sample(value: float, klass: str = "storage", port: str = "Ethernet0") -> Sample:
    labels = {"switch": "leaf1", "port": port, "queue": "3", "class": klass}
    return Sample(labels, value, 0.0)


def port_sample(value: float, port: str = "Ethernet0") -> Sample:
    return Sample({"switch": "leaf1", "port": port}, value, 0.0)


def test_queues_join_their_ports_speed_and_utilisation() -> None:
    (queue,) = assemble_queues(
        {"mark_fraction": [queue_sample(0.2)], "tx_bytes_per_s": [queue_sample(1e9)]},
        {"utilisation": [port_sample(0.7)], "speed_bps": [port_sample(25e9)]},
    )
    assert (queue.service_class, queue.speed_gbps, queue.utilisation) == ("storage", 25, 0.7)
    assert (queue.mark_fraction, queue.tx_bytes_per_s) == (0.2, 1e9)
    assert queue.occupancy_p95_bytes is None  # not answered: no measurement, not zero


def test_unclassed_queues_ports_without_speed_and_nan_are_left_out() -> None:
    found = assemble_queues(
        {
            "mark_fraction": [
                queue_sample(0.2, klass=""),  # no class
                queue_sample(0.1, port="Ethernet4"),  # port without a speed
                queue_sample(math.nan),  # NaN: no value
            ]
        },
        {"speed_bps": [port_sample(25e9)]},
    )
    assert found == ()


def test_qjump_levels_take_whole_numbers() -> None:
    (level,) = assemble_qjump(
        [Sample({"level": "7"}, 2.4, 0.0)], [Sample({"level": "7"}, 1000.0, 0.0)]
    )
    assert (level.level, level.max_fan_in, level.max_packet_bytes) == (7, 3, 1000)


def test_flow_buckets_are_ordered_by_le_and_carry_the_class_load() -> None:
    samples = [
        Sample({"class": "rpc", "le": "+Inf"}, 10.0, 0.0),
        Sample({"class": "rpc", "le": "1000"}, 4.0, 0.0),
        Sample({"class": "idle", "le": "+Inf"}, 0.0, 0.0),  # no flows: no sample
    ]
    found = assemble_flow_sizes(samples, {"rpc": 0.3})
    assert list(found) == ["rpc"]
    assert found["rpc"].buckets == ((1000.0, 4.0), (math.inf, 10.0))
    assert found["rpc"].load == 0.3


def test_a_class_load_is_the_mean_of_its_ports_shares() -> None:
    # 1.25e9 B/s on 25 Gb/s is 0.4; 2.5e9 B/s on 100 Gb/s is 0.2: mean 0.3.
    queues = assemble_queues(
        {
            "tx_bytes_per_s": [
                queue_sample(1.25e9),
                queue_sample(2.5e9, port="Ethernet4"),
            ]
        },
        {"speed_bps": [port_sample(25e9), port_sample(100e9, "Ethernet4")]},
    )
    assert class_loads(queues)["storage"] == pytest.approx(0.3)


def test_pause_frames_join_the_lossless_class_queue_on_their_port() -> None:
    # The collector's PFC series are per port and priority, labelled with the lossless class
    # on the priority: they join that class's queue on the port, and no other.
    pause = Sample(
        {"switch": "leaf1", "port": "Ethernet0", "priority": "3", "class": "storage"}, 4.0, 0.0
    )
    other = Sample(
        {"switch": "leaf1", "port": "Ethernet4", "priority": "3", "class": "storage"}, 9.0, 0.0
    )
    found = assemble_queues(
        {
            "mark_fraction": [queue_sample(0.2), queue_sample(0.0, klass="bulk")],
            "pfc_tx_pause_per_s": [pause, other],
            "pfc_rx_pause_per_s": [Sample(pause.labels, 0.5, 0.0)],
        },
        {"utilisation": [port_sample(0.7)], "speed_bps": [port_sample(100e9)]},
    )
    queues = {q.service_class: q for q in found}
    assert (queues["storage"].pfc_tx_pause_per_s, queues["storage"].pfc_rx_pause_per_s) == (
        4.0,
        0.5,
    )
    assert queues["bulk"].pfc_tx_pause_per_s is None  # lossy: no pause series
    assert set(queues) == {"storage", "bulk"}  # Ethernet4 has no speed: left out
