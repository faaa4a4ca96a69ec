"""A lossless class on a switch in SONiC's traditional buffer model, where buffermgrd writes the
lossless priority groups itself (sonic-swss cfgmgr/buffermgr.cpp): sluice writes PFC, maps and
watchdog there and no group of its own, and what buffermgrd wrote because of sluice's priority
goes with it on release (docs/lossless.md, "SONiC's traditional buffer manager")."""

from __future__ import annotations

from controller.services.coexistence import KnownSwitch, buffermgrd_warnings
from controller.sonic.buffermgrd import (
    buffer_model,
    buffermgrd_leftovers,
    buffermgrd_ports,
    headroom_notes,
)
from controller.sonic.coexist import effective, lossless_problems, operator_baseline
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.discovery import SwitchRead, discover
from controller.sonic.model import SwitchConfig
from controller.sonic.tables.buffer_pg import pg_ranges
from tests.unit.sonic.test_coexist import PORTS
from tests.unit.sonic.test_coexist_lossless import STOCK_WATCHDOG, desired, operator, rdma

LOOKUP = "pg_lossless_10000_5m_profile"  # td2's ports: 10 Gb/s, CABLE_LENGTH 5 m


def buffermgrd_model(config: SwitchConfig) -> SwitchConfig:
    """A model of what buffermgrd (sonic-swss cfgmgr/buffermgr.cpp ``doSpeedUpdateTask``, the
    traditional model) writes once a port's ``pfc_enable`` changes: ``BUFFER_PG|<port>|<the
    priorities as ranges>`` on its lookup-table profile, beside whatever groups are there (it
    deletes none). Not SONiC's code: the real one runs in tests/realsonic."""
    written = dict(config)
    for (table, port), fields in config.items():
        if table != "PORT_QOS_MAP" or port not in buffermgrd_ports(config):
            continue
        speed = config[("PORT", port)]["speed"]
        cable = buffermgrd_ports(config)[port]
        priorities = [int(p) for p in fields.get("pfc_enable", "").split(",") if p]
        for groups in pg_ranges(priorities):
            profile = f"pg_lossless_{speed}_{cable}_profile"
            written[("BUFFER_PG", f"{port}|{groups}")] = {"profile": profile}
    return written


def test_the_buffer_model_is_dynamic_only_when_the_switch_says_so() -> None:
    assert buffer_model(None) == "traditional"
    assert buffer_model({"hostname": "leaf1"}) == "traditional"
    assert buffer_model({"buffer_model": "traditional"}) == "traditional"
    assert buffer_model({"buffer_model": "dynamic"}) == "dynamic"
    config = operator_baseline(operator(model="traditional")) | {
        ("DEVICE_METADATA", "localhost"): {"hostname": "leaf1"}
    }
    found = discover("leaf1", SwitchRead(config, {}, {}, 3))
    assert found.buffer_model == "traditional"
    assert found.config()[("DEVICE_METADATA", "localhost")] == {"buffer_model": "traditional"}


def test_buffermgrd_writes_the_groups_of_the_ports_with_a_cable_in_the_traditional_model() -> None:
    cables = {("CABLE_LENGTH", "AZURE"): {"Ethernet0": "5m", "Ethernet4": "0m", "Ethernet8": "40m"}}
    assert buffermgrd_ports(cables) == {"Ethernet0": "5m", "Ethernet8": "40m"}
    traditional = cables | {("DEVICE_METADATA", "localhost"): {"buffer_model": "traditional"}}
    assert buffermgrd_ports(traditional) == {"Ethernet0": "5m", "Ethernet8": "40m"}
    dynamic = cables | {("DEVICE_METADATA", "localhost"): {"buffer_model": "dynamic"}}
    assert buffermgrd_ports(dynamic) == {}
    assert buffermgrd_ports({}) == {}


def test_sluice_writes_pfc_maps_and_watchdog_and_leaves_the_groups_to_buffermgrd() -> None:
    config = operator(groups=True, model="traditional")
    own, declared, claimed = desired(rdma(2, 2, 26))
    assert ("BUFFER_PG", "Ethernet0|2") in own  # what the compiler makes for any switch
    want = effective(own, config)
    for port in PORTS:
        qos = want[("PORT_QOS_MAP", port)]
        assert (qos["pfc_enable"], qos["pfcwd_sw_enable"]) == ("2,3,4", "2,3,4")
        assert (qos["tc_to_pg_map"], qos["pfc_to_queue_map"]) == ("SLUICE_AZURE", "SLUICE_AZURE")
        assert ("BUFFER_PG", f"{port}|2") not in want
    assert want[("TC_TO_PRIORITY_GROUP_MAP", "SLUICE_AZURE")]["2"] == "2"
    assert [k for t, k in want if t == "BUFFER_PG"] == []
    assert [k for t, k in want if t == "BUFFER_PROFILE" and "pg_lossless" in k] == []
    assert ("WRED_PROFILE", "SLUICE_DCQCN_Q2") in want
    assert lossless_problems(want, config, declared=declared, claimed=claimed) == []
    # The dynamic model, or a port whose cable is 0 m: sluice's own group, as before.
    dynamic = effective(own, operator(groups=True, model="dynamic"))
    assert dynamic[("BUFFER_PG", "Ethernet0|2")] == own[("BUFFER_PG", "Ethernet0|2")]
    short = config | {("CABLE_LENGTH", "AZURE"): {"Ethernet0": "5m", "Ethernet4": "0m"}}
    kept = effective(own, short)
    assert ("BUFFER_PG", "Ethernet0|2") not in kept
    assert kept[("BUFFER_PG", "Ethernet4|2")] == own[("BUFFER_PG", "Ethernet4|2")]
    assert ("BUFFER_PROFILE", own[("BUFFER_PG", "Ethernet4|2")]["profile"]) in kept


def test_the_plan_says_whose_headroom_it_is_and_where_the_figures_differ() -> None:
    config = operator(groups=True, model="traditional")
    own, _, _ = desired(rdma(2, 2, 26))
    profile = {"pool": "ingress_lossless_pool", "xon": "18432", "xoff": "30720", "size": "49152"}
    (first, second) = headroom_notes(own, effective(own, config), config, config)
    assert (first.port, first.keys, first.profile) == ("Ethernet0", ("2-4",), LOOKUP)
    assert (second.port, second.keys, second.profile) == ("Ethernet4", ("2-4",), LOOKUP)
    assert first.profile_fields is None  # the switch has no such profile yet
    assert "its figures are the switch's own" in first.note()
    known = config | {("BUFFER_PROFILE", LOOKUP): profile}
    (note, _) = headroom_notes(own, effective(own, known), known, known)
    intent = own[("BUFFER_PROFILE", own[("BUFFER_PG", "Ethernet0|2")]["profile"])]
    assert note.intent_fields == intent
    assert note.differs() == tuple(n for n in ("xon", "xoff", "size") if intent[n] != profile[n])
    assert note.differs()  # Spectrum-2's formula at 10 Gb/s, MTU 1500 is not td2's table
    assert note.note().startswith(
        f"Ethernet0: headroom is buffermgrd's (BUFFER_PG|Ethernet0|2-4 on {LOOKUP}"
    )
    assert f"xoff 30720 (intent {intent['xoff']})" in note.note()
    same = known | {("BUFFER_PROFILE", LOOKUP): {**profile, **intent}}
    (alike, _) = headroom_notes(own, effective(own, same), same, same)
    assert alike.differs() == ()
    dynamic = operator(groups=True, model="dynamic")
    assert headroom_notes(own, effective(own, dynamic), dynamic, dynamic) == []


def test_release_takes_buffermgrds_group_for_sluices_priority_and_keeps_the_operators() -> None:
    config = operator(groups=True, model="traditional")
    own, _, _ = desired(rdma(2, 2, 26))
    want = effective(own, config)
    running = buffermgrd_model(apply_plan(config, plan_switch("leaf1", want, config)))
    for port in PORTS:
        assert running[("BUFFER_PG", f"{port}|2-4")] == {"profile": LOOKUP}
        assert running[("BUFFER_PG", f"{port}|3-4")] == {"profile": LOOKUP}  # the operator's
        assert running[("PFC_WD", port)] == STOCK_WATCHDOG
    # Converged: buffermgrd's group is the headroom of the port's pfc_enable; nothing to do.
    assert buffermgrd_leftovers(running, config, want, want) == {}
    assert plan_switch("leaf1", want, running, want, baseline=config).ops == ()
    # The operator adds a group of their own meanwhile (priority 6, which sluice never took).
    theirs = {("BUFFER_PG", "Ethernet0|6"): {"profile": LOOKUP}}
    running |= theirs
    gone = buffermgrd_leftovers(running, config, want, {})
    assert gone == {("BUFFER_PG", f"{port}|2-4"): {"profile": LOOKUP} for port in PORTS}
    released = apply_plan(running, plan_switch("leaf1", {}, running, want | gone, baseline=config))
    assert released == config | theirs
    # Writing pfc_enable back makes buffermgrd write nothing new: its groups for 3,4 are there.
    assert buffermgrd_model(released) == released


def test_a_group_left_when_sluice_moves_to_another_priority_goes_too() -> None:
    config = operator(groups=True, model="traditional")
    before = effective(desired(rdma(2, 2, 26))[0], config)
    running = buffermgrd_model(apply_plan(config, plan_switch("leaf1", before, config)))
    after = effective(desired(rdma(6, 6, 26))[0], config)
    assert after[("PORT_QOS_MAP", "Ethernet0")]["pfc_enable"] == "3,4,6"
    gone = buffermgrd_leftovers(running, config, before, after)
    assert set(gone) == {("BUFFER_PG", f"{port}|2-4") for port in PORTS}
    moved = buffermgrd_model(
        apply_plan(running, plan_switch("leaf1", after, running, before | gone, baseline=config))
    )
    assert {k for t, k in moved if t == "BUFFER_PG" and k.startswith("Ethernet0")} == {
        "Ethernet0|0",
        "Ethernet0|3-4",
        "Ethernet0|6",
    }


def test_a_lookup_profile_buffermgrd_made_for_sluice_goes_when_no_group_names_it() -> None:
    # A switch with no lossless priority of its own: buffermgrd creates its profile too.
    profile = "pg_lossless_100000_40m_profile"
    fields = {"pool": "ingress_lossless_pool", "xon": "19456", "xoff": "50176", "size": "69632"}
    baseline: SwitchConfig = {
        ("CABLE_LENGTH", "AZURE"): {"Ethernet0": "40m", "Ethernet4": "40m"},
        ("PORT_QOS_MAP", "Ethernet4"): {"pfc_enable": "3"},
    }
    was = {("PORT_QOS_MAP", p): {"pfc_enable": "3"} for p in ("Ethernet0", "Ethernet4")}
    observed = baseline | {
        ("BUFFER_PG", "Ethernet0|3"): {"profile": profile},
        ("BUFFER_PROFILE", profile): dict(fields),
    }
    gone = buffermgrd_leftovers(observed, baseline, was, {})
    assert gone == {
        ("BUFFER_PG", "Ethernet0|3"): {"profile": profile},
        ("BUFFER_PROFILE", profile): fields,
    }
    # A group the operator's own priority keeps on Ethernet4 still names it: it stays.
    shared = observed | {("BUFFER_PG", "Ethernet4|3"): {"profile": profile}}
    assert buffermgrd_leftovers(shared, baseline, was, {}) == {
        ("BUFFER_PG", "Ethernet0|3"): {"profile": profile}
    }


def test_a_plan_warns_per_port_from_the_switchs_discovery() -> None:
    config = operator(groups=True, model="traditional")
    own, _, _ = desired(rdma(2, 2, 26))
    found = discover("leaf1", SwitchRead(config, {}, {}, 3))
    known = {"leaf1": KnownSwitch(operator_baseline(found.config()), False, found)}
    warned = buffermgrd_warnings({"leaf1": own}, known, {})
    assert [w.path for w in warned] == [f"switches.leaf1.ports.{port}" for port in PORTS]
    assert warned[0].reason.startswith(
        f"Ethernet0: headroom is buffermgrd's (BUFFER_PG|Ethernet0|2-4 on {LOOKUP}"
    )
    dynamic = operator(groups=True, model="dynamic")
    found = discover("leaf1", SwitchRead(dynamic, {}, {}, 3))
    known = {"leaf1": KnownSwitch(operator_baseline(found.config()), False, found)}
    assert buffermgrd_warnings({"leaf1": own}, known, {}) == []
