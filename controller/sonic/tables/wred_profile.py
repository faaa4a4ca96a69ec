"""WRED_PROFILE: ECN marking (or, for DynaQ, dropping) thresholds in bytes.

Key: the profile name, ``SLUICE_``-prefixed and at most 32 characters
(sonic-wred-profile.yang: ``[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}``). A name says what the profile
is for, never what it holds, so a new threshold (a lambda or a weight the tuner moved) is a
field change on the same profile. Pointing a queue at another profile is a change to
``QUEUE``, which SONiC's config updater applies with the port taken admin down and up
(``controller/sonic/gcu.py``); a threshold change on the profile touches no port.

- A static queue (standard ECN, per-queue minimum) shares ``SLUICE_WRED_<speed>G_Q<queue>``
  with that queue on every port of its speed: its thresholds depend on the port speed and the
  class only, so a 64-port switch gets one profile per speed and queue, not 512.
- A dynamic queue (MQ-ECN, HDCQ, DynaQ) has its own ``SLUICE_Q_<port>_<queue>``, whose
  thresholds the on-switch agent rewrites at run time; the compiler writes the static
  fallback as the start value.

Before stable names, static profiles were named by a digest of their values
(``SLUICE_WRED_<speed>G_<8 hex>``), so every new threshold meant a new profile and every queue
repointed to it. A switch still running those is moved by one plan: the new profiles are
added, the queues repointed (port-critical, named in the plan) and the old profiles deleted.

Marking is DCTCP-style step marking (MQ-ECN, NSDI 2016 §2: mark when the instantaneous
queue exceeds K): min = max = K, so the marking probability jumps from 0 to the configured
maximum at K instead of ramping. qosorch sets SAI_WRED_ATTR_WEIGHT = 0 (sonic-swss
orchagent/qosorch.cpp WredMapHandler), so the switch compares the instantaneous queue, not an
average, as DCTCP wants. All three colours get
the same values: hosts do not colour traffic, and leaving yellow/red at their default
threshold of 0 under ``ecn_all`` would mark every such packet.
"""

from __future__ import annotations

from controller.errors import CompiledConfigInvalid
from controller.qos.lossless import DcqcnEcn
from controller.sonic.context import PREFIX, SwitchContext, dynamic_wred_name
from controller.sonic.model import Fields
from controller.sonic.schema import INT32_MAX, FieldSpec, TableSchema, min_le_max
from controller.sonic.tables._common import (
    SLUICE_NAME_KEY,
    Entries,
    check_port_name,
    checked_entries,
    unique_profiles,
)

TABLE = "WRED_PROFILE"
COLOURS = ("green", "yellow", "red")
ECN_MODES = (
    "ecn_none",
    "ecn_green",
    "ecn_yellow",
    "ecn_red",
    "ecn_green_yellow",
    "ecn_green_red",
    "ecn_yellow_red",
    "ecn_all",
)
THRESHOLD_FIELDS = tuple(f"{c}_{edge}_threshold" for c in COLOURS for edge in ("min", "max"))
DYNAMIC_PREFIX = f"{PREFIX}_Q_"


def _colour_fields(colour: str) -> tuple[FieldSpec, ...]:
    return (
        FieldSpec(f"{colour}_min_threshold", "uint", 0, INT32_MAX),
        FieldSpec(f"{colour}_max_threshold", "uint", 0, INT32_MAX),
        FieldSpec(f"{colour}_drop_probability", "uint", 0, 100),
        FieldSpec(f"wred_{colour}_enable", "bool"),
    )


SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=SLUICE_NAME_KEY,
    fields=(
        *(spec for colour in COLOURS for spec in _colour_fields(colour)),
        FieldSpec("ecn", "enum", choices=ECN_MODES, required=True),
    ),
    rules=tuple(min_le_max(f"{c}_min_threshold", f"{c}_max_threshold") for c in COLOURS),
    agent_key_prefix=DYNAMIC_PREFIX,
    agent_fields=frozenset(THRESHOLD_FIELDS),
)


def profile_fields(threshold_bytes: int, *, mark: bool, probability_pct: int) -> Fields:
    """Step profile at ``threshold_bytes``: marks (ECN) or, with ``mark`` false, drops."""
    return ramp_fields(threshold_bytes, threshold_bytes, mark=mark, probability_pct=probability_pct)


def ramp_fields(min_bytes: int, max_bytes: int, *, mark: bool, probability_pct: int) -> Fields:
    """RED-like profile: no mark below ``min_bytes``, probability rising to
    ``probability_pct`` at ``max_bytes``, every packet above; the same on every colour."""
    fields: Fields = {}
    for colour in COLOURS:
        fields[f"{colour}_min_threshold"] = str(min_bytes)
        fields[f"{colour}_max_threshold"] = str(max_bytes)
        fields[f"{colour}_drop_probability"] = str(probability_pct)
        fields[f"wred_{colour}_enable"] = "true"
    fields["ecn"] = "ecn_all" if mark else "ecn_none"
    return fields


def dcqcn_fields(ecn: DcqcnEcn) -> Fields:
    """A lossless queue's DCQCN marking (SIGCOMM 2015): Kmin, Kmax and Pmax as the green
    (and, as SONiC's own lossless profile ``AZURE_LOSSLESS`` in sonic-buildimage
    files/build_templates/qos_config.j2 has it, yellow and red) thresholds, ``ecn_all``."""
    return ramp_fields(ecn.kmin_bytes, ecn.kmax_bytes, mark=True, probability_pct=ecn.pmax_pct)


def dcqcn_name(queue: int) -> str:
    """``SLUICE_DCQCN_Q3``: a lossless queue's profile, the same at every speed (DCQCN's
    thresholds are the class's, not the port's)."""
    return f"{PREFIX}_DCQCN_Q{queue}"


def static_name(speed_gbps: int, queue: int) -> str:
    """The shared profile of ``queue`` on the ports of one speed: ``SLUICE_WRED_25G_Q3``.
    Stable: the thresholds change in place, never the name."""
    return f"{PREFIX}_WRED_{speed_gbps}G_Q{queue}"


def build(ctx: SwitchContext) -> Entries:
    """The shared static profiles the switch's ports use, then each dynamic queue's own."""
    static: dict[str, Fields] = {}
    for profile in unique_profiles(ctx):
        for name, fields in profile.static_wred.items():
            # Ports of one speed with different buffers share the profile: a static
            # threshold depends on the speed and the class only, never on the buffer.
            if static.setdefault(name, fields) != fields:
                raise CompiledConfigInvalid(f"{TABLE}|{name}: two port profiles disagree")
    out = checked_entries(SCHEMA, static)
    out.update(_dynamic_entries(ctx))
    return out


def _dynamic_entries(ctx: SwitchContext) -> Entries:
    # Validated in full on the first port of each profile; the start values depend on the
    # queue only, and the name on the port, whose name is checked for the others.
    out: Entries = {}
    checked: set[int] = set()
    for port in ctx.ports:
        fresh = id(port.profile) not in checked
        if not fresh:
            check_port_name(SCHEMA, port.name)
        checked.add(id(port.profile))
        for queue in port.profile.queues:
            if queue.bounds is None or queue.wred_fields is None:
                continue
            name = dynamic_wred_name(port.name, queue.queue)
            if fresh:
                SCHEMA.check(name, queue.wred_fields)
            out[(TABLE, name)] = dict(queue.wred_fields)
    return out
