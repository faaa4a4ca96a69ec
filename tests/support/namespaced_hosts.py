"""Intents whose hosts are a namespaced fabric's (``lab.netns``): the end-to-end tests' and
the hosts of any other test that runs the real site.yml over SSH (the API fuzz run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.settings import HostsSettings
from lab import netns


def fabric_hosts(fabric: netns.Fabric) -> list[dict[str, Any]]:
    """The intent's ``hosts``: each of the fabric's namespaces (1 Gb/s veth), logged in to with
    the fabric's client key."""
    key = f"file:{fabric.client_key}"
    return [
        {"name": h.name, "address": h.address, "nic_gbps": 1, "ssh": {"key_ref": key}}
        for h in fabric.hosts
    ]


def hosts_settings(fabric: netns.Fabric, workdir: Path, **overrides: Any) -> HostsSettings:
    """The control node's settings for reaching the fabric: ansible-playbook started inside
    its control namespace, the fabric's known_hosts, its own SSH control-path folder."""
    return HostsSettings(
        command_prefix=tuple(fabric.control_exec([])),
        ssh_common_args=" ".join(fabric.ssh_options()),
        control_path_dir=fabric.workdir / "cp",
        workdir=workdir,
        **overrides,
    )


def e2e_intent(fabric: netns.Fabric) -> dict[str, Any]:
    """Hosts are the fabric's namespaces (1 Gb/s veths); QJUMP numbers chosen to be round:
    n = 8, P = 250 B, R = 1 Gb/s, eps = 8 us -> epoch = 2 x 8 x 2000 bit / 1e9 + 8 us
    = 32 us + 8 us = 40 us; level 7 (f = 1): 2000 bit / 40 us = 50 Mbit/s, burst 250 B;
    level 4 (f = 2): 100 Mbit/s, burst 500 B; level 0 (no factor): the 1 Gbit/s line rate."""
    return {
        "fabric": {
            "base_rtt_us": 40,
            "port_buffer_bytes": 2_000_000,
            "qjump": {"hosts": 8, "packet_bytes": 250, "epsilon_us": 8, "factors": {7: 1, 4: 2}},
            # reno: inside a network namespace only tcp_allowed_congestion_control is accepted
            # (reno and bbr here), and a fresh namespace starts on bbr, so this is a change
            "host_transport": {"congestion_control": "reno"},
        },
        "hosts": fabric_hosts(fabric),
        "service_classes": [
            {"name": "control", "dscp": [48], "queue": 7, "scheduling": {"type": "STRICT"},
             "ecn": "off", "qjump_level": 7,
             "hosts_match": {"protocol": "udp", "dports": [5405]}},
            {"name": "rpc", "dscp": [46], "queue": 6, "scheduling": {"type": "STRICT"},
             "pias": {"workload": "websearch", "load": 0.6,
                      "demotions": [{"dscp": 34, "queue": 5}]},
             "hosts_match": {"protocol": "tcp", "dports": [8080]}},
            {"name": "storage", "dscp": [10], "queue": 3,
             "scheduling": {"type": "DWRR", "weight": 50}},
            {"name": "bulk", "dscp": [8], "queue": 1,
             "scheduling": {"type": "STRICT"}, "ecn": "off", "qjump_level": 4,
             "hosts_match": {"uid": 4242}},
        ],
    }  # fmt: skip
