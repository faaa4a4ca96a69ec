"""Lossless headroom sized for the cables the switches report (docs/lossless.md, "Cable
lengths"), through the API, the real worker's discovery over gNMI and PostgreSQL, on the
example fabric's vsonic switches with their LLDP neighbours.

leaf1 knows its host port's cable (``CABLE_LENGTH|AZURE`` Ethernet0 40 m) but not its uplink's;
spine1 knows the other end of that uplink (Ethernet0, 100 m). leaf2's uplink is 10 m at leaf2
and 30 m at spine1: one cable, two lengths.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.intent.loader import parse_intent
from controller.qos.lossless import headroom
from tests.integration.southbound.conftest import Fabric
from vsonic.db import CONFIG_DB, redis_key
from vsonic.seed import WATCHDOG_GLOBAL, WATCHDOG_INTERVAL

from .conftest import ALL, load_neighbours
from .test_adopting import api as api
from .test_adopting import headers as headers
from .test_adopting import lossless_intent, store

CABLES = {
    "leaf1": {"Ethernet0": "40m"},
    "leaf2": {"Ethernet48": "10m"},
    "spine1": {"Ethernet0": "100m", "Ethernet4": "30m"},
}
PROFILE_40M = "SLUICE_pg_lossless_25000_40m_profile"
PROFILE_100M = "SLUICE_pg_lossless_100000_100m_profile"


@pytest.fixture
def operated(fabric: Fabric) -> Fabric:
    """The fabric with the cables above, the watchdog started and LLDP everywhere
    (test_adopting's ``api`` and ``headers`` run over it: the app beside the real worker)."""
    watchdog = {redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL): dict(WATCHDOG_INTERVAL)}
    for name, switch in fabric.switches.items():
        key = redis_key(CONFIG_DB, "CABLE_LENGTH", "AZURE")
        cables = {key: dict(CABLES[name])} if name in CABLES else {}
        switch.store.write_atomically(CONFIG_DB, cables | watchdog)
    load_neighbours(fabric)
    return fabric


def plan(api: TestClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    answer = api.post("/api/v1/plans", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def written(found: dict[str, Any], switch: str) -> dict[str, dict[str, str]]:
    """``TABLE|key`` -> fields of what a switch's plan writes."""
    (shown,) = [p for p in found["plans"] if p["switch"] == switch]
    return {f"{op['table']}|{op['key']}": op["fields"] for op in shown["ops"]}


def test_a_discovered_cable_length_sizes_the_lossless_profile_and_the_plan_says_why(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    intent = lossless_intent(operated)
    first = store(api, headers, intent)  # nothing discovered yet: every port the default 5 m
    found = api.post("/api/v1/discoveries", json={"switches": list(ALL)}, headers=headers)
    assert found.status_code == 201, found.text

    # The proposed intent is sized for what the switches reported, port by port.
    proposed = plan(api, headers, intent=intent)
    leaf1 = written(proposed, "leaf1")
    assert leaf1["BUFFER_PG|Ethernet0|2"] == {"profile": PROFILE_40M}
    assert leaf1["BUFFER_PG|Ethernet48|2"] == {"profile": PROFILE_100M}
    assert leaf1["BUFFER_PG|Ethernet4|2"] == {"profile": "SLUICE_pg_lossless_25000_5m_profile"}
    platform = parse_intent(intent).fabric.lossless
    assert platform is not None
    sized = headroom(25, 40, 9100, platform.headroom_platform())
    assert leaf1[f"BUFFER_PROFILE|{PROFILE_40M}"]["xoff"] == str(sized.xoff_bytes)
    reasons = {(c["switch"], c["port"]): c["reason"] for c in proposed["cables"]}
    assert reasons[("leaf1", "Ethernet0")] == "40 m from CABLE_LENGTH"
    assert reasons[("leaf1", "Ethernet48")] == "100 m from spine1:Ethernet0's CABLE_LENGTH"
    assert reasons[("leaf1", "Ethernet4")] == "5 m fabric default"
    assert reasons[("spine1", "Ethernet4")] == "30 m from CABLE_LENGTH"
    assert reasons[("leaf2", "Ethernet48")] == "30 m from spine1:Ethernet4's CABLE_LENGTH"
    assert [(f["switch"], f["field"]) for f in proposed["cable_findings"]] == [
        ("leaf2", "CABLE_LENGTH|AZURE.Ethernet48")
    ]

    # Version 1 was sized before the discovery: its plan says so, port by port.
    current = plan(api, headers)
    assert written(current, "leaf1")["BUFFER_PG|Ethernet0|2"] == {
        "profile": "SLUICE_pg_lossless_25000_5m_profile"
    }
    stale = {w["field"] for w in current["warnings"] if "write the intent again" in w["reason"]}
    assert {"switches.leaf1.ports.Ethernet0", "switches.leaf1.ports.Ethernet48"} <= stale
    assert "switches.leaf1.ports.Ethernet4" not in stale

    # The same intent written again is a new version, sized for the discovered cables.
    assert store(api, headers, intent) == first + 1
    resized = plan(api, headers)
    assert written(resized, "leaf1")["BUFFER_PG|Ethernet0|2"] == {"profile": PROFILE_40M}
    assert not [w for w in resized["warnings"] if "write the intent again" in w["reason"]]
    assert store(api, headers, intent) == first + 1  # and then unchanged

    # The inventory an adoption starts from proposes the same lengths.
    switches = {s["name"]: s for s in found.json()["inventory"]["switches"]}
    ports = {p["name"]: p for p in switches["leaf1"]["ports"]}
    assert ports["Ethernet0"]["cable_length_m"] == 40
    assert ports["Ethernet48"]["cable_length_m"] == 100
    assert "cable_length_m" not in ports["Ethernet4"]
