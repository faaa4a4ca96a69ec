"""A lossless class on a switch with the operator's own lossless config (SONiC's stock
Trident2 QoS: PFC on priorities 3 and 4, ``pfcwd start_default``'s watchdog on every port):
the operator's priorities are kept, the intent's new ones added beside them, and a class on
one of the operator's priorities is refused until it takes it over (docs/lossless.md,
"Brownfield")."""

from __future__ import annotations

from collections.abc import Sequence

from controller.errors import FieldProblem
from controller.intent.models import (
    EcnMode,
    Fabric,
    Lossless,
    LosslessPlatform,
    PfcWatchdog,
    ServiceClass,
)
from controller.sonic.coexist import (
    coexist,
    effective,
    lossless_claim,
    lossless_problems,
    sluice_leftovers,
)
from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.model import SwitchConfig
from tests.unit.sonic import intents as t
from tests.unit.sonic.test_coexist import PORTS, td2

# Spectrum-2's figures (docs/lossless.md); the stock watchdog of ``pfcwd start_default``.
PLATFORM = LosslessPlatform(cell_bytes=144, pipeline_latency_bytes=18432, mac_phy_delay_bytes=819.2)
STOCK_WATCHDOG = {"action": "drop", "detection_time": "200", "restoration_time": "200"}


def operator(*, groups: bool = False, model: str = "dynamic") -> SwitchConfig:
    """td2 with a watchdog on every port; ``groups``: with the lossless priority groups in
    CONFIG_DB too (``BUFFER_PG|<port>|3-4``, as the static buffer model writes them).
    ``model``: the switch's buffer model; in the dynamic one sluice writes its own lossless
    groups (in the traditional one, with td2's ``CABLE_LENGTH``, buffermgrd writes them:
    tests/unit/sonic/test_buffermgrd.py)."""
    config = td2()
    config[("DEVICE_METADATA", "localhost")] = {"buffer_model": model}
    for port in PORTS:
        config[("PFC_WD", port)] = dict(STOCK_WATCHDOG)
        if groups:
            config[("BUFFER_PG", f"{port}|3-4")] = {"profile": "pg_lossless_10000_5m_profile"}
    return config


def rdma(queue: int, priority: int, dscp: int, *, take_over: bool = False) -> ServiceClass:
    lossless = Lossless(pfc_priority=priority, take_over=take_over)
    return t.dwrr("rdma", queue, 1, EcnMode.STANDARD, (dscp,)).model_copy(
        update={"lossless": lossless}
    )


def desired(
    rdma_class: ServiceClass, watchdog: PfcWatchdog | None = None
) -> tuple[SwitchConfig, frozenset[int], frozenset[int]]:
    """sluice's entries for the voice class and ``rdma_class``, and the intent's claim."""
    platform = PLATFORM if watchdog is None else PLATFORM.model_copy(update={"watchdog": watchdog})
    fabric: Fabric = t.FABRIC.model_copy(update={"lossless": platform})
    switch = t.switch(ports=tuple((p, 10) for p in PORTS))
    intent = t.intent(t.VOICE, rdma_class, switches=(switch,), fabric=fabric)
    claim = lossless_claim(intent)
    return compile_switch(intent, intent.switches[0]), claim.taken_over, claim.claimed


def problems_of(
    rdma_class: ServiceClass, config: SwitchConfig, watchdog: PfcWatchdog | None = None
) -> list[FieldProblem]:
    own, declared, claimed = desired(rdma_class, watchdog)
    return lossless_problems(effective(own, config), config, declared=declared, claimed=claimed)


def paths(problems: Sequence[FieldProblem]) -> set[str]:
    return {p.path for p in problems}


def test_a_new_lossless_priority_is_added_beside_the_operators() -> None:
    config = operator()
    own, declared, claimed = desired(rdma(2, 2, 26))
    found = coexist(own, config)
    want = found.config
    for port in PORTS:
        qos = want[("PORT_QOS_MAP", port)]
        assert qos["pfc_enable"] == "2,3,4"
        assert qos["pfcwd_sw_enable"] == "2,3,4"
        assert (qos["tc_to_pg_map"], qos["pfc_to_queue_map"]) == ("SLUICE_AZURE", "SLUICE_AZURE")
        assert want[("BUFFER_PG", f"{port}|2")] == {
            "profile": "SLUICE_pg_lossless_10000_5m_mtu1500_profile"
        }
    # The operator's TC 3 and 4 keep their priority groups, priorities 3 and 4 their queues.
    tc_to_pg = want[("TC_TO_PRIORITY_GROUP_MAP", "SLUICE_AZURE")]
    assert (tc_to_pg["2"], tc_to_pg["3"], tc_to_pg["4"], tc_to_pg["1"]) == ("2", "3", "4", "0")
    pfc_queue = want[("MAP_PFC_PRIORITY_TO_QUEUE", "SLUICE_AZURE")]
    assert (pfc_queue["2"], pfc_queue["3"], pfc_queue["4"]) == ("2", "3", "4")
    # td2 binds no PFC priority -> priority group map (SAI's "no map" for 3 and 4): sluice's,
    # listing priority 2 alone, would leave theirs unlisted, so none is bound or written.
    assert all("pfc_to_pg_map" not in want[("PORT_QOS_MAP", port)] for port in PORTS)
    assert not [k for k in want if k[0] == "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]
    assert ("TC_TO_PRIORITY_GROUP_MAP", "SLUICE") not in want
    assert "3" in found.inherited[("TC_TO_PRIORITY_GROUP_MAP", "SLUICE_AZURE")]
    assert lossless_problems(want, config, declared=declared, claimed=claimed) == []


def test_a_new_lossless_queue_gets_the_static_egress_profile_and_theirs_keep_their_own() -> None:
    config = operator()
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    (egress,) = [k for t, k in want if t == "BUFFER_PROFILE" and k.startswith("SLUICE_egress")]
    assert "static_th" in want[("BUFFER_PROFILE", egress)]
    for port in PORTS:
        assert want[("BUFFER_QUEUE", f"{port}|2")] == {"profile": egress}
        # The operator's lossless queues 3-4 are not rebound: no entry of sluice's covers them.
        assert ("BUFFER_QUEUE", f"{port}|3") not in want
        assert ("BUFFER_QUEUE", f"{port}|4") not in want


def test_a_taken_over_queue_keeps_the_operators_egress_binding() -> None:
    # Priority 3 taken over: sluice sets its scheduler and DCQCN marking, but the queue stays
    # on the operator's egress_lossless_profile (BUFFER_QUEUE|<port>|3-4), and sluice's
    # egress profile, which no queue would use, is not written.
    config = operator()
    own, declared, claimed = desired(rdma(3, 3, 3, take_over=True))
    assert own[("BUFFER_QUEUE", "Ethernet0|3")]["profile"].startswith("SLUICE_egress_lossless_")
    want = effective(own, config)
    assert ("BUFFER_QUEUE", "Ethernet0|3") not in want
    assert not [k for t, k in want if t == "BUFFER_PROFILE" and k.startswith("SLUICE_egress")]
    assert want[("QUEUE", "Ethernet0|3")]["wred_profile"] == "SLUICE_DCQCN_Q3"
    assert lossless_problems(want, config, declared=declared, claimed=claimed) == []
    running = apply_plan(config, plan_switch("leaf1", want, config, baseline=config))
    assert running[("BUFFER_QUEUE", "Ethernet0|3-4")] == {"profile": "egress_lossless_profile"}


def test_without_the_operators_watchdog_the_new_priority_is_watched_alone() -> None:
    config = td2()  # PFC on 3 and 4, pfcwd_sw_enable 3,4, but no PFC_WD entry
    del config[("PORT_QOS_MAP", "Ethernet0")]["pfcwd_sw_enable"]
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    assert want[("PORT_QOS_MAP", "Ethernet0")]["pfcwd_sw_enable"] == "2"
    assert want[("PORT_QOS_MAP", "Ethernet4")]["pfcwd_sw_enable"] == "2,3,4"
    assert want[("PFC_WD", "Ethernet0")] == STOCK_WATCHDOG


def test_another_watchdog_on_a_port_the_operator_watches_is_refused() -> None:
    slower = PfcWatchdog(detection_time_ms=400)
    problems = problems_of(rdma(2, 2, 26), operator(), watchdog=slower)
    assert paths(problems) == {f"PFC_WD|{port}.detection_time" for port in PORTS}
    assert "the port's watchdog is the operator's (detection_time '200')" in problems[0].reason
    assert "the intent would make it '400'" in problems[0].reason


def test_a_class_on_the_operators_lossless_priority_is_refused_until_it_takes_it_over() -> None:
    # Queue 3 on priority 3: the operator's AZURE_LOSSLESS queue and scheduler.1.
    problems = problems_of(rdma(3, 3, 3), operator())
    assert {
        "QUEUE|Ethernet0|3.scheduler",
        "QUEUE|Ethernet0|3.wred_profile",
        "BUFFER_PG|Ethernet0|3",
        "PORT_QOS_MAP|Ethernet0.pfc_enable",
    } <= paths(problems)
    hint = next(p for p in problems if p.path == "PORT_QOS_MAP|Ethernet0.pfc_enable")
    assert "PFC priority 3 lossless" in hint.reason
    assert "lossless.take_over: true" in hint.reason
    assert problems_of(rdma(3, 3, 3, take_over=True), operator()) == []


def test_taking_over_one_priority_leaves_the_other_alone() -> None:
    # Priority 4 stays the operator's: its queue, group and PFC are untouched.
    own, declared, _ = desired(rdma(3, 3, 3, take_over=True))
    want = effective(own, operator())
    assert ("QUEUE", "Ethernet0|4") not in want
    assert ("BUFFER_PG", "Ethernet0|4") not in want
    assert want[("PORT_QOS_MAP", "Ethernet0")]["pfc_enable"] == "3,4"
    assert set(declared) == {3}


def test_a_taken_over_priority_in_the_operators_group_range_is_refused() -> None:
    # sluice never splits the operator's BUFFER_PG|<port>|3-4: a taken-over priority 3 would
    # overlap it (and the group still holds priority 4).
    problems = problems_of(rdma(3, 3, 3, take_over=True), operator(groups=True))
    assert paths(problems) == {f"BUFFER_PG|{port}|3" for port in PORTS}
    first = next(p for p in problems if p.path == "BUFFER_PG|Ethernet0|3")
    assert "overlaps the operator's BUFFER_PG|Ethernet0|3-4" in first.reason


def test_moving_the_operators_tc_to_another_priority_group_is_refused() -> None:
    # Queue 4 (the operator's lossless TC 4) on a new priority 2: TC 4 -> PG 2.
    problems = problems_of(rdma(4, 2, 26), operator())
    assert "TC_TO_PRIORITY_GROUP_MAP|SLUICE_AZURE.4" in paths(problems)
    refused = next(p for p in problems if p.path == "TC_TO_PRIORITY_GROUP_MAP|SLUICE_AZURE.4")
    assert "lossless priority 4's priority group is 4; the intent would make it 2" in (
        refused.reason
    )


def test_adopt_then_release_gives_the_operators_lossless_config_back() -> None:
    config = operator()
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    running = apply_plan(config, plan_switch("leaf1", want, config, baseline=config))
    assert running[("PORT_QOS_MAP", "Ethernet0")]["pfc_enable"] == "2,3,4"
    assert running[("PFC_WD", "Ethernet0")] == STOCK_WATCHDOG
    assert running[("BUFFER_PG", "Ethernet0|2")]["profile"].startswith("SLUICE_pg_lossless")
    assert plan_switch("leaf1", want, running, want, baseline=config).ops == ()
    released = apply_plan(running, plan_switch("leaf1", {}, running, want, baseline=config))
    assert released == config
    assert sluice_leftovers(released) == []


def with_pfc_to_pg(config: SwitchConfig) -> SwitchConfig:
    """The operator's own PFC priority -> priority group map on every port (AZURE: 3 -> 3,
    4 -> 4, as SONiC's stock qos_config.j2 writes it where the platform binds one)."""
    config[("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "AZURE")] = {"3": "3", "4": "4"}
    for port in PORTS:
        config[("PORT_QOS_MAP", port)]["pfc_to_pg_map"] = "AZURE"
    return config


def test_the_operators_pfc_to_pg_map_is_merged_and_given_back_on_release() -> None:
    config = with_pfc_to_pg(operator())
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    assert want[("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "SLUICE_AZURE")] == {
        "2": "2",
        "3": "3",
        "4": "4",
    }
    assert all(want[("PORT_QOS_MAP", p)]["pfc_to_pg_map"] == "SLUICE_AZURE" for p in PORTS)
    assert ("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "SLUICE") not in want  # bound by no port
    assert lossless_problems(want, config) == []
    running = apply_plan(config, plan_switch("leaf1", want, config, baseline=config))
    assert running[("PORT_QOS_MAP", "Ethernet0")]["pfc_to_pg_map"] == "SLUICE_AZURE"
    released = apply_plan(running, plan_switch("leaf1", {}, running, want, baseline=config))
    assert released == config
    assert released[("PORT_QOS_MAP", "Ethernet0")]["pfc_to_pg_map"] == "AZURE"
    assert sluice_leftovers(released) == []


def test_moving_the_group_that_sends_the_operators_pauses_is_refused() -> None:
    config = with_pfc_to_pg(operator())
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    want[("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "SLUICE_AZURE")]["4"] = "2"
    problems = lossless_problems(want, config)
    path = "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|SLUICE_AZURE.4"
    assert path in paths(problems)
    refused = next(p for p in problems if p.path == path)
    assert "lossless priority 4's pausing priority group is 4; the intent would make it 2" in (
        refused.reason
    )


def test_a_port_without_the_operators_lossless_priorities_gets_sluices_map() -> None:
    # Ethernet0 runs no PFC of the operator's (its pfc_enable gone): sluice binds its own map.
    config = operator()
    del config[("PORT_QOS_MAP", "Ethernet0")]["pfc_enable"]
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    assert want[("PORT_QOS_MAP", "Ethernet0")]["pfc_to_pg_map"] == "SLUICE"
    assert want[("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "SLUICE")] == {"2": "2"}
    assert "pfc_to_pg_map" not in want[("PORT_QOS_MAP", PORTS[1])]
