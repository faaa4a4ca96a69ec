"""The demo's agent step for real: leaf1 of the example intent started by ``vsonic up`` with its
data plane and qos-agent, the QoS configuration the rollout would write put into its CONFIG_DB,
then ``agents_step`` with a short schedule (storage alone, analytics joins, best-effort joins,
storage stops).
The printed table must show each queue's threshold move the way MQ-ECN predicts, worked out
by hand below; the only deadlines are the step's own generous waits."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml

from controller.intent.loader import parse_intent
from controller.sonic.compile import compile_switch
from lab.demo_agents import agents_step
from lab.demo_agents_view import AgentDemo, Burst
from lab.demo_switches import demo_intent
from vsonic.dataplane import AGENT, DATAPLANE, ROOT, find_binary
from vsonic.redis_process import free_port
from vsonic.supervisor import load_state
from vsonic.tether import CleanupGuard

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

EXAMPLE = ROOT / "docs" / "example-intent.yaml"
SCHEDULE = (
    Burst("storage", 0.0, 8.0),
    Burst("analytics", 3.0, 11.0),
    Burst("best-effort", 5.5, 11.0),
)
# K = C x RTT x lambda = 25 Gb/s / 8 x 40 us x 1 = 3,125,000,000 B/s x 0.00004 s = 125,000 B.
# The agent reads every queue of Ethernet0 (best-effort DWRR 20 and the STRICT ones too, not
# managed) and water-fills C among the backlogged ones by weight, K_i = min(share_i, C) / C x K.
# The STRICT classes stay idle; an idle queue is not in the active set (qos-core rule 4).
# Best-effort's own threshold is the controller's static per-queue minimum 20/100 x K.
K = 125_000
BEST_EFFORT_STATIC = K * 20 // 100  # 25,000
STORAGE_ALONE = K  # share C
ANALYTICS_IDLE_BESIDE_STORAGE = K * 30 // 80  # the share it would get if it joined: 46,875
STORAGE_BESIDE_ANALYTICS = K * 50 // 80  # 78,125
ANALYTICS_BESIDE_STORAGE = K * 30 // 80  # 46,875
# All three backlogged: 50:30:20 of C. Seeing only its two managed queues the agent would keep
# 78,125 / 46,875 here; per-packet MQ-ECN gives these.
STORAGE_BESIDE_BOTH = K * 50 // 100  # 62,500
ANALYTICS_BESIDE_BOTH = K * 30 // 100  # 37,500
# Storage stopped: analytics and best-effort share C 30:20; idle storage's join share is
# 50/(50 + 30 + 20) of C.
ANALYTICS_BESIDE_BEST_EFFORT = K * 30 // 50  # 75,000
STORAGE_IDLE_BESIDE_BOTH = K * 50 // 100  # 62,500
ROW = re.compile(r"^\s*(?P<t>\d+\.\d) \|(?P<cells>.*)$")


def _vsonic(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vsonic.cli", *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


@pytest.fixture
def leaf1(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """``(state_dir, intent_file, traffic_file)`` of a running leaf1 configured as the rollout
    of the demo intent leaves it."""
    for binary in (DATAPLANE, AGENT):
        subprocess.run(binary.build_command, cwd=ROOT, check=True, timeout=900)
    document = demo_intent(EXAMPLE, 3.0, lambda port: False)  # every switch on a free port
    intent_file = tmp_path / "intent.yaml"
    intent_file.write_text(yaml.safe_dump(document, sort_keys=False))
    leaf = next(s for s in document["switches"] if s["name"] == "leaf1")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"switches": [leaf]}))
    traffic = tmp_path / "traffic.txt"
    traffic.write_text("# nothing yet\n")
    state_dir = tmp_path / "vsonic"
    env = {
        **os.environ,
        "VSONIC_PASSWORD": "demo-agents-test",
        DATAPLANE.env: str(find_binary(build=False)),
        AGENT.env: str(find_binary(build=False, binary=AGENT)),
    }
    # Should the test run be killed, ``vsonic down`` still stops the servers ``up`` forks off.
    down_args = ["down", "--state-dir", str(state_dir)]
    guard = CleanupGuard([sys.executable, "-m", "vsonic.cli", *down_args], env=env)
    up = _vsonic(env, "up", "--inventory", str(inventory), "--state-dir", str(state_dir),
                 "--traffic", str(traffic), "--base-port", str(free_port()))  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        _write_rollout(state_dir, document)
        yield state_dir, intent_file, traffic
    finally:
        down = _vsonic(env, *down_args)
        guard.dismiss()
        assert down.returncode == 0, down.stderr


def _write_rollout(state_dir: Path, document: object) -> None:
    """leaf1's compiled CONFIG_DB entries in one MULTI/EXEC, as a rollout's result."""
    intent = parse_intent(document)
    leaf = next(s for s in intent.switches if s.name == "leaf1")
    started = load_state(state_dir)
    assert started is not None
    port = int(started.dataplanes[0]["redis_port"])
    db = redis.Redis(host="127.0.0.1", port=port, db=4, decode_responses=True)
    try:
        pipe = db.pipeline(transaction=True)
        for (table, key), fields in compile_switch(intent, leaf).items():
            stored: dict[str | bytes, bytes | float | int | str] = {}
            stored.update(fields)
            pipe.hset(f"{table}|{key}", mapping=stored)
        pipe.execute()
    finally:
        db.close()


def _printed(text: str) -> list[tuple[float, list[tuple[int | None, str, float]]]]:
    """Every tick line: (time, [(threshold, who set it, Gb/s) per queue, in printed order])."""
    out = []
    for line in text.splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        queues = []
        for cell in match["cells"].split("|"):
            k, flag, gbps, *_ = cell.split()
            queues.append((None if k == "-" else int(k.replace(",", "")), flag, float(gbps)))
        out.append((float(match["t"]), queues))
    return out


def test_thresholds_and_throughput_move_as_classes_start_and_stop(
    leaf1: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    state_dir, intent_file, traffic = leaf1
    demo = AgentDemo(schedule=SCHEDULE)
    readings = agents_step(state_dir, intent_file, traffic, demo=demo)
    printed = _printed(capsys.readouterr().out)
    # One line per reading after the baseline, in the order storage (w50), analytics (w30),
    # best-effort (w20).
    assert [t for t, _ in printed] == [round(r.at_s, 1) for r in readings[1:]]
    assert printed[-1][0] >= 11.0

    def phase(start: float, end: float) -> list[list[tuple[int | None, str, float]]]:
        # Past the phase's first second: the agent reacts within 3 intervals of 100 ms.
        return [queues for t, queues in printed if start + 1.0 <= t <= end]

    alone, both, three = phase(0.0, 3.0), phase(3.0, 5.5), phase(5.5, 8.0)
    after = phase(8.0, 11.0)
    assert all((alone, both, three, after)), "a reading in every phase"
    # MQ-ECN's thresholds, each seen computed by the agent at least once in its phase.
    static = (BEST_EFFORT_STATIC, "S")
    assert ((STORAGE_ALONE, "C"), (ANALYTICS_IDLE_BESIDE_STORAGE, "C"), static) in _ks(alone)
    assert ((STORAGE_BESIDE_ANALYTICS, "C"), (ANALYTICS_BESIDE_STORAGE, "C"), static) in _ks(both)
    assert ((STORAGE_BESIDE_BOTH, "C"), (ANALYTICS_BESIDE_BOTH, "C"), static) in _ks(three)
    assert ((STORAGE_IDLE_BESIDE_BOTH, "C"), (ANALYTICS_BESIDE_BEST_EFFORT, "C"), static) in _ks(
        after
    )
    # Throughput: storage alone, then 50:30 with analytics, then storage drained.
    assert all(q[0][2] > 1.0 and q[1][2] < 0.1 for q in alone)
    storage, analytics = _mean(both, 0), _mean(both, 1)
    assert storage > analytics > 0.1, (storage, analytics)
    assert all(q[0][2] < 0.1 and q[1][2] > 1.0 for q in after[1:])  # storage drained


def _ks(
    phase: list[list[tuple[int | None, str, float]]],
) -> list[tuple[tuple[int | None, str], ...]]:
    return [tuple((k, flag) for k, flag, _ in queues) for queues in phase]


def _mean(phase: list[list[tuple[int | None, str, float]]], i: int) -> float:
    return sum(queues[i][2] for queues in phase) / len(phase)
