"""The exporter's conntrack event reader against a live kernel, in a throwaway network
namespace (``unshare --net``): finished UDP flows reported with their bytes, TCP connections
reported at their end (not TIME_WAIT later, when conntrack destroys the entry) and once, and
an event burst larger than the socket's buffer counted as lost (ENOBUFS), not silently
dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

DAEMON = (
    Path(__file__).resolve().parents[2]
    / "ansible_collections/sluice/fabric/roles/host_exporter/files/sluice_host_exporter.py"
)

# What each script run inside a new namespace starts with: the exporter module loaded from
# argv[1], conntrack on (an nft ct expression) with accounting and the netfilter sysctls given
# as JSON in argv[2], the exporter and its event socket; the script's own arguments follow.
PREAMBLE = r"""
import importlib.util, json, socket, subprocess, sys, threading, time
spec = importlib.util.spec_from_file_location("exporter", sys.argv[1])
exporter_module = importlib.util.module_from_spec(spec)
sys.modules["exporter"] = exporter_module
spec.loader.exec_module(exporter_module)
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["nft", "-f", "-"], check=True, text=True, input=(
    "table inet t {\n chain o {\n type filter hook output priority 0; policy accept;\n"
    " ct state new\n }\n}\n"
))
for name, value in {"nf_conntrack_acct": 1, **json.loads(sys.argv[2])}.items():
    with open(f"/proc/sys/net/netfilter/{name}", "w") as handle:
        handle.write(str(value))
exporter = exporter_module.Exporter(host="x", classes=[], levels={}, mtu=1500)
events = exporter_module.conntrack_socket()
"""

# UDP flows on loopback whose entries expire after 1 s, then one reap that ends them all at
# once, read only then (a burst).
UDP_BURST = (
    PREAMBLE
    + r"""
flows, buffer = int(sys.argv[3]), int(sys.argv[4])
if buffer:
    events.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
    for port in range(flows):
        sender.sendto(b"p" * 100, ("127.0.0.1", 20000 + port))
time.sleep(2.5)
exporter_module._request(exporter_module.reap_request(1))
reader = threading.Thread(
    target=exporter_module.read_conntrack_events, args=(exporter, events), daemon=True
)
reader.start()
time.sleep(1.0)
hist = exporter.flows.get("")
print(json.dumps({
    "events": exporter.events, "lost": exporter.lost,
    "flows": hist.count if hist else 0, "bytes": hist.total if hist else 0,
}))
"""
)

# After a script has read ``flows``: the reader running, and a server on 127.0.0.1:7000 that
# takes ``flows`` connections and reads each to its end.
TCP_SINK = r"""
threading.Thread(
    target=exporter_module.read_conntrack_events, args=(exporter, events), daemon=True
).start()
server = socket.create_server(("127.0.0.1", 7000))
def sink():
    for _ in range(flows):
        conn, _ = server.accept()
        with conn:
            while conn.recv(65536):
                pass
threading.Thread(target=sink, daemon=True).start()
"""

# TCP connections on loopback, the reader running, conntrack's TIME_WAIT at 3 s: what was
# reported half a second after the last one ended (all still in TIME_WAIT), then again once
# TIME_WAIT is over and a reap has destroyed the entries (each DESTROY event read).
TCP_ENDS = (
    PREAMBLE
    + r"""
flows, payload = int(sys.argv[3]), int(sys.argv[4])
"""
    + TCP_SINK
    + r"""
for _ in range(flows):
    with socket.create_connection(("127.0.0.1", 7000)) as client:
        client.sendall(b"t" * payload)
        client.shutdown(socket.SHUT_WR)
        client.recv(1)
time.sleep(0.5)
def seen():
    hist = exporter.flows.get("")
    with open("/proc/net/nf_conntrack") as table:
        tracked = sum(" tcp " in line for line in table)
    return {"events": exporter.events, "flows": hist.count if hist else 0,
            "bytes": hist.total if hist else 0, "tracked": tracked}
at_end = seen()
time.sleep(3.5)
exporter_module._request(exporter_module.reap_request(1))
time.sleep(1.0)
print(json.dumps({"at_end": at_end, "after": seen()}))
"""
)

# TCP connections on loopback, each held open ``hold_ms`` before its payload is sent and it is
# closed, the reader running: the completion times the exporter recorded, per size band.
TCP_HELD = (
    PREAMBLE
    + r"""
flows, payload, hold_ms = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
"""
    + TCP_SINK
    + r"""
for _ in range(flows):
    with socket.create_connection(("127.0.0.1", 7000)) as client:
        time.sleep(hold_ms / 1000)
        client.sendall(b"t" * payload)
        client.shutdown(socket.SHUT_WR)
        client.recv(1)
time.sleep(0.5)
print(json.dumps({
    band: {"count": hist.count, "sum": hist.total,
           "buckets": dict(zip(map(str, hist.bounds), hist.buckets))}
    for (klass, band), hist in exporter.completions.items()
}))
"""
)


def _in_new_namespace(script: str, sysctls: dict[str, int], *args: int) -> Any:
    argv = ["unshare", "--net", sys.executable, "-c", script, str(DAEMON), json.dumps(sysctls)]
    argv += [str(arg) for arg in args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _run(flows: int, buffer: int) -> dict[str, int]:
    result: dict[str, int] = _in_new_namespace(
        UDP_BURST, {"nf_conntrack_udp_timeout": 1}, flows, buffer
    )
    return result


def test_finished_udp_flows_are_reported_with_their_bytes() -> None:
    seen = _run(flows=20, buffer=0)
    # 20 one-packet flows of 100 B payload: 128 B IP packets, sent (and opened) here
    assert seen == {"events": 20, "lost": 0, "flows": 20, "bytes": 20 * 128}


def test_a_burst_beyond_the_buffer_is_counted_as_lost() -> None:
    seen = _run(flows=2000, buffer=4096)
    assert seen["lost"] >= 1
    assert seen["events"] < 2000


def test_a_tcp_connection_is_reported_when_it_ends_and_not_again_when_destroyed() -> None:
    flows, payload = 8, 30_000
    seen = _in_new_namespace(TCP_ENDS, {"nf_conntrack_tcp_timeout_time_wait": 3}, flows, payload)
    at_end, after = seen["at_end"], seen["after"]
    # every connection reported while its entry still sat in TIME_WAIT
    assert at_end["tracked"] == flows, seen
    assert (at_end["events"], at_end["flows"]) == (flows, flows), seen
    # the client sent the larger direction: its payload plus at least one header per packet
    assert at_end["bytes"] >= flows * (payload + 52), seen
    # the entries are gone (their DESTROY events read) and nothing was counted twice
    assert after == {**at_end, "tracked": 0}, seen


def test_a_tcp_connection_s_completion_time_runs_from_its_first_packet_to_its_end() -> None:
    # Each connection is held open 200 ms before it sends: its completion time is at least
    # that (the entry starts at the SYN), and it is a small flow (20 000 B).
    flows, payload, hold_ms = 5, 20_000, 200
    seen = _in_new_namespace(
        TCP_HELD, {"nf_conntrack_timestamp": 1, "nf_conntrack_tcp_timeout_time_wait": 3},
        flows, payload, hold_ms,
    )  # fmt: skip
    assert set(seen) == {"small"}, seen  # no medium or large flow was recorded
    small = seen["small"]
    assert small["count"] == flows, seen
    assert small["sum"] >= flows * hold_ms / 1000, seen
    # no connection finished faster than it was held open (the buckets are cumulative)
    assert small["buckets"][str(0.1024)] == 0, seen
    # without conntrack's timestamps there is no start, so no completion time (sizes only)
    without = _in_new_namespace(
        TCP_HELD, {"nf_conntrack_timestamp": 0, "nf_conntrack_tcp_timeout_time_wait": 3},
        flows, payload, 10,
    )  # fmt: skip
    assert without == {}, without
