"""``vsonic up --inventory``: the switches an intent-shaped file names, as real processes."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.integration.vsonic.support import PASSWORD, gnmi_get, run_vsonic
from tests.support.ports import free_port_run
from vsonic.supervisor import load_state


def test_up_from_an_inventory_starts_those_switches_with_their_ports(tmp_path: Path) -> None:
    base = free_port_run(2)
    source = {
        "switches": [
            {
                "name": "leafA",
                "role": "leaf",
                "gnmi": {"address": "127.0.0.1", "port": base},
                "ports": [
                    {"name": "Ethernet0", "speed_gbps": 25},
                    {"name": "Ethernet48", "speed_gbps": 100},
                ],
            },
            {
                "name": "spineA",
                "role": "spine",
                "gnmi": {"address": "127.0.0.1", "port": base + 1},
                "ports": [{"name": "Ethernet4", "speed_gbps": 400}],
            },
        ]
    }
    path = tmp_path / "fabric.yaml"
    path.write_text(yaml.safe_dump(source))
    state = tmp_path / "state"
    up = run_vsonic("up", "--inventory", str(path), "--state-dir", str(state), "--no-dataplane")
    try:
        assert up.returncode == 0, up.stderr
        # CONFIG_DB PORT speed is in Mb/s: 25 Gb/s -> "25000", 100 -> "100000", 400 -> "400000".
        leaf = gnmi_get(base, "/sonic-db:CONFIG_DB/localhost/PORT", state)
        assert isinstance(leaf, dict)
        assert {name: fields["speed"] for name, fields in leaf.items()} == {
            "Ethernet0": "25000",
            "Ethernet48": "100000",
        }
        spine = gnmi_get(base + 1, "/sonic-db:CONFIG_DB/localhost/DEVICE_METADATA/localhost", state)
        assert isinstance(spine, dict)
        assert spine["hostname"] == "spineA"
        written = yaml.safe_load((state / "inventory.yaml").read_text())
        assert [(s["name"], s["role"], s["gnmi"]["port"]) for s in written["switches"]] == [
            ("leafA", "leaf", base),
            ("spineA", "spine", base + 1),
        ]
        assert written["switches"][1]["ports"] == [{"name": "Ethernet4", "speed_gbps": 400}]
        assert PASSWORD not in up.stdout + up.stderr
    finally:
        down = run_vsonic("down", "--state-dir", str(state))
    assert down.returncode == 0
    assert load_state(state) is None


def test_a_bad_inventory_is_refused_before_anything_starts(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("switches:\n  - {name: x, gnmi: {address: 10.1.1.1, port: 50051}}\n")
    up = run_vsonic("up", "--inventory", str(path), "--state-dir", str(tmp_path / "s"))
    assert up.returncode == 2
    assert "switches[0].gnmi.address" in up.stderr
    assert load_state(tmp_path / "s") is None
