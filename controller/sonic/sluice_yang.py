"""Generated from agents/qos-agent/yang/sonic-sluice-agent.yang by scripts/gen_sluice_yang.py.

The fields of SLUICE_AGENT and SLUICE_AGENT_QUEUE as the YANG model defines them, and
its cross-field rules (its ``must`` statements, each with the model's error-message).
"""

from __future__ import annotations

from controller.sonic.schema import FieldSpec, Rule, at_least, at_most, needs, only_when

AGENT_KEY_PATTERN = r"global"
QUEUE_INDEX_MAX = 7

AGENT_FIELDS = (
    FieldSpec("algorithm", "enum", choices=("static", "mqecn", "dynaq", "hdcq"), required=True),
    FieldSpec("interval_ms", "uint", 1, 60000, required=True),
    FieldSpec(
        "rtt_us", "decimal", decimal_range=("0.000001", "100000"), fraction_digits=6, required=True
    ),
    FieldSpec(
        "lambda", "decimal", decimal_range=("0.000001", "10"), fraction_digits=6, required=True
    ),
    FieldSpec(
        "hysteresis_pct", "decimal", decimal_range=("0", "50"), fraction_digits=6, required=True
    ),
    FieldSpec(
        "hdcq_k",
        "decimal",
        decimal_range=("0.000001", "0.999999"),
        fraction_digits=6,
        required=True,
    ),
    FieldSpec("stale_after_ms", "uint", 1, 600000, required=True),
    FieldSpec("queues", "string", pattern=r"([0-7](,[0-7])*)?", required=True),
    FieldSpec("version", "string", pattern=r"[0-9a-f]{1,64}", required=True),
)
AGENT_MUSTS: tuple[Rule, ...] = ()

AGENT_QUEUE_FIELDS = (
    FieldSpec("managed", "bool"),
    FieldSpec("wred_profile", "ref", ref="WRED_PROFILE"),
    FieldSpec("weight", "uint", 0, 100, required=True),
    FieldSpec("floor_bytes", "uint", 0, 2147483647),
    FieldSpec("ceiling_bytes", "uint", 0, 2147483647),
    FieldSpec("static_bytes", "uint", 0, 2147483647),
    FieldSpec("speed_gbps", "uint", 1, 800, required=True),
    FieldSpec("buffer_bytes", "uint", 1, 4294967295, required=True),
    FieldSpec("port_threshold_bytes", "uint", 0, 4294967295),
    FieldSpec("lambda", "decimal", decimal_range=("0.000001", "10"), fraction_digits=6),
)
AGENT_QUEUE_MUSTS: tuple[Rule, ...] = (
    needs(
        ("wred_profile", "floor_bytes", "ceiling_bytes", "static_bytes"),
        unless=("managed", "false"),
        default="true",
        message="A managed queue needs wred_profile, floor_bytes, ceiling_bytes and static_bytes",
    ),
    only_when(
        "wred_profile",
        ("managed", "true"),
        default="true",
        message="wred_profile is only for a managed queue",
    ),
    only_when(
        "floor_bytes",
        ("managed", "true"),
        default="true",
        message="floor_bytes is only for a managed queue",
    ),
    only_when(
        "ceiling_bytes",
        ("managed", "true"),
        default="true",
        message="ceiling_bytes is only for a managed queue",
    ),
    at_least(
        "ceiling_bytes",
        "floor_bytes",
        message="ceiling_bytes must be greater than or equal to floor_bytes",
    ),
    only_when(
        "static_bytes",
        ("managed", "true"),
        default="true",
        message="static_bytes is only for a managed queue",
    ),
    at_least(
        "static_bytes",
        "floor_bytes",
        message="static_bytes must lie between floor_bytes and ceiling_bytes",
    ),
    at_most(
        "static_bytes",
        "ceiling_bytes",
        message="static_bytes must lie between floor_bytes and ceiling_bytes",
    ),
    only_when(
        "port_threshold_bytes",
        ("managed", "true"),
        default="true",
        message="port_threshold_bytes is only for a managed queue",
    ),
    only_when(
        "lambda", ("managed", "true"), default="true", message="lambda is only for a managed queue"
    ),
)
