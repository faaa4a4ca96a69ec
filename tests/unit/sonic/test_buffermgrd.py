"""A lossless class on a switch in SONiC's traditional buffer model, where buffermgrd writes the
lossless priority groups itself (sonic-swss cfgmgr/buffermgr.cpp): sluice writes PFC, maps and
watchdog there and no group of its own, and what buffermgrd wrote because of sluice's priority
goes with it on release (docs/lossless.md, "SONiC's traditional buffer manager")."""

from __future__ import annotations

import pytest

from controller.errors import (
    BuffermgrdHeadroomDoesNotFit,
    BuffermgrdKmaxAboveXoff,
    HeadroomDoesNotFit,
    KmaxAboveXoff,
)
from controller.intent.capacity import lossless_buffers_fit
from controller.intent.models import EcnMode, Fabric, Intent, Lossless
from controller.services.coexistence import (
    KnownSwitch,
    buffermgrd_invariants,
    buffermgrd_warnings,
)
from controller.sonic.buffermgrd import (
    LeftToBuffermgrd,
    buffer_model,
    buffermgrd_leftovers,
    buffermgrd_ports,
    check_left_headroom,
    headroom_notes,
    lookup_headroom,
)
from controller.sonic.coexist import effective, lossless_problems, operator_baseline
from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.discovery import SwitchRead, discover
from controller.sonic.model import Fields, SwitchConfig
from controller.sonic.tables.buffer_pg import pg_ranges
from tests.unit.sonic import intents as t
from tests.unit.sonic.test_coexist import PORTS
from tests.unit.sonic.test_coexist_lossless import (
    PLATFORM,
    STOCK_WATCHDOG,
    desired,
    operator,
    rdma,
)

LOOKUP = "pg_lossless_10000_5m_profile"  # td2's ports: 10 Gb/s, CABLE_LENGTH 5 m
# The row SONiC's vs image (Force10-S6000, Trident2) has for 10 Gb/s, 5 m in its
# pg_profile_lookup.ini (speed cable size xon xoff threshold xon_offset:
# 10000 5m 56368 18432 55120 -3 2496), as buffermgrd writes it to CONFIG_DB.
S6000_LOOKUP: Fields = {
    "pool": "ingress_lossless_pool",
    "xon": "18432",
    "xoff": "55120",
    "size": "56368",
    "dynamic_th": "-3",
}


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


# ---------------------------------------------------------------------------------------------
# the lossless invariants with buffermgrd's figures (docs/lossless.md, "The invariants")


def lossless_intent(kmax_bytes: int | None = None) -> Intent:
    """``desired``'s intent: voice and rdma (priority 2, DCQCN's Kmax 200 000 B unless
    given) on td2's two 10 Gb/s ports, 1 000 000 B of buffer each (t.FABRIC), Spectrum-2's
    headroom figures, dynamic_th 0."""
    lossless = Lossless(
        pfc_priority=2, **({} if kmax_bytes is None else {"kmax_bytes": kmax_bytes})
    )
    rdma_class = t.dwrr("rdma", 2, 1, EcnMode.STANDARD, (26,)).model_copy(
        update={"lossless": lossless}
    )
    fabric: Fabric = t.FABRIC.model_copy(update={"lossless": PLATFORM})
    switch = t.switch(ports=tuple((p, 10) for p in PORTS))
    return t.intent(t.VOICE, rdma_class, switches=(switch,), fabric=fabric)


def notes_for(intent: Intent, profile: Fields | None) -> list[LeftToBuffermgrd]:
    """The plan's notes for td2 in the traditional model, its CONFIG_DB holding ``profile``
    as buffermgrd's lookup-table profile (None: not yet)."""
    config = operator(groups=True, model="traditional")
    if profile is not None:
        config[("BUFFER_PROFILE", LOOKUP)] = dict(profile)
    own = compile_switch(intent, intent.switches[0])
    return headroom_notes(own, effective(own, config), config, config)


def test_the_invariants_read_buffermgrds_profile() -> None:
    theirs = lookup_headroom(S6000_LOOKUP)
    assert theirs is not None
    room = theirs.headroom
    assert (room.xon_bytes, room.xoff_bytes, room.size_bytes, theirs.dynamic_th) == (
        18432,
        55120,
        56368,
        -3,
    )
    assert lookup_headroom(None) is None
    for unreadable in ({"size": ""}, {"dynamic_th": "alpha"}, {"dynamic_th": "9"}, {"xoff": "-1"}):
        assert lookup_headroom(S6000_LOOKUP | unreadable) is None, unreadable
    without = {k: v for k, v in S6000_LOOKUP.items() if k != "dynamic_th"}
    assert lookup_headroom(without) is None


def test_kmax_above_buffermgrds_xoff_point_is_refused_naming_its_profile() -> None:
    # 1 000 000 B buffer, one lossless priority, buffermgrd's size 56 368 B: shared pool
    # 943 632 B; dynamic_th -3 (alpha 1/8): XOFF point 1/8 / (1 + 1/8) = 1/9 of it,
    # 104 848 B, below DCQCN's Kmax 200 000 B. The intent's own figures (Spectrum-2,
    # dynamic_th 0) put it near half the buffer: the intent alone passes.
    intent = lossless_intent()
    assert lossless_buffers_fit(intent) == []
    notes = notes_for(intent, S6000_LOOKUP)
    assert "the lossless invariants are checked with its figures" in notes[0].note()
    with pytest.raises(BuffermgrdKmaxAboveXoff) as refused:
        check_left_headroom(intent, "leaf1", notes)
    error = refused.value
    assert isinstance(error, KmaxAboveXoff)  # the API's 422, the CLI's exit 3, as the intent's
    assert (error.port, error.priority, error.profile) == ("leaf1 Ethernet0", 2, LOOKUP)
    assert (error.kmax_bytes, error.xoff_point_bytes) == (200_000, 104_848)
    (problem,) = error.problems
    assert problem.path == "service_classes[1].lossless.kmax_bytes"
    assert problem.reason.startswith(
        "BuffermgrdKmaxAboveXoff: leaf1 Ethernet0 priority 2: Kmax 200000 B is not below the "
        f"XOFF point 104848 B that buffermgrd's {LOOKUP} gives the priority group"
    )
    assert "size 56368 B, xoff 55120 B, xon 18432 B, dynamic_th -3" in problem.reason


def test_the_same_intent_passes_on_a_switch_whose_profile_is_roomier() -> None:
    # The same row with dynamic_th 0 (alpha 1): XOFF point 943 632 / 2 = 471 816 B.
    roomier = S6000_LOOKUP | {"dynamic_th": "0"}
    check_left_headroom(lossless_intent(), "leaf1", notes_for(lossless_intent(), roomier))
    # Its worked bound: Kmax one byte below the point passes, at the point it is refused.
    below = lossless_intent(kmax_bytes=471_815)
    assert lossless_buffers_fit(below) == []
    check_left_headroom(below, "leaf1", notes_for(below, roomier))
    at = lossless_intent(kmax_bytes=471_816)
    assert lossless_buffers_fit(at) == []  # the intent's own point is higher still
    with pytest.raises(BuffermgrdKmaxAboveXoff) as refused:
        check_left_headroom(at, "leaf1", notes_for(at, roomier))
    assert refused.value.xoff_point_bytes == 471_816


def test_without_the_profile_the_intents_figures_stand_and_the_note_says_so() -> None:
    intent = lossless_intent()
    notes = notes_for(intent, None)
    assert [n.profile_fields for n in notes] == [None, None]
    check_left_headroom(intent, "leaf1", notes)  # validation checked the intent's figures
    assert (
        notes[0]
        .note()
        .endswith(
            "the switch has no such profile yet: its figures are the switch's own, and the "
            "lossless invariants are checked with the intent's"
        )
    )
    # Unreadable figures are not the switch's known ones either.
    unreadable = notes_for(intent, S6000_LOOKUP | {"dynamic_th": "-9"})
    check_left_headroom(intent, "leaf1", unreadable)
    assert "cannot be read: the lossless invariants are checked with the intent's figures" in (
        unreadable[0].note()
    )
    # Another switch's notes, or a switch the intent lacks: nothing to check there.
    check_left_headroom(intent, "leaf2", notes_for(intent, S6000_LOOKUP))


def test_buffermgrds_headroom_that_leaves_no_shared_pool_is_refused() -> None:
    intent = lossless_intent()
    huge = S6000_LOOKUP | {"xoff": "990000", "size": "1000000"}
    with pytest.raises(BuffermgrdHeadroomDoesNotFit) as refused:
        check_left_headroom(intent, "leaf1", notes_for(intent, huge))
    error = refused.value
    assert isinstance(error, HeadroomDoesNotFit)
    assert (error.port, error.priority, error.profile) == ("leaf1 Ethernet0", 2, LOOKUP)
    assert (error.headroom_bytes, error.buffer_bytes) == (1_000_000, 1_000_000)
    (problem,) = error.problems
    assert problem.path == "switches[0].ports[0].buffer_bytes"
    assert f"buffermgrd's {LOOKUP}" in problem.reason
    assert "size 1000000 B per group" in problem.reason


def test_plan_and_rollout_start_refuse_from_the_switchs_discovery() -> None:
    intent = lossless_intent()
    own = compile_switch(intent, intent.switches[0])

    def known_with(config: SwitchConfig) -> dict[str, KnownSwitch]:
        found = discover("leaf1", SwitchRead(config, {}, {}, 3))
        return {"leaf1": KnownSwitch(operator_baseline(found.config()), False, found)}

    config = operator(groups=True, model="traditional")
    config[("BUFFER_PROFILE", LOOKUP)] = dict(S6000_LOOKUP)
    with pytest.raises(BuffermgrdKmaxAboveXoff):
        buffermgrd_invariants(intent, {"leaf1": own}, known_with(config), {})
    # The profile buffermgrd made after the discovery, in what the switch was last read
    # running: judged by that.
    bare = operator(groups=True, model="traditional")
    buffermgrd_invariants(intent, {"leaf1": own}, known_with(bare), {})
    seen = {"leaf1": {("BUFFER_PROFILE", LOOKUP): dict(S6000_LOOKUP)}}
    with pytest.raises(BuffermgrdKmaxAboveXoff):
        buffermgrd_invariants(intent, {"leaf1": own}, known_with(bare), seen)
    # The dynamic model: sluice's own groups, the intent's figures.
    dynamic = operator(groups=True, model="dynamic")
    dynamic[("BUFFER_PROFILE", LOOKUP)] = dict(S6000_LOOKUP)
    buffermgrd_invariants(intent, {"leaf1": own}, known_with(dynamic), {})
