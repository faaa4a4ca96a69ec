"""Generated from agents/qos-agent/yang/sonic-sluice-agent.yang by scripts/gen_sluice_yang.py.

What a switch with sonic-sluice-agent.yang installed accepts in SLUICE_AGENT and
SLUICE_AGENT_QUEUE: fields, mandatory ones, and the model's cross-field rules (its
``must`` statements, each with the model's error-message)."""

from __future__ import annotations

from vsonic.schema_types import BOOLEAN, Decimal, FieldType, Integer, Must, OneOf, Ref, Text

AGENT_KEY = "global"
QUEUE_INDEX_MAX = 7

AGENT_FIELDS: dict[str, FieldType] = {
    "algorithm": OneOf(("static", "mqecn", "dynaq", "hdcq")),
    "interval_ms": Integer(1, 60000),
    "rtt_us": Decimal(0.000001, 100000, fraction_digits=6),
    "lambda": Decimal(0.000001, 10, fraction_digits=6),
    "hysteresis_pct": Decimal(0, 50, fraction_digits=6),
    "hdcq_k": Decimal(0.000001, 0.999999, fraction_digits=6),
    "stale_after_ms": Integer(1, 600000),
    "queues": Text(r"([0-7](,[0-7])*)?", "a string matching ([0-7](,[0-7])*)?"),
    "version": Text(r"[0-9a-f]{1,64}", "a string matching [0-9a-f]{1,64}"),
}
AGENT_MANDATORY = (
    "algorithm",
    "interval_ms",
    "rtt_us",
    "lambda",
    "hysteresis_pct",
    "hdcq_k",
    "stale_after_ms",
    "queues",
    "version",
)
AGENT_MUSTS: tuple[Must, ...] = ()

AGENT_QUEUE_FIELDS: dict[str, FieldType] = {
    "managed": BOOLEAN,
    "wred_profile": Ref("WRED_PROFILE"),
    "weight": Integer(0, 100),
    "floor_bytes": Integer(0, 2147483647),
    "ceiling_bytes": Integer(0, 2147483647),
    "static_bytes": Integer(0, 2147483647),
    "speed_gbps": Integer(1, 800),
    "buffer_bytes": Integer(1, 4294967295),
    "port_threshold_bytes": Integer(0, 4294967295),
    "lambda": Decimal(0.000001, 10, fraction_digits=6),
}
AGENT_QUEUE_MANDATORY = (
    "weight",
    "speed_gbps",
    "buffer_bytes",
)
AGENT_QUEUE_MUSTS: tuple[Must, ...] = (
    Must(
        "needs",
        "A managed queue needs wred_profile, floor_bytes, ceiling_bytes and static_bytes",
        switch="managed",
        value="false",
        default="true",
        fields=("wred_profile", "floor_bytes", "ceiling_bytes", "static_bytes"),
    ),
    Must(
        "only_when",
        "wred_profile is only for a managed queue",
        leaf="wred_profile",
        switch="managed",
        value="true",
        default="true",
    ),
    Must(
        "only_when",
        "floor_bytes is only for a managed queue",
        leaf="floor_bytes",
        switch="managed",
        value="true",
        default="true",
    ),
    Must(
        "only_when",
        "ceiling_bytes is only for a managed queue",
        leaf="ceiling_bytes",
        switch="managed",
        value="true",
        default="true",
    ),
    Must(
        "at_least",
        "ceiling_bytes must be greater than or equal to floor_bytes",
        leaf="ceiling_bytes",
        other="floor_bytes",
    ),
    Must(
        "only_when",
        "static_bytes is only for a managed queue",
        leaf="static_bytes",
        switch="managed",
        value="true",
        default="true",
    ),
    Must(
        "at_least",
        "static_bytes must lie between floor_bytes and ceiling_bytes",
        leaf="static_bytes",
        other="floor_bytes",
    ),
    Must(
        "at_most",
        "static_bytes must lie between floor_bytes and ceiling_bytes",
        leaf="static_bytes",
        other="ceiling_bytes",
    ),
    Must(
        "only_when",
        "port_threshold_bytes is only for a managed queue",
        leaf="port_threshold_bytes",
        switch="managed",
        value="true",
        default="true",
    ),
    Must(
        "only_when",
        "lambda is only for a managed queue",
        leaf="lambda",
        switch="managed",
        value="true",
        default="true",
    ),
)
