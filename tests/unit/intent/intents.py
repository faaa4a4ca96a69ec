"""Valid intent data for tests to break one field at a time (plain dicts, fresh each call)."""

from __future__ import annotations

from typing import Any


def switch_data(name: str, port: int, speeds: tuple[int, ...] = (25, 100)) -> dict[str, Any]:
    return {
        "name": name,
        "role": "leaf",
        "gnmi": {"address": "127.0.0.1", "port": port},
        "credential_ref": "env:SLUICE_GNMI_PASSWORD",
        "ports": [
            {"name": f"Ethernet{4 * j}", "speed_gbps": speed} for j, speed in enumerate(speeds)
        ],
    }


def intent_data() -> dict[str, Any]:
    """Two leaves, two hosts, four classes: QJUMP (STRICT), PIAS (STRICT), two DWRR."""
    return {
        "api_version": "sluice/v1",
        "fabric": {
            "base_rtt_us": 40.0,
            "ecn_lambda": 1.0,
            "mtu_bytes": 1500,
            "port_buffer_bytes": 2_000_000,
            "qjump": {"hosts": 8, "packet_bytes": 256, "epsilon_us": 4.0, "factors": {7: 1.0}},
        },
        "switches": [switch_data("leaf1", 50051), switch_data("leaf2", 50052)],
        "hosts": [
            {"name": "host1", "address": "10.0.0.1", "nic_gbps": 25},
            {"name": "host2", "address": "10.0.0.2", "nic_gbps": 25},
        ],
        "service_classes": [
            {
                "name": "control",
                "dscp": [48],
                "queue": 7,
                "scheduling": {"type": "STRICT"},
                "ecn": "off",
                "qjump_level": 7,
            },
            {
                "name": "rpc",
                "dscp": [46],
                "queue": 6,
                "scheduling": {"type": "STRICT"},
                "pias": {
                    "workload": "websearch",
                    "load": 0.6,
                    "demotions": [{"dscp": 34, "queue": 5}],
                },
            },
            {
                "name": "storage",
                "dscp": [10, 12],
                "queue": 3,
                "scheduling": {"type": "DWRR", "weight": 60},
                "ecn": "mqecn",
            },
            {
                "name": "bulk",
                "dscp": [8],
                "queue": 1,
                "scheduling": {"type": "DWRR", "weight": 40},
                "ecn": "mqecn",
            },
        ],
    }
