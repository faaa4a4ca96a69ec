"""Why a switch refused a batch, in words an operator can act on. Pure, but for one read.

On a SONiC switch every CONFIG_DB Set is a GCU run that validates the patched config against
the YANG models with libyang, and the client of sonic-gnmi gets only the first line of GCU's
error output that says "Error" (sonic-net/sonic-host-services host_modules/gcu.py): for every
YANG refusal (a leafref, a range, a ``must``) that is ``Validate json patch: [<the patch>]
failed due to: Data Loading Failed``. libyang's reason (which entry, which leaf) is lost.

A compiled config has passed sluice's own check of every field and of every reference
between sluice's entries (``controller/sonic/schema.py``, ``compile.check_references``) before
it reaches a switch. What the compiler cannot know is what the switch holds: its ports, and
the operator's objects sluice's entries name (the ``BUFFER_POOL`` of a buffer profile). After
a refusal those are read and the refused batch is checked against them, so the reason names
the entry, the field and the object the switch lacks. When that finds nothing, the reason says
where libyang's own words are (GCU's dry run on the switch).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from controller.sonic.model import Op, SwitchConfig
from controller.sonic.tables import SCHEMAS

PORT_TABLE = "PORT"
# The tables sluice's fields name but never writes (BUFFER_POOL: the operator's pools).
OPERATOR_TABLES = frozenset(
    spec.ref
    for schema in SCHEMAS.values()
    for spec in schema.references()
    if spec.ref is not None and spec.ref not in SCHEMAS
)
REFERENCED_TABLES = OPERATOR_TABLES | {PORT_TABLE}
_PORT_NAME = re.compile(r"Ethernet[0-9]+")
# GCU's words for a YANG refusal (sonic-utilities generic_config_updater/gu_common.py).
YANG_REFUSAL = "Data Loading Failed"
# GCU's words when it refuses a patch before validating it (generic_updater.py): all it says.
SCOPE_REFUSAL = "Failed to apply patch on the following scopes"
# The patch GCU repeats in its message, as a Python list: everything the batch wrote.
_PATCH_REPR = re.compile(r"Validate json patch: \[.*\] failed due to", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Unmet:
    """An op of the refused batch names ``table|name`` (through ``field``, or its key when
    ``field`` is None), which the switch does not hold."""

    op: Op
    field: str | None
    table: str
    name: str

    @property
    def naming(self) -> str:
        via = f"field '{self.field}'" if self.field else "key"
        return f"{via} of {self.op.table}|{self.op.key}"


def describe_unmet(unmet: Sequence[Unmet]) -> str:
    """One clause per missing object: ``the switch has no PORT|Ethernet200 (named by the key
    of QUEUE|Ethernet200|1 and 12 more entries)``."""
    by_object: dict[tuple[str, str], list[Unmet]] = {}
    for item in unmet:
        by_object.setdefault((item.table, item.name), []).append(item)
    clauses = []
    for (table, name), items in by_object.items():
        more = f" and {len(items) - 1} more entries" if len(items) > 1 else ""
        clauses.append(f"the switch has no {table}|{name} (named by the {items[0].naming}{more})")
    return "; ".join(clauses)


def _named(op: Op) -> Iterable[tuple[str | None, str, str]]:
    """(field or None for the key, table, name) of every switch-held object ``op`` names."""
    port = op.key.split("|", 1)[0]
    if _PORT_NAME.fullmatch(port):
        yield None, PORT_TABLE, port
    schema = SCHEMAS.get(op.table)
    for spec in schema.references() if schema is not None else ():
        value = op.fields.get(spec.name)
        if spec.ref in OPERATOR_TABLES and value is not None:
            yield spec.name, spec.ref, value


def unmet_references(ops: Sequence[Op], held: SwitchConfig) -> list[Unmet]:
    """The ports and operator objects the written ops of ``ops`` name that ``held`` (the
    switch's ``REFERENCED_TABLES``) lacks, in op order."""
    present: dict[str, set[str]] = {}
    for table, key in held:
        present.setdefault(table, set()).add(key)
    unmet: list[Unmet] = []
    for op in ops:
        if op.kind == "delete":
            continue
        for field, table, name in _named(op):
            if name not in present.get(table, ()):
                unmet.append(Unmet(op, field, table, name))
    return unmet


def shortened(message: str, ops: int) -> str:
    """GCU's message without the patch it repeats (every op of the batch, as a Python
    list): the ops are in the result already, and the patch of a rollout runs to kilobytes."""
    return _PATCH_REPR.sub(f"Validate json patch: [{ops} operation(s)] failed due to", message)


def explain(message: str, ops: Sequence[Op], held: SwitchConfig | None) -> tuple[str, Op | None]:
    """The reason for a refused batch and the op to blame (None: no op found). ``held``: the
    switch's ``REFERENCED_TABLES`` read after the refusal (None: the read failed)."""
    said = shortened(message, len(ops))
    unmet = unmet_references(ops, held) if held is not None else []
    if unmet:
        return f"{said} — {describe_unmet(unmet)}", unmet[0].op
    if YANG_REFUSAL in message:
        return (
            f"{said} — the switch's YANG validation refused the batch and GCU does not pass "
            "libyang's reason on; `config apply-patch --dry-run` with the batch's patch on the "
            "switch prints it",
            None,
        )
    if SCOPE_REFUSAL in message:
        return (
            f"{said} — GCU refused the batch before validating it: a table without a YANG "
            "model, a table left without entries, or a field GCU's table validators do not "
            "let change (every BUFFER_POOL field; a BUFFER_PROFILE's size or pool)",
            None,
        )
    return said, None
