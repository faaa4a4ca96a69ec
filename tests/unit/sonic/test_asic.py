"""sluice's PFC priority -> priority group map, bound only where SONiC's own template binds one
(sonic-buildimage files/build_templates/qos_config.j2 ``pfc_to_pg_map_supported_asics``:
mellanox, barefoot), by the switch's platform (controller/sonic/asic.py; docs/lossless.md, "A
port without the operator's ``pfc_to_pg_map``")."""

from __future__ import annotations

import pytest

from controller.sonic.asic import asic_of, pfc_to_pg
from controller.sonic.buffermgrd import buffer_facts
from controller.sonic.coexist import effective, operator_baseline
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.discovery import Discovery
from controller.sonic.model import SwitchConfig
from tests.unit.sonic.test_coexist import PORTS
from tests.unit.sonic.test_coexist_lossless import desired, operator, rdma, with_pfc_to_pg

METADATA = ("DEVICE_METADATA", "localhost")
PFC_TO_PG = "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"
# Platforms and their ASICs as sonic-buildimage's device/*/*/platform_asic files name them.
SN2700 = "x86_64-mlnx_msn2700-r0"  # mellanox
SN5600 = "x86_64-nvidia_sn5600-r0"  # mellanox
WEDGE100BF = "x86_64-accton_wedge100bf_32x-r0"  # barefoot
S6000 = "x86_64-dell_s6000_s1220-r0"  # broadcom (Trident2)
VS = "x86_64-kvm_x86_64-r0"  # SONiC's virtual switch


@pytest.mark.parametrize(
    ("platform", "asic"),
    [
        (SN2700, "mellanox"),
        (SN5600, "mellanox"),
        (WEDGE100BF, "barefoot"),
        ("x86_64-arista_7170_64c", "barefoot"),
        (S6000, None),
        ("x86_64-arista_7050cx3_32s", None),  # broadcom
        (VS, None),
    ],
)
def test_the_asics_sonic_binds_the_map_on_are_known_by_platform(
    platform: str, asic: str | None
) -> None:
    assert asic_of(platform) == asic


def facts(platform: str | None) -> SwitchConfig:
    fields = {"buffer_model": "traditional"} | ({"platform": platform} if platform else {})
    return {METADATA: fields}


def test_the_choice_names_the_platform_and_the_template() -> None:
    bound = pfc_to_pg(facts(SN2700))
    assert bound.binds
    assert f"platform {SN2700} is mellanox" in bound.note()
    left = pfc_to_pg(facts(S6000))
    assert not left.binds
    note = left.note()
    assert note.startswith("PORT_QOS_MAP.pfc_to_pg_map: does not bind sluice's")
    assert f"platform {S6000} is not a mellanox or barefoot one" in note
    assert "pfc_to_pg_map_supported_asics" in note


def test_a_record_without_a_platform_keeps_the_binding_it_had() -> None:
    # An adoption recorded before the platform was kept: unbinding would flap every port.
    choice = pfc_to_pg(facts(None))
    assert choice.binds
    assert "not recorded" in choice.why


def test_the_operators_own_map_says_the_asic_takes_one() -> None:
    found = facts("x86_64-newvendor_box-r0") | {(PFC_TO_PG, "AZURE"): {"3": "3", "4": "4"}}
    assert pfc_to_pg(found).binds
    assert not pfc_to_pg(facts("x86_64-newvendor_box-r0")).binds


def test_the_platform_is_kept_with_the_buffer_facts_and_in_discovery() -> None:
    running = {METADATA: {"hostname": "leaf1", "hwsku": "ACS-MSN2700", "platform": SN2700}}
    assert buffer_facts(running) == {METADATA: {"buffer_model": "traditional", "platform": SN2700}}
    assert operator_baseline(running)[METADATA]["platform"] == SN2700
    found = Discovery("leaf1", "leaf1", "ACS-MSN2700", SN2700, "traditional", None, (), (), {})
    assert found.config()[METADATA] == {"buffer_model": "traditional", "platform": SN2700}


def lossless_leaf(platform: str | None) -> tuple[SwitchConfig, SwitchConfig]:
    """(sluice's compiled entries, the switch) for a switch without the operator's lossless
    config: no PFC of theirs, so only the platform decides."""
    config = operator()
    for port in PORTS:
        del config[("PORT_QOS_MAP", port)]["pfc_enable"]
        del config[("PFC_WD", port)]
    config[METADATA] = facts(platform)[METADATA]
    own, _, _ = desired(rdma(2, 2, 26))
    return own, config


@pytest.mark.parametrize("platform", [SN2700, WEDGE100BF, None])
def test_sluices_map_is_bound_where_sonic_binds_one(platform: str | None) -> None:
    own, config = lossless_leaf(platform)
    want = effective(own, config)
    assert all(want[("PORT_QOS_MAP", p)]["pfc_to_pg_map"] == "SLUICE" for p in PORTS)
    assert want[(PFC_TO_PG, "SLUICE")] == {"2": "2"}


@pytest.mark.parametrize("platform", [S6000, VS])
def test_sluices_map_is_left_out_on_other_asics_and_the_rest_of_pfc_stays(platform: str) -> None:
    own, config = lossless_leaf(platform)
    want = effective(own, config)
    for port in PORTS:
        qos = want[("PORT_QOS_MAP", port)]
        assert "pfc_to_pg_map" not in qos
        assert qos["pfc_enable"] == "2"
        assert {"tc_to_pg_map", "pfc_to_queue_map"} <= qos.keys()  # merged into td2's AZURE
    assert not [key for key in want if key[0] == PFC_TO_PG]  # no map without a binding
    # Written and released: the switch is what it was.
    running = apply_plan(config, plan_switch("leaf1", want, config, baseline=config))
    assert "pfc_to_pg_map" not in running[("PORT_QOS_MAP", PORTS[0])]
    released = apply_plan(running, plan_switch("leaf1", {}, running, want, baseline=config))
    assert released == config


def test_the_operators_binding_is_merged_into_on_any_platform() -> None:
    # Bound by the operator's own config: the ASIC takes it, whatever sluice knows of it.
    config = with_pfc_to_pg(operator())
    config[METADATA] = facts("x86_64-newvendor_box-r0")[METADATA]
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    assert all(want[("PORT_QOS_MAP", p)]["pfc_to_pg_map"] == "SLUICE_AZURE" for p in PORTS)
