"""BUFFER_PROFILE: egress queue buffer limits, ``SLUICE_BUF_<digest>``.

Each profile draws from the fabric's existing egress pool (BUFFER_POOL is the operator's, never
sluice's), reserves ``size`` bytes and caps the shared part with the Choudhury-Hahne dynamic
threshold: a queue may grow while it is below alpha x (free pool), alpha = 2^dynamic_th
(sonic-buffer-profile.yang; SAI saibuffer.h). Names are content-addressed: on hardware,
fields other than dynamic_th cannot be changed in place (sonic-utilities
gcu_field_operation_validators.conf.json), so new values mean a new profile and the old one is
deleted once no queue names it.
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


def profile_name(fields: Fields) -> str:
    canonical = ";".join(f"{k}={fields[k]}" for k in sorted(fields))
    return f"{PREFIX}_BUF_{hashlib.sha256(canonical.encode()).hexdigest()[:8]}"


def build(ctx: SwitchContext) -> Entries:
    profiles: dict[str, Fields] = {}
    for profile in unique_profiles(ctx):
        profiles.update(profile.buffer_profiles)
    return checked_entries(SCHEMA, profiles)
