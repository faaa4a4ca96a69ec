"""Telemetry benchmark: counter updates per second one collector process ingests from a
fleet-mode vsonic streaming N switches x P ports x 8 queues (SAMPLE at 1 s of each switch's
whole COUNTERS table: every queue and port counter object, as the collector subscribes),
beside two baselines measured in the same run against the same server:

- bare: the same asyncio gRPC client (``controller.southbound.subscribe``), the same
  subscriptions, a loop that only counts updates (no rates, no state, no metrics);
- pygnmi: pygnmi's own subscription machinery (``pygnmi.client.StreamSubscriber``, a thread
  per stream) with the same SubscribeRequest, counting updates.

Each client runs in a process of its own (so memory and CPU are its own), after the servers
have come up; the first ``--warmup`` seconds (subscribing, initial values) are not counted.
Memory per switch is the client's resident-set growth from before the streams to the end,
divided by N. The switches are served by ``--servers`` fleet vsonic processes (switch i by
server i x K / N): a real fabric has a gNMI server per switch, and one Python process cannot
offer a few hundred switches' counters every second, so when every client sees about the
same rate, the servers are the limit, not the client. After its window, with its streams still
running, the collector times one scrape of everything it holds as Prometheus makes it (an HTTP
GET with gzip of its metrics endpoint; the metrics are built at scrape time), then one of the
same state through the code path before the compiled core wrote the counter families
(``tests/support/reference_exposition.py``), the ratio of the two in the same run.
Every server serves gNMI over TLS with one certificate made for the run (bench/switch_tls.py)
and every client, pygnmi's included, trusts it: the figures include TLS's cost, as a
deployment pays it.

Reproduce: ``uv run python -m bench.telemetry_bench`` (``--switches N``, ``--ports P``,
``--duration S``, ``--servers K``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

from bench.southbound_support import fleet_names
from bench.switch_tls import bench_tls, channel_credentials, serve_flags
from controller.southbound.gnmi import TlsOptions
from vsonic.gnmi_server import TlsFiles
from vsonic.tether import start_tethered

REPRODUCE = "uv run python -m bench.telemetry_bench"
PASSWORD = "telemetry-bench"
ROLES = ("collector", "bare", "pygnmi")


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def server_of(index: int, switches: int, servers: int) -> int:
    """Which of ``servers`` fleet processes serves switch ``index`` (contiguous blocks)."""
    return index * servers // switches


def _targets(ports: list[int], switches: int, tls: TlsOptions) -> list[Any]:
    from pydantic import SecretStr

    from controller.southbound.gnmi import GnmiTarget

    return [
        GnmiTarget(
            name,
            "127.0.0.1",
            ports[server_of(i, switches, len(ports))],
            "admin",
            SecretStr(PASSWORD),
            tls=tls,
            prefix_target=name,
        )
        for i, name in enumerate(fleet_names(switches))
    ]


def _channels(targets: list[Any]) -> dict[int, Any]:
    """One asyncio channel per server port (the collector does the same per endpoint)."""
    from controller.southbound.gnmi import open_channel

    channels: dict[int, Any] = {}
    for target in targets:
        if target.port not in channels:
            channels[target.port] = open_channel(target, aio=True)
    return channels


# ---------------------------------------------------------------------------------------------
# the three clients (each in its own process: ``--role``)


SCRAPE: dict[str, float] = {}  # the collector's one scrape after its window


async def _collector(
    server_ports: list[int],
    switches: int,
    ports: int,
    warmup: float,
    duration: float,
    tls: TlsOptions,
) -> int:
    from controller.collector import Collector
    from controller.intent.models import Fabric, GnmiEndpoint, Intent, Port, Role, Switch
    from controller.reconcile.shard import StaticShard
    from controller.southbound.subscribe import StreamPolicy, SubMode

    intent = Intent(
        fabric=Fabric(base_rtt_us=40, port_buffer_bytes=4_000_000),
        switches=tuple(
            Switch(
                name=name,
                role=Role.LEAF,
                gnmi=GnmiEndpoint(
                    address="127.0.0.1",
                    port=server_ports[server_of(i, switches, len(server_ports))],
                    target=name,
                ),
                credential_ref="env:VSONIC_PASSWORD",
                ports=tuple(Port(name=f"Ethernet{4 * i}", speed_gbps=100) for i in range(ports)),
            )
            for i, name in enumerate(fleet_names(switches))
        ),
    )
    policy = StreamPolicy(counter_mode=SubMode.SAMPLE, sample_interval_s=1.0)
    collector = Collector(StaticShard(0, 1), policy, window_ns=0, rand=random.Random(1).random)
    collector.sync(intent, {t.name: t for t in _targets(server_ports, switches, tls)})

    async def scrape_then_close() -> None:
        from tests.support.reference_exposition import ReferenceMetrics

        # The code path before the compiled core wrote the counter families, over the same
        # state, scraped in the same run.
        before = ReferenceMetrics(
            collector.metrics_label, collector.streamed, time.time_ns, collector.lock
        )
        renders = {"now": collector.metrics.render, "before": before.render}
        for key, which, gzip in SCRAPES:
            scrape = await _scrape_over_http(renders[which], gzip)
            SCRAPE.update({f"{key}{name}": value for name, value in scrape.items()})
        await collector.close()

    return await _count_between(collector.updates, warmup, duration, scrape_then_close)


# (key, whose render, gzip): now, as Prometheus scrapes (it asks for gzip); now without gzip;
# and the code path before the core as it was served (its http.server never compressed).
SCRAPES = (("", "now", True), ("plain_", "now", False), ("before_", "before", False))


async def _scrape_over_http(render: Any, gzip: bool) -> dict[str, float]:
    """One scrape as Prometheus makes it, while the streams keep arriving on this event loop:
    a GET (taking gzip if ``gzip``) from the collector's endpoint (``MetricsEndpoint``: uvicorn
    on a thread of its own, the render on a worker thread), the body read as it came
    (decompressed after the clock stops: the scraper's cost, not the collector's). Wall
    seconds, the process' CPU seconds (streams included), samples and bytes on the wire."""
    import zlib

    import httpx

    from controller.collector import MetricsEndpoint

    endpoint = MetricsEndpoint("127.0.0.1", 0, render)
    try:
        url = f"http://127.0.0.1:{endpoint.port}/metrics"
        async with httpx.AsyncClient(timeout=600) as client:
            await client.post(url)  # the server up and the connection open (405: no render)
            start, cpu = time.perf_counter(), time.process_time()
            coding = {"Accept-Encoding": "gzip" if gzip else "identity"}
            async with client.stream("GET", url, headers=coding) as reply:
                body = b"".join([chunk async for chunk in reply.aiter_raw()])
            seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    finally:
        await asyncio.to_thread(endpoint.close)
    gzipped = reply.headers.get("content-encoding") == "gzip"
    text = zlib.decompress(body, 16 + zlib.MAX_WBITS) if gzipped else body
    samples = text.count(b"\n") - text.count(b"\n#")
    return {"seconds": seconds, "cpu_s": cpu_s, "samples": samples, "wire_bytes": len(body)}


async def _bare(
    server_ports: list[int], switches: int, warmup: float, duration: float, tls: TlsOptions
) -> int:
    from controller.southbound.subscribe import (
        StreamPolicy,
        SubMode,
        counter_hashes,
        stream_subscriptions,
        subscribe,
    )

    targets = _targets(server_ports, switches, tls)
    channels = _channels(targets)
    policy = StreamPolicy(counter_mode=SubMode.SAMPLE, sample_interval_s=1.0)
    count = 0

    async def one(target: Any) -> None:
        nonlocal count
        channel = channels[target.port]
        notes = subscribe(channel, target, stream_subscriptions(policy))
        async with aclosing(notes):
            async for note in notes:
                # An update is a counter hash: a whole-table answer holds one per object.
                count += sum(len(counter_hashes(c)) or 1 for c in note.changes)

    tasks = [asyncio.create_task(one(t)) for t in targets]

    async def close() -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for channel in channels.values():
            await channel.close()

    return await _count_between(lambda: count, warmup, duration, close)


CPU_WINDOW: list[float] = []  # CPU seconds spent during the counted window


async def _count_between(read: Any, warmup: float, duration: float, close: Any) -> int:
    await asyncio.sleep(warmup)
    start, cpu = read(), _cpu_s()
    await asyncio.sleep(duration)
    counted = int(read() - start)
    CPU_WINDOW.append(_cpu_s() - cpu)
    await close()
    return counted


def _pygnmi(
    server_ports: list[int], switches: int, warmup: float, duration: float, ca: Path
) -> int:
    import grpc  # type: ignore[import-untyped]
    from pygnmi.client import StreamSubscriber  # type: ignore[import-untyped]

    from controller.southbound.subscribe import (
        ListMode,
        StreamPolicy,
        SubMode,
        stream_subscriptions,
        subscribe_request,
    )

    targets = _targets(server_ports, switches, TlsOptions(root_cert=ca))
    policy = StreamPolicy(counter_mode=SubMode.SAMPLE, sample_interval_s=1.0)
    trust = channel_credentials(ca)
    channels = {p: grpc.secure_channel(f"127.0.0.1:{p}", trust) for p in server_ports}
    metadata = [("username", "admin"), ("password", PASSWORD)]
    counts = [0] * switches
    stop = threading.Event()
    subscribers: list[tuple[int, Any]] = []

    def drain(i: int, subscriber: Any) -> None:
        while not stop.is_set():
            try:
                response = subscriber.get_update(timeout=1)
            except (queue.Empty, TimeoutError):
                continue
            except Exception:
                return
            update = response.get("update") if isinstance(response, dict) else None
            parsed = update.get("update", []) if isinstance(update, dict) else []
            counts[i] += _pygnmi_updates(parsed)

    # Each stream is drained from the moment it opens, and the memory limit is checked while
    # they open: pygnmi queues responses faster than 250 streams' threads take them.
    for i, target in enumerate(targets):
        if _rss_kb() > PYGNMI_RSS_LIMIT_KB:
            MEMORY_STOP.append(_rss_kb())
            break
        request = subscribe_request(
            stream_subscriptions(policy), ListMode.STREAM, target.prefix_target
        )
        subscribers.append((i, StreamSubscriber(channels[target.port], request, metadata)))
        threading.Thread(target=drain, args=subscribers[-1], daemon=True).start()
    SCRAPE["streams_open"] = len(subscribers)
    _sleep_within_memory(warmup)
    start, cpu, began = sum(counts), _cpu_s(), time.monotonic()
    if not _sleep_within_memory(duration):
        duration = time.monotonic() - began  # stopped early: the rate is over what ran
    counted = sum(counts) - start
    CPU_WINDOW.append(_cpu_s() - cpu)
    SCRAPE["seconds_counted"] = duration
    stop.set()
    # No subscriber.close(): it joins pygnmi's enqueue thread, which can wait on its stream
    # for good (seen at 250 switches, RSS growing meanwhile); the role leaves by os._exit.
    return counted


def _pygnmi_updates(updates: list[Any]) -> int:
    """Counter hashes in pygnmi's parsed updates: a whole-table answer holds one per object."""
    count = 0
    for update in updates:
        value = update.get("val") if isinstance(update, dict) else None
        whole = isinstance(value, dict) and str(update.get("path", "")).endswith("COUNTERS")
        count += len(value) if whole and isinstance(value, dict) else 1
    return count


PYGNMI_RSS_LIMIT_KB = 4 * 1024 * 1024  # pygnmi queues every response it has not handed out


def _sleep_within_memory(seconds: float) -> bool:
    """Sleep ``seconds``; False (at once) if this process's RSS passes the limit: a client
    that cannot keep up with its streams grows without bound, and on a shared machine the
    run is stopped rather than the machine run out of memory."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if _rss_kb() > PYGNMI_RSS_LIMIT_KB:
            MEMORY_STOP.append(_rss_kb())
            return False
        time.sleep(min(0.5, max(0.0, end - time.monotonic())))
    return True


MEMORY_STOP: list[int] = []


def _run_role(
    role: str,
    server_ports: list[int],
    switches: int,
    ports: int,
    window: tuple[float, float],
    ca: Path,
) -> None:
    """Run one client for ``window`` (warm-up, counted seconds) against the servers, trusting
    the certificate at ``ca``; print its figures as one JSON line."""
    import pygnmi.client  # type: ignore[import-untyped]  # noqa: F401

    import controller.collector  # noqa: F401  (imports are not per-switch memory)

    warmup, duration = window
    tls = TlsOptions(root_cert=ca)
    rss_before = _rss_kb()
    if role == "collector":
        updates = asyncio.run(_collector(server_ports, switches, ports, warmup, duration, tls))
    elif role == "bare":
        updates = asyncio.run(_bare(server_ports, switches, warmup, duration, tls))
    else:
        updates = _pygnmi(server_ports, switches, warmup, duration, ca)
    seconds = SCRAPE.pop("seconds_counted", duration)
    print(json.dumps({
        "role": role, "updates": updates, "seconds": seconds,
        "rss_growth_kb": _rss_kb() - rss_before, "cpu_s": CPU_WINDOW[0], "scrape": SCRAPE,
        "memory_stop_kb": MEMORY_STOP[0] if MEMORY_STOP else None,
    }), flush=True)  # fmt: skip
    # pygnmi's subscription threads are not daemons and outlive close(): leave without them.
    os._exit(0)


# ---------------------------------------------------------------------------------------------
# ingest alone: what one collector process can take when the server is not the limit


def _responses(ports: int, rounds: int) -> list[Any]:
    """SubscribeResponses as vsonic sends them for SAMPLE: one per round carrying an Update
    per object (``vsonic.subscribe``), the counters growing by 1,500 bytes a packet."""
    import json as _json

    from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

    from controller.southbound.subscribe import counters_path

    out = []
    for r in range(1, rounds + 1):
        updates = []
        for p in range(ports):
            for q in range(9):
                oid = f"oid:0x{0x15000000000000 + p * 16 + q:x}"
                fields = {"SAI_QUEUE_STAT_PACKETS": str(1000 * r), "SAI_QUEUE_STAT_BYTES":
                          str(1_500_000 * r), "SAI_QUEUE_STAT_DROPPED_PACKETS": "0",
                          "SAI_QUEUE_STAT_DROPPED_BYTES": "0"}  # fmt: skip
                path = gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=e) for e in counters_path(oid)])
                value = gnmi_pb2.TypedValue(json_ietf_val=_json.dumps(fields).encode())
                updates.append(gnmi_pb2.Update(path=path, val=value))
        note = gnmi_pb2.Notification(timestamp=r * 1_000_000_000, update=updates)
        out.append(gnmi_pb2.SubscribeResponse(update=note))
    return out


def measure_ingest(ports: int, rounds: int, repeats: int = 5) -> dict[str, float]:
    """Updates per second from serialized responses built up front, on this process: the
    baseline decodes them (``reference_decoder``: protobuf's objects, then ``decode``, what
    the bare loop does), the collector takes them through its stream decoder after the sync
    (the compiled core) into its state. The fastest of ``repeats`` runs of each (the machine
    is shared: the best run is the one the others disturbed least)."""
    runs = [_ingest_once(ports, rounds) for _ in range(repeats)]
    return {
        "updates": runs[0]["updates"],
        "ingested": runs[0]["ingested"],
        "decode_s": min(r["decode_s"] for r in runs),
        "collector_s": min(r["collector_s"] for r in runs),
    }


def _ingest_once(ports: int, rounds: int) -> dict[str, float]:
    import threading as _threading

    from controller.southbound.subscribe import SYNC, reference_decoder
    from controller.telemetry.ingest import SwitchHandler
    from controller.telemetry.state import SwitchTelemetry

    raws = [r.SerializeToString() for r in _responses(ports, rounds)]
    decode = reference_decoder()  # each stream has its own, as ``subscribe`` makes them
    start = time.perf_counter()
    decoded = sum(len(n.changes) for r in raws if (n := decode(r)) is not None)
    decode_s = time.perf_counter() - start
    telemetry = SwitchTelemetry("sw", {}, {})
    handler = SwitchHandler(telemetry, _threading.Lock())
    queues = {f"Ethernet{4 * p}:{q}": f"oid:0x{0x15000000000000 + p * 16 + q:x}"
              for p in range(ports) for q in range(9)}  # fmt: skip
    telemetry.set_queue_map(queues)
    ingest = handler.decoder()
    sync = ingest(SYNC_RESPONSE)  # the stream has synced: ticks take the collector's path
    assert sync is SYNC
    start = time.perf_counter()
    for raw in raws:
        note = ingest(raw)
        if note is not None:
            handler.notification(note)
    collector_s = time.perf_counter() - start
    return {"updates": decoded, "decode_s": decode_s, "collector_s": collector_s,
            "ingested": telemetry.updates}  # fmt: skip


def _sync_response() -> bytes:
    from pygnmi.spec.v080 import gnmi_pb2

    raw: bytes = gnmi_pb2.SubscribeResponse(sync_response=True).SerializeToString()
    return raw


SYNC_RESPONSE = _sync_response()


# ---------------------------------------------------------------------------------------------
# idle ON_CHANGE streams: what the server spends on streams that have nothing to say


def _server_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def measure_idle(
    server: subprocess.Popen[str],
    port: int,
    switches: int,
    streams: int,
    seconds: float,
    tls: TlsOptions,
) -> dict[str, float]:
    """Server CPU seconds per second with no stream (baseline) and with ``streams`` open
    ON_CHANGE streams on a table nobody writes, spread over the fleet's switches."""
    from controller.southbound.gnmi import open_channel
    from controller.southbound.subscribe import Subscription, subscribe

    # Seeded on every switch and never written (a Subscribe to an absent table fails).
    quiet_table = ("CONFIG_DB", "localhost", "DEVICE_METADATA")

    targets = _targets([port], switches, tls)

    async def run() -> dict[str, float]:
        before = _server_cpu_s(server.pid)
        await asyncio.sleep(seconds)
        quiet = (_server_cpu_s(server.pid) - before) / seconds
        channel = open_channel(targets[0], aio=True)
        calls = [subscribe(channel, targets[i % len(targets)], [Subscription(quiet_table)])
                 for i in range(streams)]  # fmt: skip
        for call in calls:
            while (await anext(call)).timestamp_ns:  # initial values, then SYNC (timestamp 0)
                pass
        before = _server_cpu_s(server.pid)
        await asyncio.sleep(seconds)
        idle = (_server_cpu_s(server.pid) - before) / seconds
        for call in calls:
            await call.aclose()
        await channel.close()
        return {"streams": streams, "quiet_cpu": quiet, "idle_cpu": idle}

    return asyncio.run(run())


# ---------------------------------------------------------------------------------------------
# the run


def _start_servers(
    switches: int, ports: int, servers: int, tls: TlsFiles
) -> list[tuple[subprocess.Popen[str], int]]:
    """``servers`` fleet vsonic processes; server k serves the switches ``server_of`` gives
    it. Each is started like ``start_fleet_server`` (password in the environment, TLS with
    ``tls``)."""
    names = fleet_names(switches)
    started: list[tuple[subprocess.Popen[str], int]] = []
    try:
        for k in range(servers):
            mine = [n for i, n in enumerate(names) if server_of(i, switches, servers) == k]
            env = {**os.environ, "VSONIC_PASSWORD": PASSWORD}
            args = [sys.executable, "-m", "vsonic.serve", "--address", "127.0.0.1:0", "--fleet",
                    *serve_flags(tls), "--ports", str(ports), "--names", *mine]  # fmt: skip
            server = start_tethered(args, env=env, stdout=subprocess.PIPE, text=True)
            started.append((server, 0))
            assert server.stdout is not None
            line = server.stdout.readline()  # "vsonic: serving N switch(es) on port P"
            if "on port" not in line:
                raise RuntimeError(f"vsonic did not start: {line!r}")
            started[-1] = (server, int(line.rsplit(" ", 1)[1]))
    except BaseException:
        _stop_servers(started)
        raise
    return started


def _stop_servers(servers: list[tuple[subprocess.Popen[str], int]]) -> None:
    for server, _ in servers:
        server.terminate()
    for server, _ in servers:
        server.wait(timeout=30)


def measure(
    switches: int,
    ports: int,
    duration: float,
    warmup: float,
    servers: int = 1,
    roles: tuple[str, ...] = ROLES,
) -> dict[str, Any]:
    with bench_tls() as tls:
        return _measure_with(tls, switches, ports, (warmup, duration), servers, roles)


def _measure_with(
    tls: TlsFiles,
    switches: int,
    ports: int,
    window: tuple[float, float],
    servers: int,
    roles: tuple[str, ...],
) -> dict[str, Any]:
    warmup, duration = window
    started = _start_servers(switches, ports, servers, tls)
    server_ports = [port for _, port in started]
    results: dict[str, Any] = {"switches": switches, "ports": ports, "duration": duration,
                               "servers": servers, "load_before": os.getloadavg()}  # fmt: skip
    try:
        first, first_port = started[0]
        served = sum(1 for i in range(switches) if server_of(i, switches, servers) == 0)
        results["idle"] = measure_idle(
            first,
            first_port,
            served,
            min(64, served * 16),
            min(duration, 5.0),
            TlsOptions(root_cert=tls.cert),
        )
        for role in roles:
            env = {**os.environ, "VSONIC_PASSWORD": PASSWORD}
            cpu_before = sum(_server_cpu_s(s.pid) for s, _ in started)
            out = subprocess.run(
                [sys.executable, "-m", "bench.telemetry_bench", "--role", role,
                 "--port", ",".join(map(str, server_ports)), "--switches", str(switches),
                 "--ports", str(ports), "--duration", str(duration), "--warmup", str(warmup),
                 "--tls-ca", str(tls.cert)],
                env=env, capture_output=True, text=True, timeout=600, check=True,
            )  # fmt: skip
            results[role] = json.loads(out.stdout.strip().splitlines()[-1])
            results[role]["server_cpu_s"] = sum(_server_cpu_s(s.pid) for s, _ in started) - (
                cpu_before
            )
            print(f"{role}: {json.dumps(results[role])}", file=sys.stderr, flush=True)
    finally:
        _stop_servers(started)
    results["ingest"] = measure_ingest(ports, 20)
    results["load_after"] = os.getloadavg()
    return results


def render(r: dict[str, Any]) -> str:
    n, p = r["switches"], r["ports"]
    offered = n * p * 9  # 8 queues and the port itself per port, each sampled once a second
    lines = [
        f"fleet vsonic ({r['servers']} process(es)): {n} switches x {p} ports x 8 queues, "
        f"SAMPLE 1 s of the COUNTERS table (at most {offered:,} updates/s offered)",
        f"{'client':<44}{'updates/s':>12}{'CPU s/s':>9}{'per CPU-s':>11}{'KiB/switch':>12}"
        f"{'servers CPU':>13}",
    ]
    for role, label in (
        ("collector", "collector (rates, state, metrics)"),
        ("bare", "baseline: bare Subscribe loop, same client"),
        ("pygnmi", "peer: pygnmi StreamSubscriber"),
    ):
        if role not in r:
            continue
        x = r[role]
        rate = x["updates"] / x["seconds"] if x["seconds"] > 0 else 0.0
        # Updates per CPU-second of the client: what it would take with a core to itself
        # (on a shared machine the wall-clock rate is capped by the CPU it was given).
        per_cpu = x["updates"] / x["cpu_s"] if x["cpu_s"] > 0 else 0.0
        lines.append(
            f"{label:<44}{rate:>12,.0f}{x['cpu_s'] / x['seconds']:>9.2f}{per_cpu:>11,.0f}"
            f"{x['rss_growth_kb'] / n:>12,.1f}{x['server_cpu_s']:>11.1f} s"
        )
        if x.get("memory_stop_kb"):
            lines.append(
                f"  (stopped after {x['seconds']:.1f} s: RSS {x['memory_stop_kb'] / 2**20:.1f} GiB,"
                " responses queued faster than handed out;"
                f" {x['scrape'].get('streams_open', '?')} streams open)"
            )
    if "collector" in r and "bare" in r:
        c = r["collector"]["updates"] / max(r["collector"]["seconds"], 1e-9)
        b = r["bare"]["updates"] / max(r["bare"]["seconds"], 1e-9)
        lines.append(f"ratio collector / bare loop: {c / b:.2f}" if b else "bare loop saw nothing")
    if "collector" in r:
        lines.extend(_scrape_lines(r["collector"]["scrape"]))
    i = r["ingest"]
    lines.append(
        f"ingest alone ({i['updates']:,} prebuilt updates, no server): "
        f"collector {i['updates'] / i['collector_s']:,.0f}/s, "
        f"baseline decode only {i['updates'] / i['decode_s']:,.0f}/s, "
        f"ratio {i['collector_s'] / i['decode_s']:.2f}x the time"
        + ("" if i["ingested"] == i["updates"] else f" (collector took {i['ingested']:,})")
    )
    idle = r["idle"]
    lines.append(
        f"server CPU s/s: {idle['idle_cpu']:.3f} with {idle['streams']} idle ON_CHANGE streams, "
        f"{idle['quiet_cpu']:.3f} with none (baseline)"
    )
    load = ", ".join(f"{x:.2f}" for x in r["load_before"])
    lines.append(f"load average before: {load}")
    lines.append(
        f"reproduce: {REPRODUCE} --switches {n} --ports {p} --duration {r['duration']:g} "
        f"--servers {r['servers']}"
    )
    return "\n".join(lines)


def _scrape_lines(scrape: dict[str, float]) -> list[str]:
    lines = []
    labels = {
        "": "now, gzip (as Prometheus asks)",
        "plain_": "now, no gzip",
        "before_": "before the core (Python render, no gzip), same state",
    }
    for key, label in labels.items():
        if f"{key}seconds" not in scrape:
            continue
        samples, seconds, cpu_s = (scrape[f"{key}{n}"] for n in ("samples", "seconds", "cpu_s"))
        lines.append(
            f"one scrape over HTTP, {label}: {samples:,.0f} samples in {seconds:.2f} s "
            f"({cpu_s:.2f} CPU s of the process, streams included; "
            f"{scrape[f'{key}wire_bytes'] / 2**20:,.1f} MiB on the wire)"
        )
    if scrape.get("seconds") and scrape.get("before_seconds"):
        ratio = scrape["before_seconds"] / scrape["seconds"]
        lines.append(f"ratio scrape before / now: {ratio:.1f}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--switches", type=int, default=10)
    parser.add_argument("--ports", type=int, default=64)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--role", choices=ROLES, help=argparse.SUPPRESS)
    parser.add_argument("--servers", type=int, default=1, help="fleet vsonic processes")
    parser.add_argument("--clients", default=",".join(ROLES), help="which clients to run")
    parser.add_argument("--port", help=argparse.SUPPRESS)  # the servers' ports, comma-separated
    parser.add_argument("--tls-ca", type=Path, help=argparse.SUPPRESS)  # what a role trusts
    args = parser.parse_args(argv)
    if args.role is not None:
        if args.tls_ca is None:
            parser.error("--role needs --tls-ca: the servers serve TLS")
        server_ports = [int(p) for p in args.port.split(",")]
        window = (args.warmup, args.duration)
        _run_role(args.role, server_ports, args.switches, args.ports, window, args.tls_ca)
        return 0
    roles = tuple(r for r in args.clients.split(",") if r)
    if not set(roles) <= set(ROLES):
        parser.error(f"--clients: choose from {', '.join(ROLES)}")
    print(
        render(measure(args.switches, args.ports, args.duration, args.warmup, args.servers, roles))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
