"""Generated from agents/qos-agent/yang/sonic-sluice-agent.yang by scripts/gen_sluice_yang.py.

The fields of SLUICE_AGENT and SLUICE_AGENT_QUEUE as the YANG model defines them; the
table modules add the cross-field rules (the model's ``must`` statements)."""

from __future__ import annotations

from controller.sonic.schema import FieldSpec

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
