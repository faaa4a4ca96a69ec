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

A lossless class adds an ingress profile for its priority groups (``BUFFER_PG``), one per
(speed, cable length, MTU) of the switch's ports, named as SONiC's buffer managers name theirs
(sonic-swss cfgmgr/buffermgr.cpp and buffermgrdyn.cpp: ``pg_lossless_<speed in Mb/s>_<cable>_
profile``, ``_mtu<mtu>`` before ``_profile`` when the port's MTU is not SONiC's default 9100)
with sluice's prefix, so it is never the profile buffermgrd makes for the operator's lossless
ports under that name. Its fields: the ingress lossless pool, ``xon``, ``xoff`` and ``size``
from the headroom formula (``controller/qos/lossless.py``), and ``dynamic_th`` for the
group's shared-buffer limit (sonic-buffer-profile.yang; SONiC's own lossless profiles carry
the same four, sonic-buildimage device/*/pg_profile_lookup.ini).

A lossless class's egress queue gets a static profile on the egress lossless pool, as SONiC's
stock buffers give theirs (sonic-buildimage files/build_templates/buffers_config.j2:
``BUFFER_QUEUE|<port>|3-4`` on ``egress_lossless_profile``, whose ``static_th`` is the whole
egress lossless pool in the SKUs' device/*/buffers_defaults_t*.j2, e.g.
Arista-7050CX3-32S-C28S4/BALANCED/buffers_defaults_t1.j2): the queue never refuses what the
ingress priority groups admitted, PFC bounds it instead. sluice's ``static_th`` is the
switch's port buffers summed (in whole KiB): every lossless byte in the switch was admitted
by one port's priority group within that port's buffer, so no queue can reach it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from controller.qos.lossless import Headroom
from controller.sonic.context import PREFIX, PgProfile, SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import INT32_MAX, FieldSpec, TableSchema
from controller.sonic.tables._common import (
    SLUICE_NAME_KEY,
    Entries,
    checked_entries,
    unique_profiles,
)

TABLE = "BUFFER_PROFILE"
# SONiC's port MTU when none is set (sonic-swss cfgmgr/buffermgrdyn.h DEFAULT_MTU_STR): its
# lossless profile names leave the MTU out for it.
SONIC_DEFAULT_MTU = 9100
# The lossless queues' egress profile's name, before its size in KiB.
EGRESS_LOSSLESS = PREFIX + "_egress_lossless_"
LOSSLESS_KEY = PREFIX + r"_pg_lossless_[1-9][0-9]*_[0-9]+(\.[0-9]+)?m(_mtu[1-9][0-9]*)?_profile"


def _one_threshold(fields: Mapping[str, str]) -> str | None:
    """sonic-buffer-profile.yang: a profile's shared limit is dynamic or static, not both."""
    if ("dynamic_th" in fields) == ("static_th" in fields):
        return "exactly one of dynamic_th and static_th is required"
    return None


SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=f"{SLUICE_NAME_KEY}|{LOSSLESS_KEY}",
    fields=(
        FieldSpec("pool", "ref", ref="BUFFER_POOL", required=True),
        FieldSpec("size", "uint", 0, INT32_MAX, required=True),
        FieldSpec("dynamic_th", "int", -8, 7),
        FieldSpec("static_th", "uint", 0, INT32_MAX),
        FieldSpec("xon", "uint", 0, INT32_MAX),
        FieldSpec("xoff", "uint", 0, INT32_MAX),
    ),
    rules=(_one_threshold,),
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


def lossless_name(speed_gbps: int, cable_length_m: float, mtu_bytes: int) -> str:
    """``SLUICE_pg_lossless_100000_5m_profile``; ``..._5m_mtu1500_profile`` off SONiC's
    default MTU. A cable length that is not whole keeps its decimals (``2.5m``)."""
    mtu = "" if mtu_bytes == SONIC_DEFAULT_MTU else f"_mtu{mtu_bytes}"
    return f"{PREFIX}_pg_lossless_{speed_gbps * 1000}_{cable_length_m:g}m{mtu}_profile"


def lossless_profile(name: str, pool: str, room: Headroom, dynamic_th: int) -> PgProfile:
    fields = {
        "pool": pool,
        "xon": str(room.xon_bytes),
        "xoff": str(room.xoff_bytes),
        "size": str(room.size_bytes),
        "dynamic_th": str(dynamic_th),
    }
    SCHEMA.check(name, fields)
    return PgProfile(name, fields)


def egress_lossless_profile(pool: str, switch_buffer_bytes: int) -> PgProfile:
    """``SLUICE_egress_lossless_<KiB>K``: the lossless queues' static egress profile, its
    ``static_th`` the switch's port buffers summed and rounded up to whole KiB (at most
    INT32_MAX). Named by that figure: GCU refuses a ``static_th`` change on a profile in use,
    so a switch whose buffers change moves its lossless queues to another profile, as the
    lossy profiles do."""
    kib = min(-(-switch_buffer_bytes // 1024), INT32_MAX // 1024)
    name = f"{EGRESS_LOSSLESS}{kib}K"
    fields = {"pool": pool, "size": "0", "static_th": str(kib * 1024)}
    SCHEMA.check(name, fields)
    return PgProfile(name, fields)


def build(ctx: SwitchContext) -> Entries:
    profiles: dict[str, Fields] = {}
    for profile in unique_profiles(ctx):
        profiles.update(profile.buffer_profiles)
    for port in ctx.ports:
        if port.lossless is not None:
            profiles[port.lossless.name] = port.lossless.fields
    if ctx.lossless_egress is not None:
        profiles[ctx.lossless_egress.name] = ctx.lossless_egress.fields
    return checked_entries(SCHEMA, profiles)
