"""What SONiC's config updater does with a plan: the ops that take a port down, the changes it
sorts a Set into, how long that takes (controller/sonic/gcu.py)."""

from __future__ import annotations

import pytest

from controller.intent.loader import parse_intent
from controller.sonic.compile import compile_switch
from controller.sonic.gcu import (
    PORT_CRITICAL_TABLES,
    GcuPace,
    critical_port,
    flapped_ports,
    port_flaps,
    sorted_changes,
    watchdog_not_started,
)
from controller.sonic.model import Op, Plan, SwitchConfig
from tests.unit.intent.test_lossless_intent import lossless_data
from vsonic import gcu as vsonic_gcu

WRED = {"green_max_threshold": "125000", "ecn": "ecn_all"}


def queue_repoint(port: str, queue: int, old: str, new: str) -> Op:
    return Op(
        "change", "QUEUE", f"{port}|{queue}", {"wred_profile": new}, {"wred_profile": old}, False
    )


def test_the_port_critical_tables_are_gcus() -> None:
    # sonic-utilities generic_config_updater/patch_sorter.py RequiredValueIdentifier.
    assert {
        "QUEUE",
        "BUFFER_QUEUE",
        "BUFFER_PG",
        "PORT_QOS_MAP",
        "BUFFER_PORT_INGRESS_PROFILE_LIST",
        "BUFFER_PORT_EGRESS_PROFILE_LIST",
    } == PORT_CRITICAL_TABLES
    # The virtual switch applies the same rule (vsonic/gcu.py), modelled on its own.
    assert vsonic_gcu.PORT_CRITICAL_TABLES == PORT_CRITICAL_TABLES
    assert critical_port("QUEUE", "Ethernet48|3") == "Ethernet48"
    assert critical_port("PORT_QOS_MAP", "Ethernet4") == "Ethernet4"
    assert critical_port("BUFFER_PG", "Ethernet8|3-4") == "Ethernet8"
    for table in ("WRED_PROFILE", "SCHEDULER", "BUFFER_PROFILE", "DSCP_TO_TC_MAP", "PORT"):
        assert critical_port(table, "Ethernet0") is None


def test_each_port_critical_op_is_named_with_its_port_and_reason() -> None:
    ops = (
        Op("add", "WRED_PROFILE", "SLUICE_WRED_25G_Q6", WRED, {}),
        queue_repoint("Ethernet0", 6, "SLUICE_WRED_25G_19c0aa7b", "SLUICE_WRED_25G_Q6"),
        Op("add", "BUFFER_QUEUE", "Ethernet4|6", {"profile": "SLUICE_BUF_25G_x"}, {}, False),
        Op("delete", "PORT_QOS_MAP", "Ethernet0", {}, {"dscp_to_tc_map": "SLUICE"}, False),
        Op("change", "SCHEDULER", "SLUICE_SCHED_3", {"weight": "60"}, {"weight": "50"}),
    )
    flaps = port_flaps(ops)
    assert [(f.port, f.table, f.key) for f in flaps] == [
        ("Ethernet0", "QUEUE", "Ethernet0|6"),
        ("Ethernet4", "BUFFER_QUEUE", "Ethernet4|6"),
        ("Ethernet0", "PORT_QOS_MAP", "Ethernet0"),
    ]
    assert flaps[0].reason == (
        "QUEUE|Ethernet0|6 wred_profile: SLUICE_WRED_25G_19c0aa7b -> SLUICE_WRED_25G_Q6"
    )
    assert flaps[1].reason == "BUFFER_QUEUE|Ethernet4|6 added"
    assert flaps[2].reason == "PORT_QOS_MAP|Ethernet0 loses sluice's fields"
    assert flapped_ports(ops) == ("Ethernet0", "Ethernet4")
    plan = Plan("leaf1", ops).as_dict()
    assert plan["ports_down"] == ["Ethernet0", "Ethernet4"]
    assert plan["port_flaps"][0] == {  # type: ignore[index]
        "port": "Ethernet0",
        "table": "QUEUE",
        "key": "Ethernet0|6",
        "reason": flaps[0].reason,
    }
    # Profile and scheduler changes alone take no port down.
    assert port_flaps((ops[0], ops[4])) == ()


def test_sorted_changes_follow_the_measured_gcu_runs() -> None:
    # One-field WRED change: one change, no port touched.
    one = Op("change", "WRED_PROFILE", "SLUICE_Q_Ethernet0_3", {"green_max_threshold": "1"}, WRED)
    assert sorted_changes([one]) == 1
    # A QUEUE add: admin down, QUEUE, admin up.
    add = Op("add", "QUEUE", "Ethernet0|3", {"scheduler": "SLUICE_SCHED_3"}, {}, False)
    assert sorted_changes([add]) == 3
    # Eight WRED profiles changed in place (an MQ-ECN class's start values): one grouped change.
    moved = {"green_max_threshold": "1"}
    starts = [
        Op("change", "WRED_PROFILE", f"SLUICE_Q_Ethernet{p}_{q}", moved, WRED)
        for p in (0, 4, 48, 52)
        for q in (2, 3)
    ]
    assert sorted_changes(starts) == 1
    # The content-named lambda change: a new profile, 8 repoints over 4 ports, the old one
    # deleted: 1 + 8 + 4 x 2 + 1.
    repoints = [
        queue_repoint(f"Ethernet{p}", q, "SLUICE_WRED_25G_old", "SLUICE_WRED_25G_new")
        for p in (0, 4, 48, 52)
        for q in (5, 6)
    ]
    new = Op("add", "WRED_PROFILE", "SLUICE_WRED_25G_new", WRED, {})
    gone = Op("delete", "WRED_PROFILE", "SLUICE_WRED_25G_old", {}, WRED)
    assert sorted_changes([new, *repoints, gone]) == 18


def test_the_pace_fits_changes_into_a_deadline_on_a_loaded_switch() -> None:
    pace = GcuPace(per_set_s=2.5, per_change_s=1.25, load_margin=2.0)
    assert pace.seconds(58) == pytest.approx(75.0)  # the measured first rollout: 73 s
    assert pace.deadline_for(58) == pytest.approx(150.0)
    assert pace.changes_within(60.0) == 22  # 2 x (2.5 + 1.25 x 22) = 60
    assert pace.deadline_for(pace.changes_within(60.0)) <= 60.0
    assert pace.deadline_for(pace.changes_within(60.0) + 1) > 60.0
    assert pace.changes_within(1.0) == 1  # a single change is never split
    with pytest.raises(ValueError, match="pace"):
        GcuPace(load_margin=0.5)


def _lossless_leaf1(watchdog: dict[str, int] | None = None) -> SwitchConfig:
    data = lossless_data()
    if watchdog is not None:
        data["fabric"]["lossless"]["watchdog"] = watchdog
    intent = parse_intent(data)
    return compile_switch(intent, intent.switches[0])


def test_a_first_watchdog_is_named_with_the_command_that_starts_it() -> None:
    desired = _lossless_leaf1()
    running: SwitchConfig = {("PORT", "Ethernet0"): {"speed": "25000"}}
    problem = watchdog_not_started(desired, running)
    assert problem is not None
    assert problem.path == "PFC_WD"
    assert "`sudo pfcwd interval 200`" in problem.reason
    assert "config pfcwd start_default" in problem.reason
    assert "watchdog on Ethernet0, Ethernet4 waits for it" in problem.reason


def test_the_suggested_poll_interval_is_not_above_the_intents_watchdog_times() -> None:
    # pfcwd refuses an interval above a configured detection or restoration time.
    desired = _lossless_leaf1({"detection_time_ms": 150, "restoration_time_ms": 400})
    problem = watchdog_not_started(desired, {})
    assert problem is not None
    assert "`sudo pfcwd interval 150`" in problem.reason


@pytest.mark.parametrize(
    "running_watchdog",
    [("GLOBAL", {"POLL_INTERVAL": "200"}), ("Ethernet8", {"action": "drop"})],
    ids=["pfcwd interval", "another port's watchdog"],
)
def test_a_switch_with_any_watchdog_entry_takes_the_intents(
    running_watchdog: tuple[str, dict[str, str]],
) -> None:
    key, fields = running_watchdog
    assert watchdog_not_started(_lossless_leaf1(), {("PFC_WD", key): fields}) is None


def test_an_intent_without_a_watchdog_needs_none() -> None:
    lossy = {k: v for k, v in _lossless_leaf1().items() if k[0] != "PFC_WD"}
    assert watchdog_not_started(lossy, {}) is None
