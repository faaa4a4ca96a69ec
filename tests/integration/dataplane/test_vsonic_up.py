"""`vsonic up` starts a data plane and a qos-agent next to each switch's Redis, `vsonic down`
stops them; and the whole switch-side loop runs: the data plane's counters drive the agent,
whose WRED writes the data plane applies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.integration.dataplane.conftest import Fields, eventually
from tests.support.ports import free_port_run
from vsonic.dataplane import AGENT, DATAPLANE
from vsonic.redis_process import free_port
from vsonic.supervisor import Started, is_running, load_state

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def env(dataplane_binary: Path, agent_binary: Path) -> dict[str, str]:
    return {
        **os.environ,
        "VSONIC_PASSWORD": "dataplane-test",
        DATAPLANE.env: str(dataplane_binary),
        AGENT.env: str(agent_binary),
    }


def _vsonic(args: str, env: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vsonic.cli", *args.split(), *more],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture
def one_switch(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[Started, Path]]:
    """`vsonic up` of one switch with 2 ports at 1 Gb/s, the traffic file at
    ``tmp_path/mix.txt`` (written by the test first), counters every 100 ms."""
    traffic = tmp_path / "mix.txt"
    traffic.write_text("q0 port=Ethernet0 queue=0 kind=dctcp flows=2\n")
    args = f"up --switches 1 --base-port {free_port()} --ports 2 --speed-gbps 1"
    up = _vsonic(args, env, "--state-dir", str(tmp_path), "--traffic", str(traffic),
                 "--flex-interval-ms", "100")  # fmt: skip
    started = load_state(tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        assert started is not None
        yield started, tmp_path
    finally:
        down = _vsonic("down", env, "--state-dir", str(tmp_path))
        assert down.returncode == 0, down.stderr


def _client(started: Started, db: int) -> redis.Redis[str]:
    port = int(started.dataplanes[0]["redis_port"])
    return redis.Redis(host="127.0.0.1", port=port, db=db, decode_responses=True)


def _queue_packets(redis_port: int, queue: str) -> int:
    client = redis.Redis(host="127.0.0.1", port=redis_port, db=2, decode_responses=True)
    try:
        oid = client.hget("COUNTERS_QUEUE_NAME_MAP", queue)
        return int(client.hget(f"COUNTERS:{oid}", "SAI_QUEUE_STAT_PACKETS") or 0)
    finally:
        client.close()


def test_up_runs_a_data_plane_and_an_agent_per_switch_and_down_stops_them(
    env: dict[str, str], tmp_path: Path
) -> None:
    traffic = tmp_path / "mix.txt"
    # No QoS configured yet: every queue is equal-weight DWRR; this class feeds queue 3.
    traffic.write_text("bulk port=Ethernet4 queue=3 kind=dctcp flows=1\n")
    args = f"up --switches 2 --base-port {free_port_run(2)} --ports 2 --speed-gbps 1"
    up = _vsonic(args, env, "--state-dir", str(tmp_path), "--traffic", str(traffic),
                 "--flex-interval-ms", "100")  # fmt: skip
    started = load_state(tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        assert started is not None
        assert [d["name"] for d in started.dataplanes] == ["vs1", "vs2"]
        assert [a["name"] for a in started.agents] == ["vs1", "vs2"]
        assert all(is_running(p["pid"]) for p in [*started.dataplanes, *started.agents])
        # Each switch's own Redis shows its own traffic, published by its data plane.
        for dp in started.dataplanes:
            redis_port = int(dp["redis_port"])

            def moving(redis_port: int = redis_port) -> bool:
                return _queue_packets(redis_port, "Ethernet4:3") > 1_000

            eventually(moving, f"counters moving on {dp['name']}")
            assert _queue_packets(redis_port, "Ethernet0:3") == 0
    finally:
        down = _vsonic("down", env, "--state-dir", str(tmp_path))
    assert down.returncode == 0, down.stderr
    assert "2 data plane(s), 2 agent(s)" in down.stdout
    assert not any(is_running(p["pid"]) for p in [*started.dataplanes, *started.agents])


def _write(client: redis.Redis[str], entries: dict[str, Fields]) -> None:
    pipe = client.pipeline(transaction=True)
    for key, fields in entries.items():
        stored: dict[str | bytes, bytes | float | int | str] = {}
        stored.update(fields)
        pipe.hset(key, mapping=stored)
    pipe.execute()


def _dataplane_events(state_dir: Path, event: str) -> list[dict[str, object]]:
    """The data plane's JSON log lines of one kind (its structured events)."""
    lines = (state_dir / "dataplane-vs1.log").read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return [e for e in events if e.get("event") == event]


def test_the_agent_moves_thresholds_from_the_data_planes_counters(
    one_switch: tuple[Started, Path],
) -> None:
    started, state_dir = one_switch
    # C = 1 Gb/s = 125,000,000 B/s, RTT 500 us, lambda 0.8: K = 125e6 x 500e-6 x 0.8 = 50,000 B.
    # Static per-queue minimum w_i / 10 x K: 20,000 / 15,000 / 10,000 / 5,000 B.
    weights = {0: 4, 1: 3, 2: 2, 3: 1}
    config: dict[str, Fields] = {
        "FLEX_COUNTER_TABLE|QUEUE": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "100"},
    }
    for q, w in weights.items():
        static = str(w * 5_000)
        config[f"SCHEDULER|w{w}"] = {"type": "DWRR", "weight": str(w)}
        config[f"WRED_PROFILE|q{q}"] = {
            "green_min_threshold": static, "green_max_threshold": static,
            "yellow_min_threshold": static, "yellow_max_threshold": static,
            "red_min_threshold": static, "red_max_threshold": static,
            "green_drop_probability": "100", "wred_green_enable": "true", "ecn": "ecn_all",
        }  # fmt: skip
        config[f"QUEUE|Ethernet0|{q}"] = {"scheduler": f"w{w}", "wred_profile": f"q{q}"}
        config[f"SLUICE_AGENT_QUEUE|Ethernet0|{q}"] = {
            "wred_profile": f"q{q}", "weight": str(w), "floor_bytes": "3000",
            "ceiling_bytes": "50000", "static_bytes": static, "speed_gbps": "1",
            "buffer_bytes": "1000000",
        }  # fmt: skip
    orders = {
        "algorithm": "mqecn", "interval_ms": "200", "rtt_us": "500", "lambda": "0.8",
        "hysteresis_pct": "5", "hdcq_k": "0.0625",
        "stale_after_ms": "2000", "queues": "0,1,2,3", "version": "v1",
    }  # fmt: skip
    cfg = _client(started, 4)
    _write(cfg, config)
    # The agent's orders only once the data plane runs the static profiles: otherwise, on a
    # slow machine, the data plane's first read could already hold the agent's thresholds
    # and there would be no in-place update to see below.
    # Our config sets the queue poll interval to 100 ms (default 1000) in the same transaction
    # as the QoS tables, so the data plane reporting 100 means it applied all of them.
    state = _client(started, 6)
    eventually(
        lambda: state.hget("SLUICE_DATAPLANE_STATE|global", "flex_queue_interval_ms") == "100",
        "the data plane running the QoS config",
    )
    _write(cfg, {"SLUICE_AGENT|global": orders})

    # Only queue 0 carries traffic. MQ-ECN (docs/qos-core.md): the lone backlogged queue's
    # share is C, so K_0 = C / C x K = 50,000 (the ceiling); an idle queue gets the share it
    # would have if it joined now, w_i / (4 + w_i) x C: queue 3 gets 1/5, K_3 = 10,000 B.
    def thresholds() -> tuple[str | None, str | None]:
        return cfg.hget("WRED_PROFILE|q0", "green_min_threshold"), cfg.hget(
            "WRED_PROFILE|q3", "green_max_threshold"
        )

    eventually(lambda: thresholds() == ("50000", "10000"), "the agent's MQ-ECN thresholds")
    queue_state = state.hgetall("SLUICE_AGENT_STATE|Ethernet0|0")
    assert (queue_state["basis"], queue_state["threshold_bytes"]) == ("computed", "50000"), (
        queue_state
    )

    # The data plane applied the agent's writes in place (no rebuild: senders untouched).
    def applied() -> bool:
        return any(
            (e.get("port"), e.get("queue")) == ("Ethernet0", 0)
            for e in _dataplane_events(state_dir, "queue_updated")
        )

    eventually(applied, "the data plane applying queue 0's new profile")


def test_up_refuses_a_missing_traffic_file_and_starts_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    args = f"up --switches 1 --base-port {free_port()}"
    up = _vsonic(args, env, "--state-dir", str(tmp_path), "--traffic", str(tmp_path / "no.txt"))
    assert up.returncode == 1
    assert "no such file" in up.stderr
    assert load_state(tmp_path) is None


def test_up_stops_everything_when_a_data_plane_exits(env: dict[str, str], tmp_path: Path) -> None:
    traffic = tmp_path / "bad.txt"
    traffic.write_text("oops port=Ethernet0 kind=dctcp\n")  # no queue or dscp: refused at start
    args = f"up --switches 1 --base-port {free_port()} --no-agent"
    up = _vsonic(args, env, "--state-dir", str(tmp_path), "--traffic", str(traffic))
    assert up.returncode == 1
    assert "data plane of vs1 exited" in up.stderr
    assert load_state(tmp_path) is None
    assert "traffic line 1" in (tmp_path / "dataplane-vs1.log").read_text()
