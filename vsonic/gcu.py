"""How a SONiC switch applies a CONFIG_DB Set: as one Generic Config Updater (GCU) run.

sonic-gnmi does not write Redis for a CONFIG_DB Set: it asks the host service over D-Bus to
create a checkpoint, hands GCU the request as one JSON Patch, then saves the config
(sonic-net/sonic-gnmi:sonic_data_client/mixed_db_client.go ``SetIncrementalConfig``). That
takes seconds to minutes on a switch CPU (sonic-net/sonic-gnmi#784: 19.5 s on average for a
10-entry patch) and carries on when the client stops waiting: the Go handler does not pass
the call's context to the D-Bus call. ``GcuBehaviour`` lets a virtual switch take that long
(a time per Set for checkpoint and save, and a time per operation for the patch) and refuse
what GCU refuses before it validates anything: a patch that touches a table without a YANG
model (sonic-net/sonic-utilities:generic_config_updater/generic_updater.py, the check
``validate_config_db_patch_has_yang_models``) and one that leaves a table empty
(``emptied_tables``); a gNMI client reads either as ``SCOPE_REFUSAL``. A refused patch
changes nothing.

GCU's PatchSorter also takes a port admin down before any change to its port-critical entries
and up again after them (sonic-net/sonic-utilities:generic_config_updater/patch_sorter.py,
``RequiredValueIdentifier``: ``QUEUE``, ``BUFFER_QUEUE``, ``BUFFER_PG`` keyed ``<port>|...``,
``PORT_QOS_MAP``, ``BUFFER_PORT_INGRESS_PROFILE_LIST`` and ``BUFFER_PORT_EGRESS_PROFILE_LIST``
keyed ``<port>``), each a change of its own: ``flapped_ports`` says which ports a patch
takes down, and the switch writes ``PORT|<port> admin_status`` down and back up around it.
A port whose ``admin_status`` is already down (or unset: GCU's default is down) is not
touched, nor a port with no ``PORT`` entry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from vsonic.db import Config
from vsonic.schema import GCU_SCOPE_REFUSAL, SLUICE_YANG_TABLES
from vsonic.setops import OpKind, SetOp

# What GCU's refusals before validation read as, and sluice's tables (one home:
# vsonic/schema.py, where the model check runs).
SCOPE_REFUSAL = GCU_SCOPE_REFUSAL
SLUICE_TABLES = SLUICE_YANG_TABLES

# patch_sorter.py RequiredValueIdentifier: "required_pattern": ["PORT", "@", "admin_status"],
# "required_value": "down", "default_value": "down", and the "requiring_patterns".
PORT_CRITICAL_TABLES = frozenset(
    {
        "BUFFER_PG",
        "BUFFER_PORT_EGRESS_PROFILE_LIST",
        "BUFFER_PORT_INGRESS_PROFILE_LIST",
        "BUFFER_QUEUE",
        "PORT_QOS_MAP",
        "QUEUE",
    }
)
ADMIN_STATUS = "admin_status"
ADMIN_DOWN = "down"
ADMIN_UP = "up"
# Changes the sorter adds per port it takes down: admin down, admin up.
FLAP_CHANGES = 2


def emptied_tables(before: Config, after: Config, ops: Iterable[SetOp]) -> list[str]:
    """The tables a patch leaves without entries but does not remove: GCU refuses such a patch
    ("will result in empty tables which is not allowed in ConfigDb"), so the last entry of a
    table goes by deleting the table path."""
    had = {table for table, _ in before}
    has = {table for table, _ in after}
    removed = {
        str(op.path.table)
        for op in ops
        if op.path.key is None
        and (op.kind is OpKind.DELETE or (op.kind is OpKind.REPLACE and op.value is None))
    }
    return sorted(had - has - removed)


def _critical_ports(entries: Iterable[tuple[str, str]]) -> set[str]:
    return {key.split("|", 1)[0] for table, key in entries if table in PORT_CRITICAL_TABLES}


def flapped_ports(before: Config, after: Config) -> list[str]:
    """The ports whose port-critical entries differ between ``before`` and ``after`` and
    that GCU would take admin down for it: those with a ``PORT`` entry whose admin status is
    not already down (``get_value_or_default``: unset reads as down; no entry, no flap)."""
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    ports = []
    for port in sorted(_critical_ports(changed)):
        entry = before.get(("PORT", port))
        if entry is not None and entry.get(ADMIN_STATUS, ADMIN_DOWN) != ADMIN_DOWN:
            ports.append(port)
    return ports


@dataclass(frozen=True)
class GcuBehaviour:
    """``per_set_s``: checkpoint and config save, paid once per Set; ``per_op_s``: the patch,
    per operation. ``yang_extension``: False for a switch without sluice's YANG extension,
    which refuses every patch touching ``SLUICE_TABLES`` (``schema.patch_problems``).
    ``sleep`` is passed in."""

    per_set_s: float = 0.0
    per_op_s: float = 0.0
    yang_extension: bool = True
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.per_set_s < 0 or self.per_op_s < 0:
            raise ValueError("GCU pacing times must not be negative")

    def run_seconds(self, op_count: int) -> float:
        """How long GCU takes for a Set of ``op_count`` operations."""
        return self.per_set_s + self.per_op_s * op_count

    def flap_seconds(self, ports: int) -> float:
        """What taking ``ports`` ports down and up adds: two changes each."""
        return self.per_op_s * FLAP_CHANGES * ports

    def unmodelled(self) -> frozenset[str]:
        """The tables this switch has no YANG model for."""
        return frozenset() if self.yang_extension else SLUICE_TABLES
