"""Failures stay where they belong: a host whose sshd is down is reported failed while the
others are configured, and bad variables are refused by the modules with a clear message
before anything on that host changes."""

from __future__ import annotations

from typing import Any

import pytest

from lab import netns
from tests.e2e.playbook import htb_classes, nft_ruleset, root_qdisc, run_site, sysctl

pytestmark = pytest.mark.e2e

GOOD: dict[str, Any] = {
    "sluice_ecn": {"tcp_ecn": 1, "congestion_control": "reno"},
    "sluice_qjump": {
        "device": "eth0",
        "line_rate_bps": 100_000_000,
        "levels": [{"level": 0, "rate_bps": 100_000_000, "burst_bytes": 15000}],
    },
    "sluice_dscp": [{"name": "web", "dscp": 18, "match": {"protocol": "tcp", "dports": [80]}}],
}


def _state(fabric: netns.Fabric, host: str) -> tuple[str, str, str, list[str], int]:
    return (
        sysctl(fabric, host, "net.ipv4.tcp_ecn"),
        sysctl(fabric, host, "net.ipv4.tcp_congestion_control"),
        root_qdisc(fabric, host)["kind"],
        sorted(htb_classes(fabric, host)),
        len(nft_ruleset(fabric, host)),
    )


def test_host_with_sshd_down_fails_while_the_others_succeed(small_fabric: netns.Fabric) -> None:
    untouched = _state(small_fabric, "h2")
    small_fabric.stop_sshd("h2")
    run = run_site(small_fabric, {h.name: GOOD for h in small_fabric.hosts})
    assert run.returncode != 0
    assert run.recap["h2"].unreachable == 1
    assert run.recap["h2"].ok == 0
    # The controller's record of the run (sluice.fabric.events callback) says the same.
    assert [e["status"] for e in run.tasks("h2", "unreachable")] == ["unreachable"]
    assert run.stats()["h2"]["unreachable"] == 1
    changed = {e["role"] for e in run.tasks("h1", "changed")}
    assert changed == {"ecn", "qjump", "dscp"}  # no sluice_pias here: its table stays absent
    for host in ("h1", "h3"):
        assert run.recap[host].failed == 0
        assert run.recap[host].unreachable == 0
        assert run.recap[host].changed > 0
        assert root_qdisc(small_fabric, host)["kind"] == "htb"
        assert sysctl(small_fabric, host, "net.ipv4.tcp_congestion_control") == "reno"
    assert _state(small_fabric, "h2") == untouched


BAD: dict[str, dict[str, Any]] = {
    # A QJUMP level faster than the line it sits on.
    "h1": {
        "sluice_qjump": {
            "device": "eth0",
            "line_rate_bps": 100_000_000,
            "levels": [{"level": 2, "rate_bps": 200_000_000, "burst_bytes": 1500}],
        }
    },
    # DCTCP is not built into this kernel (platform notes).
    "h2": {"sluice_ecn": {"tcp_ecn": 1, "congestion_control": "dctcp"}},
    # PIAS thresholds must grow, and one DSCP per stage.
    "h3": {"sluice_pias": {"thresholds_bytes": [500_000, 100_000], "dscp": [40, 20, 10]}},
}
REASONS = {
    "h1": "sluice_qjump.levels[0].rate_bps: 200000000 is above the line rate 100000000",
    "h2": "'dctcp' is not offered by this kernel",
    "h3": "sluice_pias.thresholds_bytes: must increase strictly",
}


def test_bad_variables_are_refused_with_a_reason_and_change_nothing(
    small_fabric: netns.Fabric,
) -> None:
    before = {h.name: _state(small_fabric, h.name) for h in small_fabric.hosts}
    run = run_site(small_fabric, BAD)
    assert run.returncode != 0
    for host, reason in REASONS.items():
        assert run.recap[host].failed == 1
        assert run.recap[host].changed == 0
        failure = next(
            line for line in run.stdout.splitlines() if line.startswith(f"fatal: [{host}]")
        )
        assert reason in failure
        assert _state(small_fabric, host) == before[host]
