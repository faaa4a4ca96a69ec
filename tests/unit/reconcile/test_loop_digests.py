"""The loop's digest path finds what the full path finds: same status, same drift, same
plan written, same running state; only identical answers skip decoding.

The switch here is a fake (``FakeTableAccess``: configs rendered to JSON text the way a
switch answers a table Get): the unit under test is the loop's choice of path, not gNMI.
The real path over gRPC to vsonic runs in tests/integration/test_bench_reconcile_scale_smoke.py
and tests/integration/test_bench_southbound_smoke.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.intent.models import ReconcileMode, Switch
from controller.reconcile.apply import ApplyResult
from controller.reconcile.loop import Target, reconcile_switch
from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan
from controller.sonic.digest import AnswerDigests, table_digests
from controller.sonic.model import Fields, Plan, SwitchConfig
from controller.southbound.gnmi import TableAnswers
from tests.unit.sonic import intents as t
from tests.unit.sonic.test_diff_properties import desired_config
from tests.unit.sonic.test_digest import drifted

SWITCH = t.switch("leaf1", (("Ethernet0", 10), ("Ethernet4", 25)))


@dataclass
class FakeTableAccess:
    """A switch that holds ``config`` and answers each table as JSON text; ``raw`` false:
    it cannot (an access without ``read_answers``, as the loop had before digests)."""

    config: SwitchConfig
    applied: list[Plan] = field(default_factory=list)

    def read(self, switch: Switch, tables: Iterable[str]) -> SwitchConfig:
        wanted = set(tables)
        return {k: dict(v) for k, v in self.config.items() if k[0] in wanted}

    def read_answers(self, switch: Switch, tables: Iterable[str]) -> TableAnswers:
        by_table: dict[str, dict[str, Fields]] = {}
        for (table, key), fields in self.read(switch, tables).items():
            by_table.setdefault(table, {})[key] = fields
        raw = {table: json.dumps(entries).encode() for table, entries in by_table.items()}
        return TableAnswers(switch.name, raw, {})

    def apply(self, switch: Switch, plan: Plan) -> ApplyResult:
        self.applied.append(plan)
        self.config = apply_plan(self.config, plan)
        return ApplyResult(switch.name, "applied_verified", len(plan.ops), len(plan.ops), 1)


@dataclass
class DecodedOnlyAccess:
    """The same switch behind an access with no ``read_answers``: the full path only."""

    inner: FakeTableAccess

    def read(self, switch: Switch, tables: Iterable[str]) -> SwitchConfig:
        return self.inner.read(switch, tables)

    def apply(self, switch: Switch, plan: Plan) -> ApplyResult:
        return self.inner.apply(switch, plan)


def clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


def both_paths(desired: SwitchConfig, observed: SwitchConfig, mode: ReconcileMode) -> None:
    target = Target(SWITCH, 3, desired, table_digests(desired))
    fast_switch, full_switch = FakeTableAccess(observed), FakeTableAccess(observed)
    fast = reconcile_switch(fast_switch, target, mode, clock, answers=AnswerDigests())
    full = reconcile_switch(DecodedOnlyAccess(full_switch), Target(SWITCH, 3, desired), mode, clock)
    assert (fast.status, fast.drift, fast.error) == (full.status, full.drift, full.error)
    assert fast.running == full.running
    assert fast_switch.applied == full_switch.applied


@settings(max_examples=200, deadline=None)
@given(desired=desired_config(), data=st.data())
def test_the_digest_path_finds_and_corrects_what_the_full_path_does(
    desired: SwitchConfig, data: st.DataObject
) -> None:
    observed = data.draw(drifted(desired))
    mode = data.draw(st.sampled_from([ReconcileMode.ALERT, ReconcileMode.CORRECT]))
    both_paths(desired, observed, mode)


def compiled() -> SwitchConfig:
    intent = t.intent(t.VOICE, t.BULK, switches=(SWITCH,))
    return compile_switch(intent, SWITCH)


def test_a_converged_switch_is_decoded_once_then_known_by_its_bytes() -> None:
    desired = compiled()
    access = FakeTableAccess({k: dict(v) for k, v in desired.items()})
    target = Target(SWITCH, 1, desired, table_digests(desired))
    answers = AnswerDigests()
    tables = len(table_digests(desired))
    for _ in range(3):
        run = reconcile_switch(access, target, ReconcileMode.CORRECT, clock, answers=answers)
        assert (run.status, run.drift, run.running) == ("converged", (), desired)
    assert answers.decoded == tables
    assert access.applied == []


def test_one_changed_field_is_drift_and_corrected_on_the_digest_path() -> None:
    desired = compiled()
    observed = {k: dict(v) for k, v in desired.items()}
    observed[("SCHEDULER", "SLUICE_SCHED_1")]["weight"] = "99"
    access = FakeTableAccess(observed)
    target = Target(SWITCH, 1, desired, table_digests(desired))
    answers = AnswerDigests()
    run = reconcile_switch(access, target, ReconcileMode.CORRECT, clock, answers=answers)
    assert run.status == "corrected"
    assert [(d.table, d.key, d.field, d.observed) for d in run.drift] == [
        ("SCHEDULER", "SLUICE_SCHED_1", "weight", "99")
    ]
    assert run.running == desired
    after = reconcile_switch(access, target, ReconcileMode.CORRECT, clock, answers=answers)
    assert after.status == "converged"


def test_a_value_that_is_not_a_string_fails_the_switch_as_the_full_path_does() -> None:
    desired = compiled()
    access = FakeTableAccess(desired)
    broken = access.read_answers(SWITCH, ["SCHEDULER"])
    text = json.loads(broken.raw["SCHEDULER"])
    text["SLUICE_SCHED_1"]["weight"] = 20

    class NumberSwitch(FakeTableAccess):
        def read_answers(self, switch: Switch, tables: Iterable[str]) -> TableAnswers:
            answer = super().read_answers(switch, tables)
            return TableAnswers(
                switch.name, {**answer.raw, "SCHEDULER": json.dumps(text).encode()}, {}
            )

    target = Target(SWITCH, 1, desired, table_digests(desired))
    run = reconcile_switch(
        NumberSwitch(desired), target, ReconcileMode.CORRECT, clock, answers=AnswerDigests()
    )
    assert run.status == "failed"
    assert "not a string" in str(run.error)
