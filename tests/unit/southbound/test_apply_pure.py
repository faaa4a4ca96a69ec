"""The pure parts of apply-and-verify: batching, expected state, comparison, blame."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import SouthboundRejected, SouthboundSetUnconfirmed
from controller.intent.loader import load_intent_file
from controller.reconcile.apply import (
    ABSENT,
    NAMED_TABLES,
    PRESENT,
    ApplyResult,
    Difference,
    agent_fields,
    apply_plan_to_switch,
    batches,
    blame_op,
    compare_readback,
    gcu_batches,
    set_deadline,
    settle_emptied_tables,
    settle_shared_deletes,
    write_groups,
)
from controller.reconcile.refusals import SCOPE_REFUSAL
from controller.sonic.compile import compile_fleet
from controller.sonic.diff import plan_switch
from controller.sonic.gcu import GcuPace, sorted_changes
from controller.sonic.model import Op, Plan
from controller.southbound.gnmi import CallPolicy

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
SCHED = Op("add", "SCHEDULER", "SLUICE_SCHED_3", {"type": "DWRR", "weight": "50"}, {})
QUEUE = Op("add", "QUEUE", "Ethernet0|3", {"scheduler": "SLUICE_SCHED_3"}, {}, whole_entry=False)
GONE = Op("delete", "WRED_PROFILE", "SLUICE_OLD", {}, {"ecn": "ecn_all"})
SHARED_GONE = Op("delete", "PORT_QOS_MAP", "Ethernet4", {}, {"dscp_to_tc_map": "SLUICE"}, False)
CHANGE = Op(
    "change",
    "QUEUE",
    "Ethernet4|3",
    {"scheduler": "SLUICE_SCHED_2"},
    {"scheduler": "SLUICE_SCHED_3", "wred_profile": "SLUICE_Q"},
    whole_entry=False,
)
ALL = (SCHED, QUEUE, CHANGE, SHARED_GONE, GONE)


@given(n=st.integers(0, 40), size=st.integers(1, 12))
def test_batches_are_consecutive_slices_that_keep_the_order(n: int, size: int) -> None:
    ops = [Op("add", "SCHEDULER", f"S{i:02d}", {"type": "STRICT"}, {}) for i in range(n)]
    chunks = batches(ops, size)
    assert [op for chunk in chunks for op in chunk] == ops
    assert all(1 <= len(chunk) <= size for chunk in chunks)
    assert len(chunks) == -(-n // size)  # ceil(n / size)


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        batches([SCHED], 0)


def test_readback_that_matches_has_no_difference() -> None:
    readback = {
        ("SCHEDULER", "SLUICE_SCHED_3"): {"type": "DWRR", "weight": "50"},
        # An operator's own field on the shared entry is not sluice's business.
        ("QUEUE", "Ethernet0|3"): {"scheduler": "SLUICE_SCHED_3", "pfc_enable": "3"},
        ("QUEUE", "Ethernet4|3"): {"scheduler": "SLUICE_SCHED_2"},
        ("PORT_QOS_MAP", "Ethernet4"): {"pfc_enable": "3,4"},
    }
    assert compare_readback(ALL, readback) == ()


def test_each_kind_of_difference_is_listed() -> None:
    readback = {
        ("SCHEDULER", "SLUICE_SCHED_3"): {"type": "DWRR", "weight": "5"},  # wrong value
        # QUEUE Ethernet0|3 missing entirely
        ("QUEUE", "Ethernet4|3"): {"scheduler": "SLUICE_SCHED_2", "wred_profile": "SLUICE_Q"},
        ("PORT_QOS_MAP", "Ethernet4"): {"dscp_to_tc_map": "SLUICE"},  # field should be gone
        ("WRED_PROFILE", "SLUICE_OLD"): {"ecn": "ecn_all"},  # entry should be gone
    }
    assert compare_readback(ALL, readback) == (
        Difference("PORT_QOS_MAP", "Ethernet4", "dscp_to_tc_map", None, "SLUICE"),
        Difference("QUEUE", "Ethernet0|3", None, PRESENT, ABSENT),
        Difference("QUEUE", "Ethernet4|3", "wred_profile", None, "SLUICE_Q"),
        Difference("SCHEDULER", "SLUICE_SCHED_3", "weight", "50", "5"),
        Difference("WRED_PROFILE", "SLUICE_OLD", None, ABSENT, PRESENT),
    )


def test_a_missing_field_reads_as_no_value() -> None:
    readback = {("SCHEDULER", "SLUICE_SCHED_3"): {"type": "DWRR"}}
    (diff,) = compare_readback([SCHED], readback)
    assert diff == Difference("SCHEDULER", "SLUICE_SCHED_3", "weight", "50", None)
    assert str(diff) == "SCHEDULER|SLUICE_SCHED_3 field 'weight': expected '50', read back no value"


def test_volatile_fields_only_need_to_be_present() -> None:
    wred = Op(
        "add",
        "WRED_PROFILE",
        "SLUICE_Q_E0_3",
        {"green_max_threshold": "62500", "ecn": "ecn_all"},
        {},
    )

    def agent_moves(entry: tuple[str, str]) -> frozenset[str]:
        return (
            frozenset({"green_max_threshold"}) if entry[1].startswith("SLUICE_Q_") else frozenset()
        )

    moved = {("WRED_PROFILE", "SLUICE_Q_E0_3"): {"green_max_threshold": "70000", "ecn": "ecn_all"}}
    assert compare_readback([wred], moved, agent_moves) == ()
    gone = {("WRED_PROFILE", "SLUICE_Q_E0_3"): {"ecn": "ecn_all"}}
    assert compare_readback([wred], gone, agent_moves) == (
        Difference("WRED_PROFILE", "SLUICE_Q_E0_3", "green_max_threshold", "62500", None),
    )
    # Without the predicate the moved value is a difference.
    assert len(compare_readback([wred], moved)) == 1


def test_later_op_on_the_same_entry_wins() -> None:
    # A delete then a re-add of the same entry: the entry must exist with the new fields.
    readd = Op("add", "WRED_PROFILE", "SLUICE_OLD", {"ecn": "ecn_green"}, {})
    readback = {("WRED_PROFILE", "SLUICE_OLD"): {"ecn": "ecn_green"}}
    assert compare_readback([GONE, readd], readback) == ()
    assert compare_readback([readd, GONE], readback) == (
        Difference("WRED_PROFILE", "SLUICE_OLD", None, ABSENT, PRESENT),
    )


def test_blame_picks_the_op_the_switch_names() -> None:
    batch = [
        Op("add", "QUEUE", "Ethernet0|1", {"scheduler": "S"}, {}, False),
        Op("add", "QUEUE", "Ethernet0|10", {"scheduler": "S"}, {}, False),
    ]
    message = (
        "QUEUE|Ethernet0|10: field 'scheduler': references SCHEDULER 'S', which does not exist"
    )
    assert blame_op(batch, message) is batch[1]
    assert blame_op(batch, "Failed to apply patch") is None


def test_blame_of_a_path_table_reads_the_entry_in_a_gnmi_path() -> None:
    queues = "/qos/queues/queue"
    batch = [
        Op("add", "/qos/forwarding-groups/forwarding-group", "SLUICE_Q10", {}, {}),
        Op("add", queues, "SLUICE_Q1", {"config/queue-id": "1"}, {}),
        Op("add", queues, "SLUICE_Q10", {"config/queue-id": "10"}, {}),
    ]
    message = "/qos/queues/queue[name=SLUICE_Q10]: queue_id must be of a type uint8"
    assert blame_op(batch, message) is batch[2]
    assert blame_op(batch, "/qos/queues/queue[name=SLUICE_Q2]: refused") is None


def test_result_is_json_ready() -> None:
    result = ApplyResult(
        "leaf1",
        "failed",
        ops_total=3,
        ops_written=1,
        set_requests=2,
        reason="INVALID_ARGUMENT: SCHEDULER|S: field 'weight': 150 above 100",
        failed_op=SCHED,
        differences=(Difference("SCHEDULER", "S", "weight", "50", "5"),),
    )
    data = json.loads(json.dumps(result.to_json()))
    assert data["status"] == "failed"
    assert data["failed_op"]["path"] == "/CONFIG_DB/localhost/SCHEDULER/SLUICE_SCHED_3"
    assert data["differences"] == [
        {"table": "SCHEDULER", "key": "S", "field": "weight", "expected": "50", "actual": "5"}
    ]
    assert (data["ops_total"], data["ops_written"], data["set_requests"]) == (3, 1, 2)


def test_shared_delete_of_every_field_becomes_an_entry_delete() -> None:
    # BUFFER_QUEUE|Ethernet0|2 holds only sluice's profile: removing the field would leave an
    # empty entry SONiC refuses (profile is mandatory), so the entry goes.
    only_ours = Op("delete", "BUFFER_QUEUE", "Ethernet0|2", {}, {"profile": "SLUICE_BUF"}, False)
    # PORT_QOS_MAP|Ethernet4 also has the operator's pfc_enable: field deletes stay.
    shared = SHARED_GONE
    current = {
        ("BUFFER_QUEUE", "Ethernet0|2"): {"profile": "SLUICE_BUF"},
        ("PORT_QOS_MAP", "Ethernet4"): {"dscp_to_tc_map": "SLUICE", "pfc_enable": "3,4"},
    }
    settled = settle_shared_deletes([SCHED, only_ours, shared], current)
    assert settled[0] is SCHED
    assert settled[1].whole_entry
    assert (settled[1].kind, settled[1].entry_key) == ("delete", ("BUFFER_QUEUE", "Ethernet0|2"))
    assert settled[2] is shared
    # An entry already gone keeps its (harmless) field deletes.
    assert settle_shared_deletes([only_ours], {}) == (only_ours,)


def test_deletes_that_leave_a_table_empty_become_the_tables_delete_batch_by_batch() -> None:
    def gone(table: str, key: str) -> Op:
        return Op("delete", table, key, {}, {"x": "1"})

    maps = [gone("DSCP_TO_TC_MAP", "SLUICE")]
    agents = [gone("SLUICE_AGENT_QUEUE", f"Ethernet0|{q}") for q in (1, 2, 3)]
    new_agent = Op("add", "SLUICE_AGENT_QUEUE", "Ethernet4|1", {"managed": "false"}, {})
    current = {
        ("DSCP_TO_TC_MAP", "SLUICE"): {"46": "6"},
        ("WRED_PROFILE", "SLUICE_WRED_A"): {"ecn": "ecn_all"},
        ("WRED_PROFILE", "OPERATORS"): {"ecn": "ecn_all"},
        **{(op.table, op.key): {"managed": "true"} for op in agents},
    }
    wred = gone("WRED_PROFILE", "SLUICE_WRED_A")
    # Batches of two: the agent table's last entry goes in the second batch, where it alone
    # is left; the operator's WRED profile keeps its table.
    settled = settle_emptied_tables(
        [(maps[0], wred), (agents[0], agents[1]), (agents[2],)], current
    )
    flags = [[(op.key, op.whole_table) for op in chunk] for chunk in settled]
    assert flags == [
        [("SLUICE", True), ("SLUICE_WRED_A", False)],
        [("Ethernet0|1", False), ("Ethernet0|2", False)],
        [("Ethernet0|3", True)],
    ]
    # An entry the same batch adds keeps the table.
    kept = settle_emptied_tables([(*agents, new_agent)], current)
    assert not any(op.whole_table for op in kept[0])
    # Field deletes in a shared table remove no entry.
    assert not settle_emptied_tables([(SHARED_GONE,)], {})[0][0].whole_table


def test_agent_fields_follow_the_wred_schema() -> None:
    # Per-queue profiles (SLUICE_Q_<port>_<q>) are the agent's to move; shared profiles and
    # other tables are not.
    moving = agent_fields(("WRED_PROFILE", "SLUICE_Q_Ethernet0_3"))
    assert "green_max_threshold" in moving
    assert "ecn" not in moving
    assert agent_fields(("WRED_PROFILE", "SLUICE_WRED_25G_Q1")) == frozenset()
    assert agent_fields(("SCHEDULER", "SLUICE_SCHED_3")) == frozenset()
    assert agent_fields(("NOT_A_SLUICE_TABLE", "x")) == frozenset()


class FakeUnansweredSetSession:
    """A fake switch (a dict) whose first Set gets no answer (unless ``answers_all``) and
    takes effect only after ``shows_after`` reads of it (never, with None); every later Set
    applies at once. Records what each Set carried and the deadline it was given."""

    name = "leaf1"
    set_deadline_s = 2.0

    def __init__(
        self,
        config: dict[tuple[str, str], dict[str, str]],
        shows_after: int | None,
        *,
        answers_all: bool = False,
    ) -> None:
        self.config = config
        self.shows_after = shows_after
        self.answers_all = answers_all
        self.sent: list[tuple[Op, ...]] = []
        self.deadlines: list[float | None] = []
        self.reads = 0
        self._pending: tuple[Op, ...] = ()

    def set(self, ops: Sequence[Op], deadline_s: float | None = None) -> None:
        self.sent.append(tuple(ops))
        self.deadlines.append(deadline_s)
        if len(self.sent) == 1 and not self.answers_all:
            self._pending = tuple(ops)
            raise SouthboundSetUnconfirmed(self.name, "DEADLINE_EXCEEDED", outcome_wait_s=4.0)
        self._write(ops)

    def _write(self, ops: Sequence[Op]) -> None:
        for op in ops:
            if op.kind == "delete":
                self.config.pop(op.entry_key, None)
            else:
                self.config.setdefault(op.entry_key, {}).update(op.fields)

    def get_tables(self, tables: Iterable[str]) -> dict[tuple[str, str], dict[str, str]]:
        self.reads += 1
        if self.shows_after is not None and self.reads > self.shows_after and self._pending:
            self._write(self._pending)  # GCU finished the Set the client gave up on
            self._pending = ()
        wanted = set(tables)
        return {k: dict(v) for k, v in self.config.items() if k[0] in wanted}


SLOW = GcuPace(per_set_s=0.1, per_change_s=0.1, load_margin=1.0)


def test_an_unanswered_set_that_shows_later_is_read_back_and_never_resent() -> None:
    session = FakeUnansweredSetSession({}, shows_after=3)
    slept: list[float] = []
    plan = Plan("leaf1", (SCHED, QUEUE))
    result = apply_plan_to_switch(session, plan, pace=SLOW, sleep=slept.append)
    assert result.status == "applied_verified"
    assert session.sent == [(SCHED, QUEUE)]
    # Read back four times (three waits 0.5 s apart) until it showed; nothing resent.
    assert slept == [0.5] * 3
    assert result.set_requests == 1
    assert result.ops_written == 2


def test_an_unanswered_set_that_never_shows_is_not_resent_and_the_state_is_unknown() -> None:
    # This used to resend the missing ops once after two deadlines: GCU may still be applying
    # the first Set then, and the resend queued behind it and applied it twice.
    session = FakeUnansweredSetSession({QUEUE.entry_key: {"scheduler": "SLUICE_SCHED_3"}}, None)
    slept: list[float] = []
    plan = Plan("leaf1", (SCHED, QUEUE))
    result = apply_plan_to_switch(session, plan, pace=SLOW, sleep=slept.append)
    assert result.status == "unknown"
    assert session.sent == [(SCHED, QUEUE)]
    assert result.set_requests == 1
    assert result.ops_written == 0
    # It read back for the whole wait (8 polls, 0.5 s apart) and then gave up writing.
    assert slept == [0.5] * 8
    assert "not sent again" in (result.reason or "")
    assert result.to_json()["status"] == "unknown"


def test_a_set_gets_the_switch_deadline_or_longer_when_gcu_needs_longer() -> None:
    # At 1 s a Set and 0.5 s a change, the switch's 2 s deadline fits 2 changes: SCHED (1)
    # goes alone and gets 2 s; the QUEUE add is 3 changes (admin down, add, up), never split,
    # and gets the 2.5 s it needs.
    session = FakeUnansweredSetSession({}, None, answers_all=True)
    pace = GcuPace(per_set_s=1.0, per_change_s=0.5, load_margin=1.0)
    result = apply_plan_to_switch(session, Plan("leaf1", (SCHED, QUEUE)), pace=pace)
    assert result.status == "applied_verified"
    assert session.sent == [(SCHED,), (QUEUE,)]
    assert session.deadlines == [2.0, 2.5]
    slower = GcuPace(per_set_s=1.0, per_change_s=1.0, load_margin=2.0)
    assert set_deadline(2.0, [QUEUE], slower) == 8.0  # 2 x (1 + 3 x 1)
    assert set_deadline(20.0, [QUEUE], slower) == 20.0


class FakeGcuCheckSession:
    """A fake switch (a dict) whose GCU answers each Set with its scope refusal, as sonic-gnmi
    passes on GCU's failed check of the whole config after applying a patch; ``applies``:
    whether the changes were applied before that (the check failed because another writer
    changed CONFIG_DB) or not (a refusal before validation)."""

    name = "leaf1"
    set_deadline_s = 2.0

    def __init__(self, applies: bool) -> None:
        self.applies = applies
        self.config: dict[tuple[str, str], dict[str, str]] = {}
        self.sent: list[tuple[Op, ...]] = []

    def set(self, ops: Sequence[Op], deadline_s: float | None = None) -> None:
        self.sent.append(tuple(ops))
        if self.applies:
            for op in ops:
                self.config.setdefault(op.entry_key, {}).update(op.fields)
        raise SouthboundRejected(self.name, "UNKNOWN", f"{SCOPE_REFUSAL}: localhost")

    def get_tables(self, tables: Iterable[str]) -> dict[tuple[str, str], dict[str, str]]:
        wanted = set(tables)
        return {k: dict(v) for k, v in self.config.items() if k[0] in wanted}


def test_a_scope_refusal_whose_batch_reads_back_applied_is_taken_as_applied() -> None:
    # The real GCU with the qos-agent writing thresholds beside it: the patch applied, its
    # whole-config check failed, and all sonic-gnmi says is the scope refusal.
    session = FakeGcuCheckSession(applies=True)
    result = apply_plan_to_switch(session, Plan("leaf1", (SCHED, QUEUE)), pace=SLOW)
    assert result.status == "applied_verified"
    assert result.set_requests == len(session.sent)  # read back, never resent
    assert result.ops_written == 2


def test_a_scope_refusal_with_nothing_applied_stays_a_refusal() -> None:
    session = FakeGcuCheckSession(applies=False)
    result = apply_plan_to_switch(session, Plan("leaf1", (SCHED, QUEUE)), pace=SLOW)
    assert result.status == "failed"
    assert SCOPE_REFUSAL in (result.reason or "")
    assert result.ops_written == 0


def port_ops(port: str, queues: Sequence[int]) -> list[Op]:
    return [
        Op("change", "QUEUE", f"{port}|{q}", {"wred_profile": "B"}, {"wred_profile": "A"}, False)
        for q in queues
    ] + [Op("add", "PORT_QOS_MAP", port, {"dscp_to_tc_map": "SLUICE"}, {}, False)]


def test_gcu_batches_keep_each_ports_changes_in_one_set_and_deletes_apart() -> None:
    new = Op("add", "WRED_PROFILE", "B", {"ecn": "ecn_all"}, {})
    old = Op("delete", "WRED_PROFILE", "A", {}, {"ecn": "ecn_all"})
    agent = Op("change", "SLUICE_AGENT", "global", {"version": "2"}, {"version": "1"})
    e0, e4, e8 = (port_ops(p, (1, 2, 3)) for p in ("Ethernet0", "Ethernet4", "Ethernet8"))
    # The plan's order: writes by table (PORT_QOS_MAP before QUEUE), then deletes.
    plan = [new, e0[3], e4[3], e8[3], *e0[:3], *e4[:3], *e8[:3], old, agent]
    # A port block is 4 entries + its admin down and up: 6 changes. With at most 12 a Set,
    # the new profile and Ethernet0 (7), then Ethernet4 and Ethernet8 (12); the profile that
    # no queue names any more goes in a Set of its own, the agent's orders last.
    chunks = gcu_batches(plan, batch_size=100, max_changes=12)
    assert chunks == [
        (new, *e0[3:], *e0[:3]),
        (*e4[3:], *e4[:3], *e8[3:], *e8[:3]),
        (old,),
        (agent,),
    ]
    assert [sorted_changes(c) for c in chunks] == [7, 12, 1, 1]
    # A port block larger than a Set should be is never split: its port goes down once.
    one_port = gcu_batches([*e0[:3], e0[3]], batch_size=100, max_changes=2)
    assert one_port == [(e0[0], e0[1], e0[2], e0[3])]
    # The op count still caps a Set.
    assert [len(c) for c in gcu_batches([new] * 5, batch_size=2, max_changes=100)] == [2, 2, 1]
    with pytest.raises(ValueError, match="at least 1"):
        gcu_batches(plan, batch_size=100, max_changes=0)


def test_write_groups_put_agent_writes_last_and_agent_deletes_first() -> None:
    agent = Op("add", "SLUICE_AGENT", "global", {"algorithm": "static"}, {})
    agent_gone = Op("delete", "SLUICE_AGENT_QUEUE", "Ethernet0|3", {}, {"mode": "x"})
    queue = Op("add", "SLUICE_AGENT_QUEUE", "Ethernet0|3", {"managed": "false"}, {})
    # The global entry (the orders' version) goes after the queue entries it versions.
    assert write_groups([agent, SCHED, queue, agent_gone, QUEUE]) == (
        (agent_gone,),
        (SCHED, QUEUE),
        (),
        (queue,),
        (agent,),
    )


def test_a_queue_entry_that_stops_naming_its_profile_goes_before_the_profiles_delete() -> None:
    # A dynamic class made static (or lossless): its per-port profile is deleted, and its
    # agent queue entry, unmanaged now, no longer names it. The profile's delete goes in
    # the released group, so the entry's change must come first (libyang's leafref).
    unmanaged = Op(
        "change",
        "SLUICE_AGENT_QUEUE",
        "Ethernet0|3",
        {"managed": "false", "weight": "50"},
        {"managed": "true", "weight": "50", "wred_profile": "SLUICE_Q_Ethernet0_3"},
    )
    profile_gone = Op("delete", "WRED_PROFILE", "SLUICE_Q_Ethernet0_3", {}, {"ecn": "ecn_all"})
    still_managed = Op(
        "change",
        "SLUICE_AGENT_QUEUE",
        "Ethernet0|2",
        {"managed": "true", "wred_profile": "SLUICE_Q_Ethernet0_2", "floor_bytes": "2"},
        {"managed": "true", "wred_profile": "SLUICE_Q_Ethernet0_2", "floor_bytes": "1"},
    )
    groups = write_groups([QUEUE, unmanaged, still_managed, profile_gone])
    assert groups == ((unmanaged,), (QUEUE,), (profile_gone,), (still_managed,), ())
    batches = gcu_batches([QUEUE, unmanaged, still_managed, profile_gone], 100, 100)
    assert batches.index((profile_gone,)) > batches.index((unmanaged,))


def test_entries_other_entries_name_are_deleted_after_the_ops_that_stop_naming_them() -> None:
    # GONE (a WRED profile) goes in a GCU run after the queues moved off it; the shared
    # delete of a port's maps only drops references and stays with the writes.
    assert write_groups(ALL) == ((), (SCHED, QUEUE, CHANGE, SHARED_GONE), (GONE,), (), ())
    assert {
        "WRED_PROFILE",
        "SCHEDULER",
        "BUFFER_PROFILE",
        "DSCP_TO_TC_MAP",
        "TC_TO_QUEUE_MAP",
        # a lossless class's maps (docs/lossless.md)
        "TC_TO_PRIORITY_GROUP_MAP",
        "MAP_PFC_PRIORITY_TO_QUEUE",
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    } == NAMED_TABLES


def test_a_leafs_first_rollout_fits_the_default_set_deadline_at_gcus_measured_pace() -> None:
    # One Set of the example leaf's first rollout took 73 s through the real GCU, past the
    # 60 s deadline. At the measured pace with the load margin, each Set fits.
    intent = load_intent_file(EXAMPLE)
    plan = plan_switch("leaf1", compile_fleet(intent)["leaf1"], {})
    pace = GcuPace()
    deadline = CallPolicy().set_deadline_s
    chunks = gcu_batches(plan.ops, 100, pace.changes_within(deadline))
    sent = [op for chunk in chunks for op in chunk]
    assert sorted(map(id, sent)) == sorted(map(id, plan.ops))  # every op, once
    assert all(pace.deadline_for(sorted_changes(chunk)) <= deadline for chunk in chunks)
    as_one = [op for op in plan.ops if op.table not in {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"}]
    assert pace.deadline_for(sorted_changes(as_one)) > deadline
    # Every port goes down in exactly one Set.
    downs = [port for chunk in chunks for port in Plan("leaf1", chunk).ports_down]
    assert sorted(downs) == ["Ethernet0", "Ethernet4", "Ethernet48", "Ethernet52"]
