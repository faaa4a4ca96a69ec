"""`vsonic up` starts a data plane next to each switch's Redis, and `vsonic down` stops it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.integration.dataplane.conftest import eventually
from vsonic.dataplane import BINARY_ENV
from vsonic.redis_process import free_port
from vsonic.supervisor import is_running, load_state

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _vsonic(*args: str, binary: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VSONIC_PASSWORD": "dataplane-test", BINARY_ENV: str(binary)}
    return subprocess.run(
        [sys.executable, "-m", "vsonic.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _queue_packets(redis_port: int, queue: str) -> int:
    client = redis.Redis(host="127.0.0.1", port=redis_port, db=2, decode_responses=True)
    try:
        oid = client.hget("COUNTERS_QUEUE_NAME_MAP", queue)
        return int(client.hget(f"COUNTERS:{oid}", "SAI_QUEUE_STAT_PACKETS") or 0)
    finally:
        client.close()


def test_up_runs_a_data_plane_per_switch_and_down_stops_it(
    dataplane_binary: Path, tmp_path: Path
) -> None:
    traffic = tmp_path / "mix.txt"
    # No QoS configured yet: every queue is equal-weight DWRR; this class feeds queue 3.
    traffic.write_text("bulk port=Ethernet4 queue=3 kind=dctcp flows=1\n")
    base = free_port()
    up = _vsonic(
        "up",
        "--switches",
        "2",
        "--base-port",
        str(base),
        "--state-dir",
        str(tmp_path),
        "--ports",
        "2",
        "--speed-gbps",
        "1",
        "--traffic",
        str(traffic),
        "--flex-interval-ms",
        "100",
        binary=dataplane_binary,
    )
    started = load_state(tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        assert started is not None
        assert [d["name"] for d in started.dataplanes] == ["vs1", "vs2"]
        assert all(is_running(d["pid"]) for d in started.dataplanes)
        # Each switch's own Redis shows its own traffic, published by its data plane.
        for dp in started.dataplanes:
            redis_port = int(dp["redis_port"])

            def moving(redis_port: int = redis_port) -> bool:
                return _queue_packets(redis_port, "Ethernet4:3") > 1_000

            eventually(moving, f"counters moving on {dp['name']}")
            assert _queue_packets(dp["redis_port"], "Ethernet0:3") == 0
    finally:
        down = _vsonic("down", "--state-dir", str(tmp_path), binary=dataplane_binary)
    assert down.returncode == 0, down.stderr
    assert "2 data plane(s)" in down.stdout
    assert not any(is_running(d["pid"]) for d in started.dataplanes)


def test_up_refuses_a_missing_traffic_file_and_starts_nothing(
    dataplane_binary: Path, tmp_path: Path
) -> None:
    up = _vsonic(
        "up",
        "--switches",
        "1",
        "--base-port",
        str(free_port()),
        "--state-dir",
        str(tmp_path),
        "--traffic",
        str(tmp_path / "nope.txt"),
        binary=dataplane_binary,
    )
    assert up.returncode == 1
    assert "no such file" in up.stderr
    assert load_state(tmp_path) is None


def test_up_stops_everything_when_a_data_plane_exits(
    dataplane_binary: Path, tmp_path: Path
) -> None:
    traffic = tmp_path / "bad.txt"
    traffic.write_text("oops port=Ethernet0 kind=dctcp\n")  # no queue or dscp: refused at start
    up = _vsonic(
        "up",
        "--switches",
        "1",
        "--base-port",
        str(free_port()),
        "--state-dir",
        str(tmp_path),
        "--traffic",
        str(traffic),
        binary=dataplane_binary,
    )
    assert up.returncode == 1
    assert "data plane of vs1 exited" in up.stderr
    assert load_state(tmp_path) is None
    assert "traffic line 1" in (tmp_path / "dataplane-vs1.log").read_text()
