"""Which ON_CHANGE notifications the drift watcher reports (controller/reconcile/watch.py):
the real table schemas decide which fields the on-switch agent moves."""

from __future__ import annotations

import asyncio

from controller.reconcile.watch import ChangeFilter, Debouncer
from controller.southbound.paths import entry_elems, field_elems, table_elems
from controller.southbound.subscribe import Change

AGENT_PROFILE = "SLUICE_Q_Ethernet0_3"  # thresholds moved by the agent (schema agent_fields)
PROFILE = {
    "ecn": "ecn_all",
    "wred_green_enable": "true",
    "green_min_threshold": "30000",
    "green_max_threshold": "30000",
    "green_drop_probability": "100",
}


def entry(table: str, key: str, fields: dict[str, str] | None) -> Change:
    return Change(entry_elems(table, key), fields)


def test_initial_values_are_remembered_not_reported() -> None:
    seen = ChangeFilter()
    initial = [
        Change(table_elems("WRED_PROFILE"), {AGENT_PROFILE: PROFILE}),
        entry("SCHEDULER", "SLUICE_SCHED_1", {"type": "DWRR", "weight": "5"}),
    ]
    assert seen.changed_tables(initial, initial=True) == set()
    assert len(seen) == 1  # only the entry with agent-moved fields is remembered


def test_a_threshold_the_agent_moved_is_not_drift_but_another_field_of_its_profile_is() -> None:
    seen = ChangeFilter()
    seen.changed_tables([entry("WRED_PROFILE", AGENT_PROFILE, PROFILE)], initial=True)

    moved = {**PROFILE, "green_min_threshold": "45000", "green_max_threshold": "45000"}
    assert (
        seen.changed_tables([entry("WRED_PROFILE", AGENT_PROFILE, moved)], initial=False) == set()
    )

    tampered = {**moved, "ecn": "ecn_none"}
    changed = seen.changed_tables([entry("WRED_PROFILE", AGENT_PROFILE, tampered)], initial=False)
    assert changed == {"WRED_PROFILE"}


def test_any_change_to_an_entry_without_agent_fields_and_any_delete_is_reported() -> None:
    seen = ChangeFilter()
    changes = [
        entry("WRED_PROFILE", "SLUICE_WRED_25G_3", PROFILE),  # thresholds fixed: not the agent's
        entry("QUEUE", "Ethernet0|3", None),
        Change(field_elems("SCHEDULER", "SLUICE_SCHED_1", "weight"), "7"),
    ]
    assert seen.changed_tables(changes, initial=False) == {"WRED_PROFILE", "QUEUE", "SCHEDULER"}


def test_a_table_that_appears_or_disappears_whole_is_reported() -> None:
    seen = ChangeFilter()
    seen.changed_tables([entry("WRED_PROFILE", AGENT_PROFILE, PROFILE)], initial=True)
    assert seen.changed_tables([Change(table_elems("WRED_PROFILE"), None)], initial=False) == {
        "WRED_PROFILE"
    }
    assert len(seen) == 0  # its digests went with it
    appeared = Change(table_elems("SCHEDULER"), {"SLUICE_SCHED_9": {"type": "STRICT"}})
    assert seen.changed_tables([appeared], initial=False) == {"SCHEDULER"}


def test_paths_outside_config_db_are_ignored() -> None:
    seen = ChangeFilter()
    other = Change(("STATE_DB", "localhost", "SLUICE_AGENT_STATE", "global"), {"heartbeat": "1"})
    assert seen.changed_tables([other], initial=False) == set()


def test_a_burst_is_reported_once_per_switch_and_table() -> None:
    reports: list[tuple[str, str | None]] = []

    async def burst() -> None:
        debouncer = Debouncer(0.01, lambda switch, table: reports.append((switch, table)))
        debouncer.add("leaf1", ["QUEUE"])
        debouncer.add("leaf1", ["QUEUE", "SCHEDULER"])
        debouncer.add("leaf2", [None])
        debouncer.add("leaf2", [])
        assert reports == []  # nothing before the delay
        await asyncio.sleep(0.05)

    asyncio.run(burst())
    assert sorted(reports, key=str) == [("leaf1", "QUEUE"), ("leaf1", "SCHEDULER"), ("leaf2", None)]
