"""The qos-agent's SAI backend on a SONiC switch: the agent binary (feature ``sai``) loads
SONiC's own libsairedis in client mode (``SAI_REDIS_ENABLE_CLIENT=true``) and connects to the
switch orchagent serves (sonic-net/sonic-sairedis ``lib/ClientSai.cpp``: ``create_switch`` with
``SAI_SWITCH_ATTR_INIT_SWITCH = false``, over ``ipc:///tmp/saiServer`` in the switch's mount
namespace). Its calls go orchagent -> syncd -> libsaivs, the virtual ASIC: the oids are the
ones COUNTERS_QUEUE_NAME_MAP and ASIC_DB name, the queue counters are libsaivs's (moved here
through vslib's test channel), and the thresholds it sets land in ASIC_DB, behind qosorch's
back: CONFIG_DB's WRED_PROFILE keeps what the controller wrote (docs/qos-agent.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from lab.asic_standin import CHANNEL, FAST_PREFIX, AsicStandIn, set_stats_message
from lab.realsonic import RealSwitch, SwitchParts
from vsonic.dataplane import DATAPLANE, DataplaneOptions, command, find_binary
from vsonic.tether import start_tethered

from .conftest import ROOT, StartSwitch

# Where the agent with feature sai is built.
SAI_TARGET_DIR = ROOT / "target" / "sai"

PORT = "Ethernet0"
STATIC_BYTES = 60_000
# MQ-ECN (NSDI 2016, §2.2, Eq. 1) for a queue alone on a 10 Gb/s port, rtt 100 us, lambda 1:
# K = 10e9 / 8 B/s x 100e-6 s = 125_000 B. Its idle neighbour (weight 1 of 4) gets the share it
# would have on joining: 10e9 / 8 x 1/4 x 100e-6 = 31_250 B.
K_ALONE = 125_000
K_JOIN_4 = 31_250
THRESHOLDS = [f"{c}_{m}_threshold" for c in ("green", "yellow", "red") for m in ("min", "max")]
SAI_THRESHOLDS = [
    f"SAI_WRED_ATTR_{c}_{m}_THRESHOLD" for c in ("GREEN", "YELLOW", "RED") for m in ("MIN", "MAX")
]


def profile(queue: int) -> str:
    return f"SLUICE_Q_{PORT}_{queue}"


def eventually(check: Callable[[], object], what: str, deadline_s: float = 60.0) -> object:
    """``check()`` once it is truthy; a generous deadline, not a timing claim."""
    deadline = time.monotonic() + deadline_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {deadline_s:.0f} s")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def switch(start_switch: StartSwitch) -> RealSwitch:
    """syncd + orchagent over libsaivs; no buffers, CONFIG_DB written directly."""
    return start_switch(SwitchParts(orchagent=True, buffermgrd=False, gcu=False))


@pytest.fixture(scope="module")
def sai_agent_binary(switch: RealSwitch) -> Path:
    """The agent built with feature ``sai`` against the SAI headers the switch's libraries were
    built with, in a target directory of its own (``target/sai``), so that the default build
    in ``target/debug``, which other tests start, is never replaced by this one."""
    env = {**os.environ, "SAI_INCLUDE_DIR": str(switch.bundle.orchagent / "include" / "sai")}
    done = subprocess.run(
        ["cargo", "build", "-p", "qos-agent", "--features", "sai", "--bin", "qos-agent",
         "--target-dir", str(SAI_TARGET_DIR), "--message-format=json-render-diagnostics"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=True,
    )  # fmt: skip
    built = [
        message["executable"]
        for message in map(json.loads, done.stdout.splitlines())
        if message.get("reason") == "compiler-artifact" and message.get("executable")
    ]
    agent = Path(built[-1])
    lib = switch.bundle.orchagent / "lib"
    shown = subprocess.run(
        [agent, "--help"], env={**os.environ, "LD_LIBRARY_PATH": str(lib)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "--sai-lib" in shown.stdout, f"{agent} is not the qos-agent with feature sai"
    return agent


def seed_wred_and_orders(switch: RealSwitch) -> None:
    """What the controller compiles for two dynamic queues (step marking at the static start
    value, bound to queues 3 and 4), the agent's orders, and the QUEUE counter group, whose
    start makes orchagent write COUNTERS_QUEUE_NAME_MAP."""
    config = switch.db("CONFIG_DB")
    for queue, weight in ((3, 3), (4, 1)):
        wred: dict[str | bytes, str] = {"ecn": "ecn_all"}
        for colour in ("green", "yellow", "red"):
            wred[f"wred_{colour}_enable"] = "true"
            wred[f"{colour}_drop_probability"] = "5"
        wred |= dict.fromkeys(THRESHOLDS, str(STATIC_BYTES))
        config.hset(f"WRED_PROFILE|{profile(queue)}", mapping=wred)
        config.hset(f"QUEUE|{PORT}|{queue}", "wred_profile", profile(queue))
        config.hset(
            f"SLUICE_AGENT_QUEUE|{PORT}|{queue}",
            mapping={
                "wred_profile": profile(queue),
                "weight": str(weight),
                "floor_bytes": "5000",
                "ceiling_bytes": "200000",
                "static_bytes": str(STATIC_BYTES),
                "speed_gbps": "10",
                "buffer_bytes": "1000000",
            },
        )
    config.hset("FLEX_COUNTER_TABLE|QUEUE", "FLEX_COUNTER_STATUS", "enable")
    # stale_after far beyond the test: the virtual ASIC counts only when the test says so.
    config.hset(
        "SLUICE_AGENT|global",
        mapping={
            "algorithm": "mqecn",
            "interval_ms": "20",
            "rtt_us": "100",
            "lambda": "1",
            "hysteresis_pct": "5",
            "hdcq_k": "0.06",
            "stale_after_ms": "600000",
            "queues": "3,4",
            "version": "v1",
        },
    )


def wred_oid(switch: RealSwitch, queue: int) -> str:
    """The WRED object orchagent created for the queue's profile: the one ASIC_DB binds to the
    queue COUNTERS_QUEUE_NAME_MAP names."""
    vid = switch.db("COUNTERS_DB").hget("COUNTERS_QUEUE_NAME_MAP", f"{PORT}:{queue}")
    if vid is None:
        return ""
    queue_object = switch.db("ASIC_DB").hgetall(f"ASIC_STATE:SAI_OBJECT_TYPE_QUEUE:{vid}")
    return queue_object.get("SAI_QUEUE_ATTR_WRED_PROFILE_ID", "")


def asic_thresholds(switch: RealSwitch, wred: str) -> list[int]:
    fields = switch.db("ASIC_DB").hgetall(f"ASIC_STATE:SAI_OBJECT_TYPE_WRED:{wred}")
    return [int(fields[name]) for name in SAI_THRESHOLDS]


def count(switch: RealSwitch, queue_vid: str, stats: dict[str, int]) -> None:
    """Makes syncd's virtual ASIC count: vslib's test channel (``SAI_VS_UNITTEST_CHANNEL`` on
    ASIC_DB, op ``set_stats``, sonic-sairedis ``vslib/SaiUnittests.cpp``) takes the object as
    libsaivs knows it, the real id ASIC_DB's VIDTORID gives for orchagent's virtual one."""
    rid = switch.db("ASIC_DB").hget("VIDTORID", queue_vid)
    assert rid, f"syncd has no real id for {queue_vid}"
    message = set_stats_message(rid, {name: str(value) for name, value in stats.items()})
    listeners = switch.db("ASIC_DB").publish(CHANNEL, message)
    assert listeners == 1, "syncd's libsaivs listens on its test channel"


def agent_command(switch: RealSwitch, binary: Path, *flags: str | Path) -> list[str | Path]:
    """The agent in the switch's mount namespace (orchagent's sairedis server is an ipc socket
    in its private /tmp), with libsairedis in client mode."""
    sai_profile = switch.run_dir / "sai-client.profile"
    sai_profile.write_text("SAI_REDIS_ENABLE_CLIENT=true\n")
    lib = switch.bundle.orchagent / "lib"
    # libsairedis as built does not name libsaimeta and libsaimetadata as its dependencies
    # (orchagent and syncd link all three), so a program that opens it alone preloads them.
    preload = " ".join(str(lib / name) for name in ("libsaimetadata.so.0", "libsaimeta.so.0"))
    namespace = (switch.run_dir / "switch-ns.pid").read_text().strip()
    return [
        "nsenter", "-t", namespace, "-m", "--",
        "env", f"LD_LIBRARY_PATH={lib}", f"LD_PRELOAD={preload}",
        binary, "--sai-lib", lib / "libsairedis.so", "--sai-profile", sai_profile,
        "--redis-port", str(switch.redis_port), *flags,
    ]  # fmt: skip


def object_map(switch: RealSwitch) -> str:
    """The agent's object map, as the docs say to make it: queues from COUNTERS_QUEUE_NAME_MAP,
    WRED profiles from ASIC_DB (the object bound to the queue)."""
    wreds = {q: str(eventually(partial(wred_oid, switch, q), f"queue {q}'s WRED")) for q in (3, 4)}
    names = switch.db("COUNTERS_DB").hgetall("COUNTERS_QUEUE_NAME_MAP")
    return "".join(f"queue {PORT}|{q} {names[f'{PORT}:{q}']}\n" for q in (3, 4)) + "".join(
        f"wred {profile(q)} {wreds[q]}\n" for q in (3, 4)
    )


@pytest.fixture(scope="module")
def seeded(switch: RealSwitch) -> RealSwitch:
    seed_wred_and_orders(switch)
    return switch


@pytest.fixture
def running_agent(seeded: RealSwitch, sai_agent_binary: Path) -> Iterator[Path]:
    """The agent, started; yields its log. It must stop cleanly on SIGTERM."""
    objects = seeded.run_dir / "sai-objects.txt"
    objects.write_text(object_map(seeded))
    log = seeded.run_dir / "qos-agent.log"
    command = agent_command(
        seeded, sai_agent_binary, "--sai-objects", objects, "--wait-interval-ms", "20"
    )
    with log.open("w") as out:
        agent = start_tethered(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield log
    finally:
        agent.send_signal(signal.SIGTERM)
        code = agent.wait(timeout=30)
    assert code == 0, log.read_text()[-3000:]


def test_an_object_map_the_switch_contradicts_is_a_config_error(
    seeded: RealSwitch, sai_agent_binary: Path
) -> None:
    objects = seeded.run_dir / "swapped-objects.txt"
    # A WRED profile's oid given as a queue.
    wred = object_map(seeded).splitlines()[2].split()[2]
    objects.write_text(f"queue {PORT}|3 {wred}\n")
    done = subprocess.run(
        [str(part) for part in agent_command(seeded, sai_agent_binary, "--sai-objects", objects)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]  # exit_codes::CONFIG
    assert "SAI switch connected" in done.stderr
    assert f"queue {PORT}|3 {wred} is SAI object type" in done.stderr
    assert "not SAI_OBJECT_TYPE_QUEUE" in done.stderr
    # The library without its map is a flag error, before anything loads.
    alone = subprocess.run(
        [sai_agent_binary, "--sai-lib", seeded.bundle.orchagent / "lib" / "libsairedis.so"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert alone.returncode == 2, alone.stderr


def test_the_agent_moves_thresholds_through_orchagents_sai_server(
    seeded: RealSwitch, running_agent: Path
) -> None:
    switch = seeded
    state = switch.db("STATE_DB")
    names = switch.db("COUNTERS_DB").hgetall("COUNTERS_QUEUE_NAME_MAP")
    # No queue holds anything: every idle queue gets the share it would have alone, K.
    eventually(
        lambda: state.hget(f"SLUICE_AGENT_STATE|{PORT}|3", "threshold_bytes") == str(K_ALONE),
        f"the agent's first thresholds ({running_agent.read_text()[-2000:]})",
    )
    # Queue 3 starts sending and holds 40 kB: it keeps K, idle queue 4 moves to its join share.
    count(
        switch,
        names[f"{PORT}:3"],
        {
            "SAI_QUEUE_STAT_PACKETS": 8_334,
            "SAI_QUEUE_STAT_BYTES": 12_500_000,
            "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES": 40_000,
        },
    )
    eventually(
        lambda: state.hget(f"SLUICE_AGENT_STATE|{PORT}|4", "threshold_bytes") == str(K_JOIN_4),
        "queue 4 moved to its join share",
    )
    assert state.hget(f"SLUICE_AGENT_STATE|{PORT}|3", "occupancy_bytes") == "40000"
    assert state.hget("SLUICE_AGENT_STATE|global", "mode") == "dynamic"
    # The thresholds reached the ASIC's WRED objects (ASIC_DB, which syncd applies)...
    for queue, bytes_ in ((3, K_ALONE), (4, K_JOIN_4)):
        assert asic_thresholds(switch, wred_oid(switch, queue)) == [bytes_] * 6
        # ...and not CONFIG_DB: qosorch does not know, and a change of the profile there
        # would write CONFIG_DB's values back.
        entry = switch.db("CONFIG_DB").hgetall(f"WRED_PROFILE|{profile(queue)}")
        assert [entry[name] for name in THRESHOLDS] == [str(STATIC_BYTES)] * 6
    log = running_agent.read_text()
    assert "SAI switch connected" in log, log[-2000:]


def test_a_stand_in_asics_counts_reach_counters_db_through_syncd(seeded: RealSwitch) -> None:
    """The demo's stand-in for the ASIC (``lab/asic_standin.py``): vsonic's data plane on the
    switch's redis publishes only its fresher feed, and the bridge hands it to libsaivs, so
    that what COUNTERS_DB shows is what syncd's own flex counter poll read from libsaivs."""
    switch = seeded
    config, counters = switch.db("CONFIG_DB"), switch.db("COUNTERS_DB")
    config.hset("FLEX_COUNTER_TABLE|QUEUE", mapping={"FLEX_COUNTER_STATUS": "enable",
                                                     "POLL_INTERVAL": "100"})  # fmt: skip
    # orchagent writes the name map once the QUEUE group is enabled (the module's seed).
    vid = eventually(lambda: counters.hget("COUNTERS_QUEUE_NAME_MAP", f"{PORT}:3"), "the map")

    def sent() -> int:
        return int(counters.hget(f"COUNTERS:{vid}", "SAI_QUEUE_STAT_BYTES") or 0)

    before = sent()  # what an earlier test of the module had libsaivs count, if any
    traffic = switch.run_dir / "standin.traffic"
    traffic.write_text(f"bulk port={PORT} queue=3 kind=dctcp flows=1 packet_bytes=9000\n")
    options = DataplaneOptions(traffic=traffic, fast_interval_ms=100)
    args = [*command(find_binary(binary=DATAPLANE), switch.redis_port, options, seed=1),
            "--no-flex-counters", "--ports", PORT]  # fmt: skip
    log = switch.run_dir / "standin-dataplane.log"
    with log.open("w") as out:
        plane = start_tethered(args, stdout=out, stderr=subprocess.STDOUT)
    bridge = AsicStandIn(switch.redis_port)
    thread = threading.Thread(target=bridge.run, name="asic-standin", daemon=True)
    thread.start()
    try:
        # The feed's key first: once the data plane has written it, its loop (and its SIGTERM
        # handler) runs. ``sent() > before`` alone can hold earlier: syncd's first poll may
        # publish what an earlier test had libsaivs count only after ``before`` was read.
        feed = f"{FAST_PREFIX}:{vid}"
        try:
            eventually(lambda: counters.exists(feed) and sent() > before, "the stand-in's bytes")
        except AssertionError as error:
            raise AssertionError(f"{error}; its log: {log.read_text()[-2000:]}") from None
        # Nothing else writes the queue's COUNTERS hash: once the data plane stops, syncd's
        # next poll publishes exactly the last counts the feed held.
        plane.send_signal(signal.SIGTERM)
        assert plane.wait(timeout=30) == 0, log.read_text()[-2000:]
        fed = counters.hgetall(feed)
        eventually(
            lambda: sent() == int(fed["SAI_QUEUE_STAT_BYTES"]),
            "COUNTERS equal to the feed's last counts",
        )
        polled = counters.hgetall(f"COUNTERS:{vid}")
        assert polled["SAI_QUEUE_STAT_PACKETS"] == fed["SAI_QUEUE_STAT_PACKETS"]
        # Stats only syncd's poll writes (the data plane knows no trimming): syncd wrote it.
        assert "SAI_QUEUE_STAT_TRIM_PACKETS" in polled
    finally:
        bridge.stop()
        thread.join(10)
        if plane.poll() is None:
            plane.kill()
            plane.wait()
