"""BUFFER_PROFILE: egress queue buffer limits, ``SLUICE_BUF_<speed>G_<digest>``.

Each profile draws from the fabric's existing egress pool (BUFFER_POOL is the operator's, never
sluice's), reserves ``size`` bytes and caps the shared part with the Choudhury-Hahne dynamic
threshold: a queue may grow while it is below alpha x (free pool), alpha = 2^dynamic_th
(sonic-buffer-profile.yang; SAI saibuffer.h).

One profile per port group (speed and egress buffer), named by what cannot change in place:
the group, and a digest of its buffer, pool and reserve. GCU lets ``dynamic_th`` be replaced
on a profile in use (sonic-utilities ``gcu_field_operation_validators.conf.json``, "Dynamic
threshold tuning") and refuses other field changes, and orchagent ignores a pool change on a
profile in use. So a new ``dynamic_th`` (it follows K, and so the fabric's lambda) is a field
change on the same profile, while a new pool or reserve is a new profile and the queues are
repointed to it: ``BUFFER_QUEUE`` changes take the port down (``controller/sonic/gcu.py``),
and only a change of the intent's structure (pool, MTU, a port's buffer) makes them.
"""

from __future__ import annotations

import hashlib

from controller.sonic.context import PREFIX, SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import INT32_MAX, FieldSpec, TableSchema
from controller.sonic.tables._common import (
    SLUICE_NAME_KEY,
    Entries,
    checked_entries,
    unique_profiles,
)

TABLE = "BUFFER_PROFILE"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=SLUICE_NAME_KEY,
    fields=(
        FieldSpec("pool", "ref", ref="BUFFER_POOL", required=True),
        FieldSpec("size", "uint", 0, INT32_MAX, required=True),
        FieldSpec("dynamic_th", "int", -8, 7, required=True),
    ),
)


def profile_fields(pool: str, reserve_bytes: int, dynamic_th: int) -> Fields:
    return {"pool": pool, "size": str(reserve_bytes), "dynamic_th": str(dynamic_th)}


# The fields a profile in use cannot change: a new value is a new profile.
FIXED_FIELDS = ("pool", "size")


def profile_name(speed_gbps: int, buffer_bytes: int, fields: Fields) -> str:
    """``SLUICE_BUF_25G_<8 hex>``: the port group, and a digest of the port buffer and the
    fields fixed for a profile in use; ``dynamic_th`` is left out, so it changes in place."""
    fixed = ";".join(f"{k}={fields[k]}" for k in FIXED_FIELDS)
    digest = hashlib.sha256(f"buffer={buffer_bytes};{fixed}".encode()).hexdigest()[:8]
    return f"{PREFIX}_BUF_{speed_gbps}G_{digest}"


def build(ctx: SwitchContext) -> Entries:
    profiles: dict[str, Fields] = {}
    for profile in unique_profiles(ctx):
        profiles.update(profile.buffer_profiles)
    return checked_entries(SCHEMA, profiles)
