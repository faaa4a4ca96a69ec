"""sluice's PFC priority -> priority group map on two platforms (docs/lossless.md, "A port
without the operator's ``pfc_to_pg_map``"): bound on a Mellanox switch, where SONiC's own
qos_config.j2 binds one, left out on SONiC's virtual switch, whose ASIC SONiC binds none on;
the plan names the choice per switch and the rollout writes it. Four vsonic switches (real
gRPC, real Redis); the API beside the real worker. The spines say no platform (as a switch
adopted before sluice kept it) and keep the binding as before."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.intent.loader import dump_intent
from tests.integration.southbound.conftest import Fabric
from tests.support.lossless import with_lossless_storage
from vsonic.db import CONFIG_DB, redis_key
from vsonic.seed import WATCHDOG_GLOBAL, WATCHDOG_INTERVAL, lossless_pools

from .conftest import full_dump, load_neighbours, set_fields
from .test_adopting import api as api
from .test_adopting import headers as headers
from .test_adopting import roll_out, store

pytestmark = [pytest.mark.integration]

SN2700 = "x86_64-mlnx_msn2700-r0"  # sonic-buildimage device/mellanox/.../platform_asic: mellanox
VS = "x86_64-kvm_x86_64-r0"  # SONiC's virtual switch (sonic_version.yml asic_type: vs)
PLATFORMS = {"leaf1": SN2700, "leaf2": VS}
PFC_TO_PG = "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"


@pytest.fixture
def operated(fabric: Fabric) -> Fabric:
    """Every switch with the lossless pools and a running watchdog, LLDP everywhere, and
    the leaves' platforms (test_adopting's ``api`` runs over it)."""
    pools = {redis_key(CONFIG_DB, "BUFFER_POOL", k): v for k, v in lossless_pools().items()}
    started = {redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL): dict(WATCHDOG_INTERVAL)}
    for switch in fabric.switches.values():
        switch.store.write_atomically(CONFIG_DB, pools | started)
    for name, platform in PLATFORMS.items():
        set_fields(fabric, name, "DEVICE_METADATA", "localhost", platform=platform)
    load_neighbours(fabric)
    return fabric


def test_the_map_is_bound_on_a_mellanox_platform_and_left_out_on_the_virtual_switch(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    store(api, headers, dump_intent(with_lossless_storage(operated.intent)))
    found = api.post("/api/v1/discoveries", json={"switches": list(PLATFORMS)}, headers=headers)
    assert found.status_code == 201, found.text

    planned = api.post("/api/v1/plans", json={}, headers=headers)
    assert planned.status_code == 200, planned.text
    body: dict[str, Any] = planned.json()
    notes = {w["field"]: w["reason"] for w in body["warnings"] if "pfc_to_pg_map" in w["reason"]}
    assert f"platform {SN2700} is mellanox" in notes["switches.leaf1"]
    assert notes["switches.leaf1"].startswith("PORT_QOS_MAP.pfc_to_pg_map: binds")
    assert f"platform {VS} is not a mellanox or barefoot one" in notes["switches.leaf2"]
    assert "qos_config.j2" in notes["switches.leaf2"]
    assert "never discovered" in notes["switches.spine1"]
    bound = {
        p["switch"]: {
            op["fields"].get("pfc_to_pg_map") for op in p["ops"] if op["table"] == "PORT_QOS_MAP"
        }
        for p in body["plans"]
    }
    assert bound["leaf1"] == {"SLUICE"}
    assert bound["leaf2"] == {None}

    done = roll_out(api, headers)
    assert done["state"] == "completed", done
    after = full_dump(operated)
    for name in ("leaf1", "spine1", "spine2"):
        ports = {k: v for k, v in after[name].items() if k.startswith("PORT_QOS_MAP|Ethernet")}
        assert {v.get("pfc_to_pg_map") for v in ports.values()} == {"SLUICE"}, name
        assert after[name][f"{PFC_TO_PG}|SLUICE"] == {"3": "3"}, name
    leaf2 = {k: v for k, v in after["leaf2"].items() if k.startswith("PORT_QOS_MAP|Ethernet")}
    assert leaf2
    assert all("pfc_to_pg_map" not in fields for fields in leaf2.values())
    assert {fields["pfc_enable"] for fields in leaf2.values()} == {"3"}  # PFC itself is there
    assert {fields["tc_to_pg_map"] for fields in leaf2.values()} == {"SLUICE"}
    assert not [k for k in after["leaf2"] if k.startswith(f"{PFC_TO_PG}|")]
