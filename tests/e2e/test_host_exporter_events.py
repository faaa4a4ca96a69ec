"""The exporter's conntrack event reader against a live kernel, in a throwaway network
namespace (``unshare --net``): finished UDP flows reported with their bytes, and an event
burst larger than the socket's buffer counted as lost (ENOBUFS), not silently dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

DAEMON = (
    Path(__file__).resolve().parents[2]
    / "ansible_collections/sluice/fabric/roles/host_exporter/files/sluice_host_exporter.py"
)

# Runs inside the new namespace: conntrack on (an nft ct expression), UDP flows on loopback
# whose entries expire after 1 s, then one reap that ends them all at once.
SCRIPT = r"""
import importlib.util, json, socket, subprocess, sys, threading, time
spec = importlib.util.spec_from_file_location("exporter", sys.argv[1])
exporter_module = importlib.util.module_from_spec(spec)
sys.modules["exporter"] = exporter_module
spec.loader.exec_module(exporter_module)
flows, buffer = int(sys.argv[2]), int(sys.argv[3])
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["nft", "-f", "-"], check=True, text=True, input=(
    "table inet t {\n chain o {\n type filter hook output priority 0; policy accept;\n"
    " ct state new\n }\n}\n"
))
for name, value in (("nf_conntrack_acct", "1"), ("nf_conntrack_udp_timeout", "1")):
    with open(f"/proc/sys/net/netfilter/{name}", "w") as handle:
        handle.write(value)
exporter = exporter_module.Exporter(host="x", classes=[], levels={}, mtu=1500)
events = exporter_module.conntrack_socket()
if buffer:
    events.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
    for port in range(flows):
        sender.sendto(b"p" * 100, ("127.0.0.1", 20000 + port))
time.sleep(2.5)
exporter_module._dump(exporter_module.reap_request(1))
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


def _run(flows: int, buffer: int) -> dict[str, int]:
    argv = ["unshare", "--net", sys.executable, "-c", SCRIPT, str(DAEMON), str(flows), str(buffer)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_finished_udp_flows_are_reported_with_their_bytes() -> None:
    seen = _run(flows=20, buffer=0)
    # 20 one-packet flows of 100 B payload: 128 B IP packets, sent (and opened) here
    assert seen == {"events": 20, "lost": 0, "flows": 20, "bytes": 20 * 128}


def test_a_burst_beyond_the_buffer_is_counted_as_lost() -> None:
    seen = _run(flows=2000, buffer=4096)
    assert seen["lost"] >= 1
    assert seen["events"] < 2000
