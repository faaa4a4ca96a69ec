"""The pure renderers of ``sluice health`` and ``sluice top``."""

from __future__ import annotations

from controller.cli.telemetry import (
    health_lines,
    health_rows,
    percent,
    si,
    top_header,
    top_rows,
)


def test_si_and_percent() -> None:
    assert si(None) == "-"
    assert si(1_530_000, "B") == "1.53MB"
    assert si(2.5e9, "B") == "2.5GB"
    assert si(999) == "999"
    assert si(0.25) == "0.25"
    assert percent(0.123) == "12.3"
    assert percent(None) == "-"


def test_health_lines_and_one_row_per_reason() -> None:
    doc = {
        "state": "critical",
        "counts": {"ok": 1, "warn": 0, "critical": 1},
        "reasons": [{"state": "warn", "where": "collector 0", "detail": "lag s 6 >= 5"}],
        "switches": [
            {"switch": "leaf1", "state": "ok", "reasons": []},
            {
                "switch": "leaf2",
                "state": "critical",
                "reasons": [
                    {"state": "critical", "where": "leaf2", "detail": "stream down"},
                    {"state": "warn", "where": "leaf2 Ethernet0 queue 3", "detail": "marks"},
                ],
            },
        ],
    }
    assert health_lines(doc) == [
        "fabric: critical (1 ok, 0 warn, 1 critical)",
        "  warn: collector 0: lag s 6 >= 5",
    ]
    assert health_rows(doc) == [
        ("leaf1", "ok", "-"),
        ("leaf2", "critical", "critical: leaf2: stream down"),
        ("", "", "warn: leaf2 Ethernet0 queue 3: marks"),
    ]


def test_top_header_leaves_out_what_is_unknown() -> None:
    doc = {"switch": "leaf1", "agent": {"mode": None}, "stream_up": None}
    assert top_header(doc) == "leaf1 | agent unknown | stream unknown"


def test_top_header_shows_the_orders_version_in_the_compilers_hex() -> None:
    # The collector exports the 12-hex-digit digest as a gauge (a float); the header must
    # show the digest an operator sees in CONFIG_DB, not 1.77e+14.
    doc = {"switch": "leaf1", "agent": {"mode": "dynamic", "orders_version": float(0xA1B2C3D4E5F6)}}
    assert "orders va1b2c3d4e5f6 |" in top_header(doc)


def test_top_rows_one_per_queue_and_a_dash_row_for_a_silent_port() -> None:
    doc = {
        "ports": [
            {
                "port": "Ethernet0",
                "queues": [
                    {
                        "queue": "3",
                        "service_class": "storage",
                        "tx_bytes_per_s": 1.5e9,
                        "tx_packets_per_s": 1e6,
                        "ecn_marked_packets_per_s": 1.2e5,
                        "mark_fraction": 0.12,
                        "dropped_packets_per_s": 0.0,
                        "occupancy_bytes": 40_000,
                        "threshold_bytes": 90_000,
                        "basis": "computed",
                    }
                ],
            },
            {"port": "Ethernet4", "queues": []},
        ]
    }
    assert top_rows(doc) == [
        (
            "Ethernet0",
            "3",
            "storage",
            "1.5GB",
            "1M",
            "120k",
            "12.0",
            "0",
            "40kB",
            "90kB",
            "computed",
        ),
        ("Ethernet4", *("-",) * 10),
    ]


def test_an_idle_switch_says_so_in_health_and_top() -> None:
    doc = {
        "switches": [
            {"switch": "spine1", "state": "ok", "reasons": [], "idle": True},
            {"switch": "leaf1", "state": "ok", "reasons": [], "idle": False},
        ]
    }
    assert health_rows(doc) == [
        ("spine1", "ok", "idle: no queue counter moving, nothing held (not a fault)"),
        ("leaf1", "ok", "-"),
    ]
    header = top_header({"switch": "spine1", "agent": {"mode": "idle", "algorithm": "mqecn"}})
    assert header.startswith("spine1 | agent idle (mqecn) |")
    assert header.endswith("| idle: no queue counter moving (rates are the last that moved)")
    busy = top_header({"switch": "leaf1", "agent": {"mode": "dynamic"}})
    assert "idle" not in busy
