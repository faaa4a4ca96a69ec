"""A release (or a first rollout's rollback) disables the counter groups sluice enabled by a
write of its own before the write that deletes their entries: orchagent acts on a
``FLEX_COUNTER_TABLE`` SET alone (controller/sonic/tables/flex_counter_table.py, "Giving a
group back"), so a group deleted while enabled would stay polled."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.rollout.switches import converge_switch
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.model import SwitchConfig
from tests.unit.reconcile.fakes import FakeSwitch
from tests.unit.sonic import intents as t
from tests.unit.sonic.test_flex_counter_table import LEAF1_PORTS, adopted, lossless_switch

SWITCH = t.switch(ports=LEAF1_PORTS)
DISABLED = {"FLEX_COUNTER_STATUS": "disable"}


@dataclass
class Held:
    """The adoption record of a switch sluice adopted from ``baseline``; what was released."""

    saved: SwitchConfig
    released: list[str] = field(default_factory=list)

    def baseline(self, switch: str) -> SwitchConfig | None:
        return self.saved

    def adopt(self, switch: str, baseline: SwitchConfig, by: str) -> None:
        raise AssertionError("a held switch is not adopted again")

    def release(self, switch: str, by: str) -> None:
        self.released.append(switch)


def test_a_release_disables_the_groups_it_enabled_before_deleting_them() -> None:
    config = lossless_switch(PG_DROP={"POLL_INTERVAL": "5000"})
    want, running, _ = adopted(config)
    fake, held = FakeSwitch(dict(running), writes=True), Held(config)
    converged = converge_switch(
        fake, SWITCH, {}, want, allow_port_flaps=True, adoptions=held, by="release 1"
    )
    assert converged.result.status == "applied_verified", converged.result.reason
    first, then = fake.applied
    assert {op.key for op in first.ops} == {
        "PG_DROP",
        "PG_WATERMARK",
        "PORT",
        "QUEUE",
        "QUEUE_WATERMARK",
    }
    assert all((op.table, op.fields) == ("FLEX_COUNTER_TABLE", DISABLED) for op in first.ops)
    assert then == plan_switch("leaf1", {}, running, want, baseline=config)
    assert (fake.config, held.released) == (config, ["leaf1"])


def test_a_refused_disable_stops_the_release_before_anything_is_deleted() -> None:
    config = lossless_switch()
    want, running, _ = adopted(config)
    fake, held = FakeSwitch(dict(running), status="failed"), Held(config)
    converged = converge_switch(
        fake, SWITCH, {}, want, allow_port_flaps=True, adoptions=held, by="release 1"
    )
    assert converged.result.status == "failed"
    [only] = fake.applied
    assert {op.fields["FLEX_COUNTER_STATUS"] for op in only.ops} == {"disable"}
    assert held.released == []


def test_a_release_retried_after_its_delete_failed_deletes_the_disable_it_wrote() -> None:
    config = lossless_switch()
    want, running, _ = adopted(config)
    held = Held(config)
    first_try = FakeSwitch(dict(running), writes=True)
    stops = converge_switch(  # the disable lands; pretend the delete after it was refused
        first_try, SWITCH, {}, want, allow_port_flaps=True, adoptions=held, by="release 1"
    )
    assert stops.result.status == "applied_verified"
    half_done = apply_plan(running, first_try.applied[0])
    retry = FakeSwitch(half_done, writes=True)
    again = converge_switch(
        retry, SWITCH, {}, want, allow_port_flaps=True, adoptions=held, by="release 1"
    )
    assert again.result.status == "applied_verified", again.result.reason
    [delete] = retry.applied  # nothing left to disable: the delete alone
    assert {op.kind for op in delete.ops if op.table == "FLEX_COUNTER_TABLE"} == {"delete"}
    assert (retry.config, held.released) == (config, ["leaf1", "leaf1"])
