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
``validate_config_db_patch_has_yang_models``). A refused patch changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from vsonic.schema import GCU_NO_YANG_MESSAGE, SLUICE_YANG_TABLES

# GCU's own words, and sluice's tables (one home: vsonic/schema.py, where the check runs).
NO_YANG_MODEL = GCU_NO_YANG_MESSAGE
SLUICE_TABLES = SLUICE_YANG_TABLES


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

    def unmodelled(self) -> frozenset[str]:
        """The tables this switch has no YANG model for."""
        return frozenset() if self.yang_extension else SLUICE_TABLES
