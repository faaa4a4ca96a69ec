"""A virtual switch as the gNMI server sees it: a named store, read and written by path.

``Targets`` picks the switch a request is for. A standalone server holds one switch and
ignores the gNMI prefix ``target``, as sonic-gnmi does for origin ``sonic-db``. A fleet
server holds many and requires the prefix target to name one of them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vsonic.answers import read_path
from vsonic.db import (
    CONFIG_DB,
    Config,
    Fields,
    MemoryStore,
    Store,
    read_config,
    redis_key,
)
from vsonic.errors import SchemaViolationError, UnknownTargetError
from vsonic.gcu import (
    ADMIN_DOWN,
    ADMIN_STATUS,
    ADMIN_UP,
    SCOPE_REFUSAL,
    GcuBehaviour,
    emptied_tables,
    flapped_ports,
)
from vsonic.gnmi_codec import json_text
from vsonic.openconfig import OpenConfigTree
from vsonic.paths import DbPath
from vsonic.schema import patch_problems, validate_change
from vsonic.setops import SetOp, apply_ops, changed_entries, mistyped, touched_tables


@dataclass
class Switch:
    name: str
    store: Store
    # sonic-gnmi handles one SetRequest at a time (sonic-net/SONiC
    # doc/mgmt/gnmi/SONiC_GNMI_Server_Interface_Design.md); so does each switch here.
    set_lock: threading.Lock = field(default_factory=threading.Lock)
    gcu: GcuBehaviour = field(default_factory=GcuBehaviour)
    # False models a gNMI server that serves SAMPLE only: ON_CHANGE is refused (Unimplemented).
    on_change: bool = True
    # Every Set operation applied, by path: shows a write that arrived twice.
    applied: Counter[str] = field(default_factory=Counter)
    # Every time a Set took a port admin down and up (GCU's port-critical rule, vsonic/gcu.py),
    # by port: shows a link flap a change caused.
    port_flaps: Counter[str] = field(default_factory=Counter)
    # Origin ``openconfig``: the switch's openconfig-qos tree (vsonic/openconfig.py), for a
    # switch that plays one speaking OpenConfig.
    openconfig: OpenConfigTree = field(default_factory=OpenConfigTree)
    # What its gNMI Capabilities list: ``sonic`` (sonic-db, as sonic-gnmi does) or
    # ``openconfig`` (the OpenConfig models, as a vendor's OpenConfig target does).
    dialect: str = "sonic"
    # The JSON text of table Gets on an in-memory store, by (db, table), with the table's
    # generation when it was encoded (``json_for_get``).
    _encoded: dict[tuple[int, str], tuple[int, bytes]] = field(
        default_factory=dict, init=False, repr=False
    )

    def read_for_get(self, path: DbPath) -> tuple[bool, Any]:
        """``(found, JSON value)`` of ``path`` as sonic-gnmi reads it for a Get
        (``vsonic/answers.py``): a table whose name no redis key starts with fails
        ("Failed to find"); one that reads nothing is not found."""
        found = read_path(self.store, path)
        return (False, None) if found is None else (True, found.json)

    def json_for_get(self, path: DbPath) -> tuple[bool, bytes]:
        """``read_for_get`` encoded as JSON text (``json_text``: sorted keys).

        A table of an in-memory store is encoded once per write to it, not once per Get: the
        text is kept with the table's generation, read before the table, and served while no
        write has moved it. A write between the two reads leaves newer text under an older
        generation, which the next Get sees as moved and encodes again: never stale."""
        store = self.store
        if not isinstance(store, MemoryStore) or path.table is None or path.key is not None:
            found, value = self.read_for_get(path)
            return found, json_text(value) if found else b""
        where = (path.db, path.table)
        generation = store.generation(path.db, path.table)
        cached = self._encoded.get(where)
        if cached is not None and cached[0] == generation:
            return True, cached[1]
        found, value = self.read_for_get(path)
        if not found:
            return False, b""
        text = json_text(value)
        self._encoded[where] = (generation, text)
        return True, text

    def apply(self, ops: list[SetOp]) -> None:
        """Validate the would-be CONFIG_DB of the whole request, then write it in one MULTI/EXEC.

        The lock serialises gNMI Sets on this switch. A writer that goes to Redis directly
        (an operator's redis-cli) is not serialised with it, just as on SONiC, where such
        writes also bypass GCU.
        """
        with self.set_lock:
            # GCU: checkpoint, patch, config save; the model check comes first and refuses all.
            seconds = self.gcu.run_seconds(len(ops))
            if seconds > 0:
                self.gcu.sleep(seconds)
            before = read_config(self.store)
            after = apply_ops(before, ops)
            problems = patch_problems(touched_tables(ops), unmodelled=self.gcu.unmodelled())
            if not problems and emptied_tables(before, after, ops):
                problems = [SCOPE_REFUSAL]
            problems = problems or validate_change(before, after)
            if problems:
                raise SchemaViolationError(problems)
            changes = changed_entries(before, after)
            # The sorter's admin down and up around the port-critical changes (vsonic/gcu.py).
            flapped = flapped_ports(before, after)
            self._admin_status(before, flapped, ADMIN_DOWN)
            flap_s = self.gcu.flap_seconds(len(flapped))
            if flap_s > 0:
                self.gcu.sleep(flap_s)
            self.store.write_atomically(
                CONFIG_DB, {redis_key(CONFIG_DB, t, k): f for (t, k), f in changes.items()}
            )
            self._admin_status(after, flapped, ADMIN_UP)
            self.applied.update(op.path.text() for op in ops)
            self.port_flaps.update(flapped)
            if mistyped(ops):  # written, then GCU finds the config unlike the patch's target
                raise SchemaViolationError([SCOPE_REFUSAL])

    def _admin_status(self, config: Config, ports: list[str], status: str) -> None:
        """``PORT|<port> admin_status`` to ``status`` for each of ``ports``, as GCU's sorted
        changes write it before and after a port's port-critical ones."""
        if not ports:
            return
        writes: dict[str, Fields | None] = {}
        for port in ports:
            fields = dict(config.get(("PORT", port), {}))
            fields[ADMIN_STATUS] = status
            writes[redis_key(CONFIG_DB, "PORT", port)] = fields
        self.store.write_atomically(CONFIG_DB, writes)


class Targets:
    """The switches one gNMI server answers for."""

    def __init__(self, switches: Iterable[Switch], fleet: bool) -> None:
        self._switches = {s.name: s for s in switches}
        self.fleet = fleet
        if not self._switches:
            raise ValueError("a gNMI server needs at least one switch")
        if not fleet and len(self._switches) != 1:
            raise ValueError("a standalone server holds exactly one switch; use fleet mode")

    def names(self) -> list[str]:
        return sorted(self._switches)

    def resolve(self, target: str) -> Switch:
        if not self.fleet:
            return next(iter(self._switches.values()))
        if not target:
            raise UnknownTargetError("fleet mode: set the gNMI prefix target to a switch name")
        switch = self._switches.get(target)
        if switch is None:
            raise UnknownTargetError(f"fleet mode: no switch named {target!r} is served here")
        return switch
