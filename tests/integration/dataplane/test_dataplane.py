"""The data plane against a real Redis: CONFIG_DB in, COUNTERS_DB out.

The switch has two 1 Gb/s ports (the vsonic seed's oids). Ethernet0 has four DWRR queues
with weights 4:3:2:1, each behind a DCTCP-style step at K = 30,000 B and fed by two DCTCP
senders; Ethernet4 queue 0 has a step at 4,000,000 B behind a 200,000 B static buffer limit.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.integration.dataplane.conftest import Fields, Running, SeededSwitch, eventually
from vsonic.redis_process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

WEIGHTS = {0: 4, 1: 3, 2: 2, 3: 1}
PORT0_QUEUES = [f"Ethernet0:{q}" for q in WEIGHTS]


def step_profile(bytes_: int) -> Fields:
    return {
        "green_min_threshold": str(bytes_),
        "green_max_threshold": str(bytes_),
        "green_drop_probability": "100",
        "wred_green_enable": "true",
        "ecn": "ecn_all",
    }


def qos_config() -> dict[str, Fields]:
    entries: dict[str, Fields] = {
        "WRED_PROFILE|ecn_low": step_profile(30_000),
        "WRED_PROFILE|ecn_high": step_profile(4_000_000),
        "BUFFER_PROFILE|q_limit": {"pool": "egress_lossy_pool", "size": "0", "static_th": "200000"},
        "QUEUE|Ethernet4|0": {"scheduler": "w4", "wred_profile": "ecn_high"},
        "BUFFER_QUEUE|Ethernet4|0": {"profile": "q_limit"},
        "FLEX_COUNTER_TABLE|QUEUE": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "100"},
        "FLEX_COUNTER_TABLE|PORT": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "100"},
        # Not in SONiC's QUEUE group: the watermark and the marked counts have their own.
        "FLEX_COUNTER_TABLE|QUEUE_WATERMARK": {
            "FLEX_COUNTER_STATUS": "enable",
            "POLL_INTERVAL": "100",
        },
        "FLEX_COUNTER_TABLE|WRED_ECN_QUEUE": {
            "FLEX_COUNTER_STATUS": "enable",
            "POLL_INTERVAL": "100",
        },
    }
    for q, w in WEIGHTS.items():
        entries[f"SCHEDULER|w{w}"] = {"type": "DWRR", "weight": str(w)}
        entries[f"QUEUE|Ethernet0|{q}"] = {"scheduler": f"w{w}", "wred_profile": "ecn_low"}
    return entries


TRAFFIC = (
    "".join(f"q{q} port=Ethernet0 queue={q} kind=dctcp flows=2\n" for q in WEIGHTS)
    + "solo port=Ethernet4 queue=0 kind=dctcp flows=2\n"
)


def total(rows: list[Fields], field: str) -> int:
    return sum(int(r.get(field, "0")) for r in rows)


def test_counters_move_and_dwrr_shares_follow_the_weights(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    switch.write_config(qos_config())
    dp = start_dataplane(TRAFFIC, "--step-ms", "5", "--fast-interval-ms", "20")

    def read() -> list[Fields]:
        return switch.queue_counters("COUNTERS", PORT0_QUEUES)

    eventually(lambda: total(read(), "SAI_QUEUE_STAT_PACKETS") >= 20_000, "traffic on Ethernet0")
    first = read()
    eventually(
        lambda: (
            total(read(), "SAI_QUEUE_STAT_PACKETS")
            >= total(first, "SAI_QUEUE_STAT_PACKETS") + 60_000
        ),
        "60,000 more packets",
    )
    second = read()

    # Counters only grow.
    for a, b in zip(first, second, strict=True):
        for field, value in a.items():
            if (
                field.endswith(("PACKETS", "_BYTES"))
                and "OCCUPANCY" not in field
                and "WATERMARK" not in field
            ):
                assert int(b[field]) >= int(value), field
    # DWRR with a quantum of weight x 1500 B and 1500 B packets sends exactly w_i packets per
    # round while every queue is backlogged, so each queue's share of the bytes is
    # w_i / 10 = .4/.3/.2/.1. The queues stay backlogged: K = 30,000 B is 20 packets, a
    # queue's bandwidth-delay product at 100 us is at most 0.4 Gb/s x 100 us = 5,000 B, and a
    # DCTCP cut at most halves the window. What is left is the cut of the window's edges
    # through a round (10 packets of about 60,000): 3 % of each share is far above that.
    delta = [
        int(b["SAI_QUEUE_STAT_BYTES"]) - int(a["SAI_QUEUE_STAT_BYTES"])
        for a, b in zip(first, second, strict=True)
    ]
    shares = [d / sum(delta) for d in delta]
    for q, share in zip(WEIGHTS, shares, strict=True):
        want = WEIGHTS[q] / sum(WEIGHTS.values())
        assert abs(share - want) <= 0.03 * want, (q, shares)
    # The queues cross K = 30,000 B and get marked, every one of them.
    assert all(int(r["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"]) > 0 for r in second), second
    assert all(int(r["SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"]) >= 30_000 for r in second), second

    # The fresher feed carries the same SAI fields under its own prefix, plus the current
    # occupancy and the whole watermark, which no SONiC counter group polls; the status says
    # which intervals are in force (POLL_INTERVAL 100 from FLEX_COUNTER_TABLE).
    fast = switch.queue_counters("SLUICE_FAST_COUNTERS", PORT0_QUEUES)
    unpolled = {"SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", "SAI_QUEUE_STAT_WATERMARK_BYTES"}
    assert set(fast[0]) == set(second[0]) | unpolled
    assert total(fast, "SAI_QUEUE_STAT_PACKETS") > 0
    state = switch.state().hgetall("SLUICE_DATAPLANE_STATE|global")
    assert (state["mode"], state["flex_queue_interval_ms"], state["fast_interval_ms"]) == (
        "running",
        "100",
        "20",
    )

    assert dp.stop() == 0, dp.log_text()
    assert switch.state().hget("SLUICE_DATAPLANE_STATE|global", "mode") == "stopped"


def test_a_stand_in_beside_a_real_switch_feeds_only_its_fresher_feed_for_its_ports(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    """``--no-flex-counters --ports Ethernet0``: the demo's stand-in ASIC beside a real switch,
    whose syncd owns ``COUNTERS:<oid>`` (docs/dataplane.md). Every flex group is enabled at
    100 ms, and traffic is offered on both ports."""
    switch.write_config(qos_config())
    seeded = switch.queue_counters("COUNTERS", [*PORT0_QUEUES, "Ethernet4:0"])
    dp = start_dataplane(TRAFFIC, "--fast-interval-ms", "100", "--no-flex-counters",
                         "--ports", "Ethernet0")  # fmt: skip

    def fast() -> list[Fields]:
        return switch.queue_counters("SLUICE_FAST_COUNTERS", [*PORT0_QUEUES, "Ethernet4:0"])

    eventually(lambda: total(fast()[:-1], "SAI_QUEUE_STAT_PACKETS") >= 20_000, "the feed")
    state = switch.state().hgetall("SLUICE_DATAPLANE_STATE|global")
    assert fast()[-1] == {}  # Ethernet4 is not modelled: its class sends nothing
    # Nothing written where the switch's own counter polling writes.
    assert switch.queue_counters("COUNTERS", [*PORT0_QUEUES, "Ethernet4:0"]) == seeded
    assert (state["flex_queue_interval_ms"], state["fast_interval_ms"]) == ("0", "100")
    assert dp.stop() == 0, dp.log_text()


def test_a_port_counts_exactly_what_its_queues_sent(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    switch.write_config(qos_config())
    dp = start_dataplane(TRAFFIC, "--step-ms", "5")
    names = [f"Ethernet0:{q}" for q in range(8)]
    port_oid = switch.counters().hget("COUNTERS_PORT_NAME_MAP", "Ethernet0")
    counters = switch.counters()

    def snapshot() -> tuple[list[Fields], Fields]:
        oids = counters.hgetall("COUNTERS_QUEUE_NAME_MAP")
        pipe = counters.pipeline(transaction=True)
        for name in names:
            pipe.hgetall(f"COUNTERS:{oids[name]}")
        pipe.hgetall(f"COUNTERS:{port_oid}")
        *queues, port = pipe.execute()
        return queues, port

    eventually(
        lambda: int(snapshot()[1]["SAI_PORT_STAT_IF_OUT_OCTETS"]) > 1_000_000, "port traffic"
    )
    queues, port = snapshot()
    # Queues and port are written in one MULTI/EXEC and read in one: the port's octets,
    # packets and discards are the sums over its eight queues.
    assert int(port["SAI_PORT_STAT_IF_OUT_OCTETS"]) == total(queues, "SAI_QUEUE_STAT_BYTES")
    assert int(port["SAI_PORT_STAT_IF_OUT_UCAST_PKTS"]) == total(queues, "SAI_QUEUE_STAT_PACKETS")
    assert int(port["SAI_PORT_STAT_IF_OUT_DISCARDS"]) == total(
        queues, "SAI_QUEUE_STAT_DROPPED_PACKETS"
    )
    assert dp.stop() == 0, dp.log_text()


def test_lowering_a_wred_threshold_in_config_db_starts_marking(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    switch.write_config(qos_config())
    dp = start_dataplane(TRAFFIC, "--step-ms", "5")

    def read() -> Fields:
        return switch.queue_counters("COUNTERS", ["Ethernet4:0"])[0]

    # The 200,000 B buffer limit keeps the queue far below the 4,000,000 B step, so WRED's
    # probability is exactly 0: senders learn of congestion only from drops.
    eventually(
        lambda: int(read()["SAI_QUEUE_STAT_DROPPED_PACKETS"]) > 0, "tail drops on Ethernet4:0"
    )
    before = read()
    assert before["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"] == "0"
    assert int(before["SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"]) <= 200_000

    # What the agent does on a switch: lower min first, then max, so max >= min holds.
    switch.config().hset("WRED_PROFILE|ecn_high", "green_min_threshold", "20000")
    switch.config().hset("WRED_PROFILE|ecn_high", "green_max_threshold", "20000")
    # The senders grow their windows until the queue passes 20,000 B (they cut only on a mark
    # or a drop, and drops need 200,000 B), so marks must appear.
    eventually(
        lambda: int(read()["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"]) > 0, "marks on Ethernet4:0"
    )
    assert dp.stop() == 0, dp.log_text()
    assert '"event":"queue_updated"' in dp.log_text()


def test_a_disabled_flex_group_is_not_published(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    config = qos_config()
    config["FLEX_COUNTER_TABLE|QUEUE"] = {"FLEX_COUNTER_STATUS": "disable"}
    switch.write_config(config)
    dp = start_dataplane(TRAFFIC, "--step-ms", "5", "--fast-interval-ms", "20")
    eventually(
        lambda: (
            total(
                switch.queue_counters("SLUICE_FAST_COUNTERS", PORT0_QUEUES),
                "SAI_QUEUE_STAT_PACKETS",
            )
            > 10_000
        ),
        "the fresher feed moving",
    )
    # The seed's zeros stay: SONiC does not poll a disabled group.
    flex = switch.queue_counters("COUNTERS", PORT0_QUEUES)
    assert total(flex, "SAI_QUEUE_STAT_PACKETS") == 0
    assert dp.stop() == 0, dp.log_text()


def test_exit_codes_for_bad_traffic_and_missing_redis(
    dataplane_binary: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("a port=Ethernet0 queue=9 kind=dctcp\n")
    run = subprocess.run(
        [str(dataplane_binary), "--traffic", str(bad)], capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 2
    assert "traffic line 1" in run.stderr
    nobody = free_port()
    run = subprocess.run(
        [str(dataplane_binary), "--redis-port", str(nobody), "--io-timeout-ms", "500"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 3, run.stderr


def test_a_redis_restart_is_waited_out_and_counters_do_not_go_back(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    switch.write_config(qos_config())
    dp = start_dataplane(TRAFFIC, "--step-ms", "5")

    def packets() -> int:
        try:
            return total(switch.queue_counters("COUNTERS", PORT0_QUEUES), "SAI_QUEUE_STAT_PACKETS")
        except (KeyError, redis.ConnectionError):
            return -1  # name maps not seeded yet, or Redis down

    eventually(lambda: packets() > 10_000, "traffic before the restart")
    before = packets()
    switch.restart_empty()
    eventually(lambda: "redis_error" in dp.log_text(), "the data plane noticing")
    switch.seed()  # zeros in every COUNTERS hash again, as a rebooted switch would have
    switch.write_config(qos_config())
    # Reconnected, it re-reads CONFIG_DB and the name maps and publishes its own counts again,
    # which go on from where they were: they only ever grow.
    eventually(lambda: packets() > before, "counters published again, past the old values")
    assert dp.process.poll() is None
    assert dp.stop() == 0, dp.log_text()
    assert '"event":"redis_reconnected"' in dp.log_text()


def test_a_booted_switch_polls_at_sonics_defaults_and_only_enabled_groups(
    switch: SeededSwitch, start_dataplane: Callable[..., Running]
) -> None:
    # The seed holds init_cfg.json's FLEX_COUNTER_TABLE: PORT, QUEUE and QUEUE_WATERMARK
    # enabled with no POLL_INTERVAL, so orchagent's defaults apply (sonic-swss flexcounterorch.cpp);
    # WRED_ECN_QUEUE has no entry, so it is not polled.
    dp = start_dataplane(TRAFFIC, "--step-ms", "5", "--state-interval-ms", "100")

    def intervals() -> tuple[str, ...]:
        state = switch.state().hgetall("SLUICE_DATAPLANE_STATE|global")
        groups = ("queue", "port", "queue_watermark", "wred_ecn_queue")
        return tuple(state.get(f"flex_{g}_interval_ms", "") for g in groups)

    eventually(lambda: intervals() == ("10000", "1000", "60000", "0"), "SONiC's default intervals")
    # PORT (1 s) publishes within a few seconds; the queue hashes keep only the groups' stats.
    port_oid = switch.counters().hget("COUNTERS_PORT_NAME_MAP", "Ethernet0")
    eventually(
        lambda: (
            int(switch.counters().hget(f"COUNTERS:{port_oid}", "SAI_PORT_STAT_IF_OUT_OCTETS") or 0)
            > 0
        ),
        "port counters at 1 s",
    )
    queue = switch.queue_counters("COUNTERS", ["Ethernet0:0"])[0]
    assert "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS" not in queue
    assert "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES" not in queue
    assert dp.stop() == 0, dp.log_text()
