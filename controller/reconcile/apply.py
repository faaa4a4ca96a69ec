"""Apply and verify: execute a plan on a switch, read every written entry back, compare.

A config a switch accepted is not a config that arrived (sonic-mgmt#19492): every apply ends with a
Get of the tables it wrote and a field-by-field comparison against what the plan asked for.
Per switch the outcome is one of:

- ``applied_verified``: every batch accepted and the read-back matches;
- ``failed``: the switch refused a batch (its reason, and the op it names) or answered
  something malformed; earlier batches stay applied, the refused one changed nothing
  (a SetRequest is all-or-nothing, sonic-gnmi sonic_data_client/mixed_db_client.go);
- ``unreachable``: no answer after the retries; earlier batches stay applied;
- ``unknown``: a Set got no answer and the switch did not show it within several of its
  deadlines: it may still be applying; earlier batches stay applied;
- ``mismatch``: accepted, but the read-back differs (the differences are listed).

A Set that got no answer (``SouthboundSetUnconfirmed``: the deadline passed or the connection
dropped) may still be running on the switch, which applies it as one GCU run whatever the
client does. It is never sent again while it may be applying: the tables it wrote are read
back, for ``CallPolicy.outcome_wait_factor`` of its deadlines (GCU took more than three of
them on a loaded switch), until the switch shows it; when it still does not, the switch's
state is ``unknown`` and nothing more is written. The next rollout or reconcile pass plans
from a fresh read.

Sets are sized for GCU (``controller/sonic/gcu.py``): each carries at most what GCU applies
within the Set deadline on a loaded switch (its sorted changes at ``CallPolicy.pace``), and
a Set that must carry more (one port's port-critical changes, which are never split, so a
port goes down once) gets a deadline that fits it. The plan's ops go in four groups, each
valid on its own because the plan is in dependency order: the profiles and maps written,
then the port-critical changes (``QUEUE``, ``BUFFER_QUEUE``, ``PORT_QOS_MAP``) port by port,
then the deletes of what no queue names any more, in Sets of their own: GCU strips a profile
deleted in the Set that repoints its queues one field at a time while they still use it.

The tables sluice invents (``SLUICE_AGENT``, ``SLUICE_AGENT_QUEUE``) are checked on a switch
only by sluice's YANG extension, and GCU refuses a whole patch that touches a table without
a YANG model (sonic-net/sonic-utilities:generic_config_updater). Their writes therefore go
in SetRequests of their own after every QoS table, so a switch without the extension still
gets its QoS config, and the result says what is missing and how to install it.

Running again is how a partial apply completes: plan from a fresh read (observed = what the
switch holds) and only what is still missing is written. The comparison, the batching and
the blame are pure functions; only ``apply_plan_to_switch`` and ``apply_fleet`` do I/O, and
only through the session they are given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from controller.errors import (
    SouthboundError,
    SouthboundRejected,
    SouthboundSetOutcomeUnknown,
    SouthboundSetUnconfirmed,
    SouthboundUnreachable,
)
from controller.reconcile.fanout import checked_parallel, map_parallel
from controller.reconcile.refusals import REFERENCED_TABLES, SCOPE_REFUSAL, explain
from controller.sonic.gcu import (
    FLAP_CHANGES,
    PORT_CRITICAL_TABLES,
    GcuPace,
    critical_port,
    sorted_changes,
)
from controller.sonic.model import EntryKey, Fields, Op, Plan, SwitchConfig, is_path_table
from controller.sonic.tables import SCHEMAS, sluice_agent, sluice_agent_queue

log = logging.getLogger(__name__)

ApplyStatus = Literal["applied_verified", "failed", "unreachable", "unknown", "mismatch"]
Stage = Literal["batch_written", "verifying", "finished"]
Volatile = Callable[[EntryKey], frozenset[str]]
"""Fields of an entry that something on the switch may rewrite right after sluice wrote
them (the agent's live thresholds): verified present, not equal."""

ABSENT = "absent"
PRESENT = "present"

# The CONFIG_DB tables sluice invents; a switch accepts them only with sluice's YANG
# extension installed (docs/southbound.md, "What a switch needs").
EXTENSION_TABLES = frozenset({sluice_agent.TABLE, sluice_agent_queue.TABLE})
YANG_EXTENSION = "sonic-sluice-agent.yang"
# The QoS tables whose entries other entries name (a queue's WRED profile and scheduler, a
# port's maps, a buffer queue's profile).
NAMED_TABLES = frozenset(
    spec.ref
    for schema in SCHEMAS.values()
    for spec in schema.references()
    if spec.ref in SCHEMAS and spec.ref not in EXTENSION_TABLES
)
# How often the outcome of an unanswered Set is read while waiting for it.
OUTCOME_POLLS = 8
DEFAULT_PACE = GcuPace()


class ConfigSession(Protocol):
    """What apply needs from a switch session (``controller.southbound.gnmi.SwitchSession``)."""

    @property
    def name(self) -> str: ...

    @property
    def set_deadline_s(self) -> float:
        """How long one Set may run on this switch unless the caller gives it longer."""
        ...

    def set(self, ops: Sequence[Op], deadline_s: float | None = None) -> None: ...

    def get_tables(self, tables: Iterable[str]) -> SwitchConfig: ...


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the read-back differs from the plan. ``field`` None: the entry itself, with
    ``expected``/``actual`` ``present`` or ``absent``; otherwise a field's value, None when
    the field is (or should be) missing."""

    table: str
    key: str
    field: str | None
    expected: str | None
    actual: str | None

    def __str__(self) -> str:
        where = f"{self.table}|{self.key}" + (f" field '{self.field}'" if self.field else "")
        return f"{where}: expected {_shown(self.expected)}, read back {_shown(self.actual)}"

    def to_json(self) -> dict[str, str | None]:
        return {
            "table": self.table,
            "key": self.key,
            "field": self.field,
            "expected": self.expected,
            "actual": self.actual,
        }


def _shown(value: str | None) -> str:
    return "no value" if value is None else repr(value)


@dataclass(frozen=True)
class ApplyResult:
    """The outcome of one switch's apply, JSON-ready through ``to_json``."""

    switch: str
    status: ApplyStatus
    ops_total: int
    ops_written: int
    set_requests: int
    reason: str | None = None
    failed_op: Op | None = None
    differences: tuple[Difference, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "switch": self.switch,
            "status": self.status,
            "ops_total": self.ops_total,
            "ops_written": self.ops_written,
            "set_requests": self.set_requests,
            "reason": self.reason,
            "failed_op": self.failed_op.as_dict() if self.failed_op else None,
            "differences": [d.to_json() for d in self.differences],
        }


@dataclass(frozen=True)
class ProgressEvent:
    """Reported after each accepted batch, before the read-back, and at the end (with the
    result). ``apply_fleet`` calls the callback from its worker threads."""

    switch: str
    stage: Stage
    batches_done: int
    batches_total: int
    result: ApplyResult | None = None


Progress = Callable[[ProgressEvent], None]


def _no_progress(event: ProgressEvent) -> None:
    return None


def _nothing_volatile(entry: EntryKey) -> frozenset[str]:
    return frozenset()


def agent_fields(entry: EntryKey) -> frozenset[str]:
    """The ``Volatile`` of a fabric whose on-switch agents run: the fields the agent rewrites
    (the thresholds of ``SLUICE_Q_*`` WRED profiles, per the table schemas). Pass it as
    ``volatile`` so a threshold the agent moved between Set and Get is not a mismatch."""
    schema = SCHEMAS.get(entry[0])
    return schema.agent_owned(entry[1]) if schema is not None else frozenset()


# --------------------------------------------------------------------------------------------
# pure parts


def batches(ops: Sequence[Op], batch_size: int) -> list[tuple[Op, ...]]:
    """Consecutive slices of the plan. The plan is in dependency order, so whatever a batch
    references is created in that batch or an earlier one, and whatever a delete frees is
    no longer referenced after that batch: each batch is valid on its own."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    return [tuple(ops[i : i + batch_size]) for i in range(0, len(ops), batch_size)]


@dataclass
class _Expected:
    gone: bool = False
    values: Fields = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)


def expected_state(ops: Iterable[Op]) -> dict[EntryKey, _Expected]:
    """What the written ops leave on the switch, per entry (Op semantics in
    ``controller/sonic/model.py``): entries gone, field values, fields removed."""
    expected: dict[EntryKey, _Expected] = {}
    for op in ops:
        want = expected.setdefault(op.entry_key, _Expected())
        if op.kind == "delete" and op.whole_entry:
            expected[op.entry_key] = _Expected(gone=True)
            continue
        removed = set(op.removed_fields) - set(op.fields)
        want.gone = False
        want.values.update(op.fields)
        want.missing = (want.missing - set(op.fields)) | removed
        for name in removed:
            want.values.pop(name, None)
    return expected


def compare_readback(
    ops: Iterable[Op], readback: SwitchConfig, volatile: Volatile = _nothing_volatile
) -> tuple[Difference, ...]:
    """Every difference between what ``ops`` should have left and ``readback``."""
    found: list[Difference] = []
    for (table, key), want in sorted(expected_state(ops).items()):
        have = readback.get((table, key))
        if want.gone:
            if have is not None:
                found.append(Difference(table, key, None, ABSENT, PRESENT))
            continue
        if have is None and want.values:
            found.append(Difference(table, key, None, PRESENT, ABSENT))
            continue
        have = have or {}
        moving = volatile((table, key))
        for name, value in sorted(want.values.items()):
            actual = have.get(name)
            if actual != value and not (name in moving and actual is not None):
                found.append(Difference(table, key, name, value, actual))
        for name in sorted(want.missing):
            if name in have:
                found.append(Difference(table, key, name, None, have[name]))
    return tuple(found)


def _unnames_profile(op: Op) -> bool:
    """A change of an agent queue entry that drops the WRED profile it named."""
    return (
        op.table == sluice_agent_queue.TABLE
        and op.kind == "change"
        and "wred_profile" in op.old_fields
        and "wred_profile" not in op.fields
    )


def write_groups(ops: Sequence[Op]) -> tuple[tuple[Op, ...], ...]:
    """``(extension deletes, QoS ops, released QoS entries, agent queue writes, agent global
    writes)``, each in plan order. Extension entries may name QoS entries (a queue's WRED
    profile), so their deletes go before the QoS ops and their writes after. The deletes of
    entries other entries name (profiles, schedulers, maps: ``NAMED_TABLES``) go after the QoS
    ops that stop naming them: in the same GCU run, GCU's patch sorter strips a profile that
    queues still name field by field before it moves the queues off it (13 changes of a
    second each for a WRED profile, and orchagent refusing the ``NULL`` placeholder of the
    emptied entry), where on its own its removal is one change. ``SLUICE_AGENT|global``
    carries the orders' version, which the agent reads every iteration and on a change of
    which it reads all its orders: it goes in a GCU run after the queue entries, since GCU
    writes one patch as changes a second apart (a first rollout's agent otherwise read the
    new version with none of its queues and managed nothing). A queue entry that stops naming
    its WRED profile (a dynamic class made static, or lossless) goes with the extension
    deletes, for the same reason: the profile's delete comes before the queue writes, and
    libyang refuses a delete whose profile a queue entry still names. Every group is valid
    on its own, as a batch is."""
    first = tuple(
        op
        for op in ops
        if op.table in EXTENSION_TABLES and (op.kind == "delete" or _unnames_profile(op))
    )
    queues = tuple(
        op
        for op in ops
        if op.table == sluice_agent_queue.TABLE and op.kind != "delete" and op not in first
    )
    stamp = tuple(op for op in ops if op.table == sluice_agent.TABLE and op.kind != "delete")
    qos = [op for op in ops if op.table not in EXTENSION_TABLES]
    released = tuple(op for op in qos if op.kind == "delete" and op.table in NAMED_TABLES)
    middle = tuple(op for op in qos if not (op.kind == "delete" and op.table in NAMED_TABLES))
    return first, middle, released, queues, stamp


def qos_groups(
    ops: Sequence[Op],
) -> tuple[tuple[Op, ...], tuple[tuple[Op, ...], ...], tuple[Op, ...]]:
    """``(writes, port blocks, deletes)`` of QoS ops: the profile, scheduler and map writes
    in plan order; the port-critical ops (``controller/sonic/gcu.py``) as one block per port,
    ports in the order the plan first names them, each block in plan order; the other
    deletes in plan order. Valid in that order: nothing port-critical is named by another
    table, a port-critical write names only what the writes made, and what the deletes
    remove is no longer named once the port blocks are applied."""
    writes = tuple(op for op in ops if op.table not in PORT_CRITICAL_TABLES and op.kind != "delete")
    deletes = tuple(
        op for op in ops if op.table not in PORT_CRITICAL_TABLES and op.kind == "delete"
    )
    by_port: dict[str, list[Op]] = {}
    for op in ops:
        port = critical_port(op.table, op.key)
        if port is not None:
            by_port.setdefault(port, []).append(op)
    return writes, tuple(tuple(block) for block in by_port.values()), deletes


@dataclass
class _SetSize:
    """What a Set holds so far, as GCU would sort it (``controller.sonic.gcu.sorted_changes``
    kept up to date op by op, so packing a plan is linear in its ops)."""

    ops: list[Op] = field(default_factory=list)
    critical: int = 0
    ports: set[str] = field(default_factory=set)
    grouped: set[tuple[str, str]] = field(default_factory=set)

    def changes_with(self, unit: Sequence[Op]) -> int:
        ports = self.ports | {p for op in unit if (p := critical_port(op.table, op.key))}
        grouped = self.grouped | {
            (op.table, op.kind) for op in unit if op.table not in PORT_CRITICAL_TABLES
        }
        critical = self.critical + sum(1 for op in unit if op.table in PORT_CRITICAL_TABLES)
        return critical + FLAP_CHANGES * len(ports) + len(grouped)

    def add(self, unit: Sequence[Op]) -> None:
        for op in unit:
            self.ops.append(op)
            port = critical_port(op.table, op.key)
            if port is None:
                self.grouped.add((op.table, op.kind))
            else:
                self.critical += 1
                self.ports.add(port)


def _packed(
    units: Iterable[Sequence[Op]], batch_size: int, max_changes: int
) -> list[tuple[Op, ...]]:
    """Consecutive units in Sets of at most ``batch_size`` ops and ``max_changes`` sorted
    changes; a unit is never split (one larger than either limit is a Set of its own)."""
    out: list[tuple[Op, ...]] = []
    current = _SetSize()
    for unit in units:
        if current.ops and (
            len(current.ops) + len(unit) > batch_size or current.changes_with(unit) > max_changes
        ):
            out.append(tuple(current.ops))
            current = _SetSize()
        current.add(unit)
    if current.ops:
        out.append(tuple(current.ops))
    return out


def gcu_batches(ops: Sequence[Op], batch_size: int, max_changes: int) -> list[tuple[Op, ...]]:
    """The Sets a plan goes in (module docstring): extension deletes; the QoS writes and the
    port blocks, packed to ``batch_size`` ops and ``max_changes`` sorted changes with no
    port block split; the other deletes (``write_groups``: after the repoints, never in
    their GCU run); the agent's queue entries; its global entry. Each Set is valid on its
    own."""
    if batch_size < 1 or max_changes < 1:
        raise ValueError("batch_size and max_changes must be at least 1")
    first, middle, released, agent_queues, agent_global = write_groups(ops)
    writes, blocks, deletes = qos_groups(middle)
    return [
        *_packed(_each(first), batch_size, max_changes),
        *_packed([*_each(writes), *blocks], batch_size, max_changes),
        *_packed(_each([*deletes, *released]), batch_size, max_changes),
        *_packed(_each(agent_queues), batch_size, max_changes),
        *_packed(_each(agent_global), batch_size, max_changes),
    ]


def _each(ops: Iterable[Op]) -> list[tuple[Op]]:
    return [(op,) for op in ops]


def still_missing(
    ops: Sequence[Op], readback: SwitchConfig, volatile: Volatile = _nothing_volatile
) -> tuple[Op, ...]:
    """The ops whose entries do not yet read back as the ops leave them, in order."""
    differing = {(d.table, d.key) for d in compare_readback(ops, readback, volatile)}
    return tuple(op for op in ops if op.entry_key in differing)


def extension_refusal(refused: Sequence[Op], error: SouthboundRejected) -> str:
    """Why the switch lacks its agent tables and what the operator installs to fix it."""
    tables = ", ".join(sorted({op.table for op in refused}))
    said = f"{error.code}: {error.message}"
    # Through sonic-gnmi, GCU's "tables without YANG models" reads only as its scope refusal
    # (what the real server answers: tests/realsonic/test_vsonic_diff_gcu.py).
    if "YANG" not in error.message and SCOPE_REFUSAL not in error.message:
        return f"the QoS tables are applied; {len(refused)} entries of {tables} refused ({said})"
    return (
        f"the QoS tables are applied; {len(refused)} entries of {tables} are missing because "
        f"the switch has no YANG model for them ({said}). Install sluice's YANG extension "
        f"({YANG_EXTENSION}, shipped with the qos-agent) into the switch's sonic-yang-models "
        "directory (/usr/local/yang-models) and run the rollout again (docs/southbound.md)"
    )


def _named_in(op: Op, message: str) -> bool:
    """``TABLE|key`` as SONiC's YANG errors and vsonic write a CONFIG_DB entry; a path
    table's entry as a gNMI path names it (``queue[name=SLUICE_Q3]``)."""
    if is_path_table(op.table):
        list_name = op.table.rpartition("/")[2]
        return f"/{list_name}[" in message and f"={op.key}]" in message
    return f"{op.table}|{op.key}" in message


def blame_op(batch: Sequence[Op], message: str) -> Op | None:
    """The op of a refused batch that the switch's message names (``_named_in``); None when
    it names none of them. The longest match wins so ``QUEUE|Ethernet0|1`` is not blamed
    for ``QUEUE|Ethernet0|10``."""
    named = [op for op in batch if _named_in(op, message)]
    if not named:
        return None
    return max(named, key=lambda op: len(op.table) + len(op.key))


# --------------------------------------------------------------------------------------------
# I/O through the session


@dataclass
class _Run:
    """Mutable bookkeeping of one switch's apply."""

    switch: str
    ops_total: int
    ops_written: int = 0
    set_requests: int = 0
    batches_done: int = 0
    phase: str = "write"
    chunk: tuple[Op, ...] = ()
    written: list[Op] = field(default_factory=list)
    extension_refused: SouthboundRejected | None = None
    refused_ops: tuple[Op, ...] = ()

    def result(
        self,
        status: ApplyStatus,
        reason: str | None = None,
        failed_op: Op | None = None,
        differences: tuple[Difference, ...] = (),
    ) -> ApplyResult:
        return ApplyResult(
            self.switch,
            status,
            self.ops_total,
            self.ops_written,
            self.set_requests,
            reason,
            failed_op,
            differences,
        )


def settle_shared_deletes(ops: Sequence[Op], current: SwitchConfig) -> tuple[Op, ...]:
    """Shared-table deletes that would leave an entry with no field at all become deletes of
    the entry. CONFIG_DB cannot hold an entry without fields the way Redis forgets an empty
    hash: SONiC keeps it as a ``NULL`` placeholder that YANG then refuses when the table has
    a mandatory field (``BUFFER_QUEUE.profile``). Removing every field and removing the entry
    mean the same (Op semantics in ``controller/sonic/model.py``), and an entry that holds an
    operator's field as well keeps getting field deletes."""
    settled: list[Op] = []
    for op in ops:
        have = current.get(op.entry_key)
        if op.kind == "delete" and not op.whole_entry and have and set(have) <= set(op.old_fields):
            op = replace(op, whole_entry=True)
        settled.append(op)
    return tuple(settled)


def settle_emptied_tables(
    chunks: Sequence[tuple[Op, ...]], current: SwitchConfig
) -> list[tuple[Op, ...]]:
    """Whole-entry deletes that leave the switch without any entry of their table, batch by
    batch (``current``: the switch's entries of the tables deleted from, read right before
    writing), become the table's delete (``whole_table``): GCU refuses a patch that leaves a
    table empty ("... will result in empty tables which is not allowed in ConfigDb",
    sonic-net/sonic-utilities generic_config_updater/patch_sorter.py) and accepts removing
    the table. Each batch is one GCU run, so emptiness is judged after each batch."""
    held: dict[str, set[str]] = {}
    for table, key in current:
        held.setdefault(table, set()).add(key)
    settled: list[tuple[Op, ...]] = []
    for chunk in chunks:
        for op in chunk:
            if op.kind == "add":
                held.setdefault(op.table, set()).add(op.key)
            elif op.kind == "delete" and op.whole_entry:
                held.get(op.table, set()).discard(op.key)
        settled.append(
            tuple(
                replace(op, whole_table=True)
                if op.kind == "delete" and op.whole_entry and not held.get(op.table)
                else op
                for op in chunk
            )
        )
    return settled


def _settle(
    session: ConfigSession, run: _Run, ops: tuple[Op, ...], batch_size: int, max_changes: int
) -> list[tuple[Op, ...]]:
    """The plan's batches, its deletes settled against the entries the switch holds right
    before writing (the plan may be minutes old): shared-table deletes that would leave an
    entry empty, and deletes that would leave a table empty. A plan without deletes costs no
    extra Get."""
    tables = {op.table for op in ops if op.kind == "delete"}
    if not tables:
        return gcu_batches(ops, batch_size, max_changes)
    run.phase = "reading entries to delete"
    current = session.get_tables(tables)
    settled = settle_shared_deletes(ops, current)
    return settle_emptied_tables(gcu_batches(settled, batch_size, max_changes), current)


def _await_outcome(
    session: ConfigSession,
    chunk: tuple[Op, ...],
    error: SouthboundSetUnconfirmed,
    volatile: Volatile,
    sleep: Callable[[float], None],
) -> None:
    """Read back an unanswered Set until the switch shows all of it (a GCU run applies all
    or none), for ``outcome_wait_s``; never send it again, since it may still be applying.
    Raises ``SouthboundSetOutcomeUnknown`` when it still does not show."""
    tables = {op.table for op in chunk}
    interval = error.outcome_wait_s / OUTCOME_POLLS
    missing = chunk
    for poll in range(OUTCOME_POLLS + 1):
        missing = still_missing(chunk, session.get_tables(tables), volatile)
        if not missing:
            log.info("%s: the unanswered Set was applied", session.name)
            return
        if poll < OUTCOME_POLLS:
            sleep(interval)
    raise SouthboundSetOutcomeUnknown(
        session.name,
        f"{error.detail}; after reading back for {error.outcome_wait_s:g} s more, "
        f"{len(missing)} of its {len(chunk)} op(s) still do not show. It was not sent again "
        "(GCU may still be applying it): the next rollout or reconcile pass plans from what "
        "the switch then holds",
    )


def _send(
    session: ConfigSession,
    run: _Run,
    chunk: tuple[Op, ...],
    deadline_s: float,
    volatile: Volatile,
    sleep: Callable[[float], None],
) -> None:
    """One batch, sent once; an unanswered one is read back, never resent, and so is one GCU
    refused in the words it also uses for a failed check after applying (``_applied_anyway``)."""
    run.set_requests += 1
    try:
        session.set(chunk, deadline_s)
    except SouthboundSetUnconfirmed as error:
        log.warning("%s: %s; reading back, nothing is resent", session.name, error.detail)
        _await_outcome(session, chunk, error, volatile, sleep)
    except SouthboundRejected as error:
        if not _applied_anyway(session, chunk, error, volatile):
            raise


def _applied_anyway(
    session: ConfigSession, chunk: tuple[Op, ...], error: SouthboundRejected, volatile: Volatile
) -> bool:
    """True when a batch GCU answered with its scope refusal reads back whole. GCU applies a
    patch's changes, then reads all of CONFIG_DB and compares it with the config it expected;
    any difference, in any table, fails the patch ("after applying patch to config, there
    are still some parts not updated", sonic-utilities generic_config_updater/
    generic_updater.py), and sonic-gnmi passes on only the scope refusal. A writer beside GCU
    (the qos-agent moving its thresholds every interval) makes that check fail with the
    batch applied. A batch refused before anything was applied does not read back: refused."""
    if SCOPE_REFUSAL not in error.message or not chunk:
        return False
    try:
        missing = still_missing(chunk, session.get_tables({op.table for op in chunk}), volatile)
    except SouthboundError as read_error:
        log.warning("%s: reading back a refused batch: %s", session.name, read_error)
        return False
    if missing:
        return False
    log.warning(
        "%s: GCU answered %r, yet all %d op(s) of the batch read back applied: its check of the "
        "whole config after a patch fails when another writer (the qos-agent) changed CONFIG_DB "
        "meanwhile; taken as applied",
        session.name,
        error.message[:120],
        len(chunk),
    )
    return True


def set_deadline(base_s: float, chunk: Sequence[Op], pace: GcuPace) -> float:
    """The deadline of one Set: the switch's, or longer when GCU needs longer for what the
    Set carries on a loaded switch (a port block larger than a Set should be)."""
    return max(base_s, pace.deadline_for(sorted_changes(chunk)))


def _write(
    session: ConfigSession,
    run: _Run,
    chunks: list[tuple[Op, ...]],
    pace: GcuPace,
    progress: Progress,
    volatile: Volatile,
    sleep: Callable[[float], None],
) -> None:
    """Send the batches in order; a refusal stops at the refused batch (``run.chunk``),
    except for extension tables: those are last, and their refusal is recorded instead."""
    run.phase = "write"
    for done, chunk in enumerate(chunks, start=1):
        run.chunk = chunk
        deadline = set_deadline(session.set_deadline_s, chunk, pace)
        try:
            _send(session, run, chunk, deadline, volatile, sleep)
        except SouthboundRejected as error:
            if not all(op.table in EXTENSION_TABLES and op.kind != "delete" for op in chunk):
                raise
            run.extension_refused = error
            run.refused_ops = tuple(op for c in chunks[done - 1 :] for op in c)
            return
        run.written += chunk
        run.ops_written += len(chunk)
        run.batches_done = done
        progress(ProgressEvent(run.switch, "batch_written", done, len(chunks)))


def _verify(
    session: ConfigSession, run: _Run, ops: Sequence[Op], volatile: Volatile
) -> ApplyResult:
    run.phase = "read-back"
    readback = session.get_tables({op.table for op in ops})
    differences = compare_readback(ops, readback, volatile)
    if differences:
        shown = "; ".join(str(d) for d in differences[:3])
        more = f" (and {len(differences) - 3} more)" if len(differences) > 3 else ""
        return run.result("mismatch", f"read-back differs: {shown}{more}", None, differences)
    if run.extension_refused is not None:
        reason = extension_refusal(run.refused_ops, run.extension_refused)
        blamed = blame_op(run.refused_ops, run.extension_refused.message) or run.refused_ops[0]
        return run.result("failed", reason, blamed)
    return run.result("applied_verified")


def _failure(run: _Run, error: SouthboundError) -> ApplyResult:
    """The result for a southbound error in the phase ``run`` was in."""
    context = "" if run.phase == "write" else f"{run.phase}: "
    if isinstance(error, SouthboundSetOutcomeUnknown):
        return run.result("unknown", context + error.detail)
    if isinstance(error, SouthboundUnreachable):
        return run.result("unreachable", context + error.detail)
    if isinstance(error, SouthboundRejected):
        blamed = blame_op(run.chunk, error.message) if run.phase == "write" else None
        return run.result("failed", f"{context}{error.code}: {error.message}", blamed)
    return run.result("failed", context + error.detail)


def _refused(session: ConfigSession, run: _Run, error: SouthboundRejected) -> ApplyResult:
    """A refused batch's result, its reason completed from what the switch holds: the ports
    and operator objects the batch names (``refusals.explain``; one Get, on this path only)."""
    if run.phase != "write":
        return _failure(run, error)
    try:
        held: SwitchConfig | None = session.get_tables(REFERENCED_TABLES)
    except SouthboundError as read_error:
        log.warning("%s: reading what the refused batch names: %s", run.switch, read_error)
        held = None
    reason, blamed = explain(error.message, run.chunk, held)
    return run.result(
        "failed", f"{error.code}: {reason}", blamed or blame_op(run.chunk, error.message)
    )


def apply_plan_to_switch(
    session: ConfigSession,
    plan: Plan,
    *,
    batch_size: int = 100,
    pace: GcuPace = DEFAULT_PACE,
    progress: Progress = _no_progress,
    volatile: Volatile = _nothing_volatile,
    sleep: Callable[[float], None] = time.sleep,
) -> ApplyResult:
    """Write ``plan`` in Sets sized for GCU (``gcu_batches``: at most ``batch_size`` ops and
    what GCU applies at ``pace`` within the session's Set deadline, in plan order,
    extension-table writes last), then read back the tables written and compare. An empty
    plan sends nothing. ``sleep`` paces the read-back after an unanswered Set."""
    run = _Run(plan.switch, len(plan.ops))
    max_changes = pace.changes_within(session.set_deadline_s)
    chunks = gcu_batches(plan.ops, batch_size, max_changes)
    try:
        chunks = _settle(session, run, plan.ops, batch_size, max_changes)
        _write(session, run, chunks, pace, progress, volatile, sleep)
        if plan.ops:
            progress(ProgressEvent(plan.switch, "verifying", len(chunks), len(chunks)))
            result = _verify(session, run, run.written, volatile)
        else:
            result = run.result("applied_verified")
    except SouthboundRejected as error:
        result = _refused(session, run, error)
    except SouthboundError as error:
        result = _failure(run, error)
    progress(ProgressEvent(plan.switch, "finished", run.batches_done, len(chunks), result))
    return result


def apply_fleet(
    plans: Mapping[str, Plan],
    sessions: Mapping[str, ConfigSession],
    *,
    max_parallel: int = 8,
    batch_size: int = 100,
    pace: GcuPace = DEFAULT_PACE,
    progress: Progress = _no_progress,
    volatile: Volatile = _nothing_volatile,
) -> dict[str, ApplyResult]:
    """Apply every plan, at most ``max_parallel`` switches at a time. A switch that fails,
    is unreachable or has no session gets its result; it never stops the others."""
    checked_parallel(max_parallel)

    def one(switch: str) -> ApplyResult:
        plan = plans[switch]
        session = sessions.get(switch)
        if session is None:
            return _Run(switch, len(plan.ops)).result("unreachable", "no gNMI session")
        try:
            return apply_plan_to_switch(
                session,
                plan,
                batch_size=batch_size,
                pace=pace,
                progress=progress,
                volatile=volatile,
            )
        except Exception as error:  # a bug for one switch must not cost the others theirs
            log.exception("apply to %s failed unexpectedly", switch)
            return _Run(switch, len(plan.ops)).result(
                "failed", f"internal error: {type(error).__name__}: {error}"
            )

    names = list(plans)
    results = map_parallel(one, names, max_parallel=max_parallel, name="apply")
    return dict(zip(names, results, strict=True))
