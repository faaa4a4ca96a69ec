"""What the on-switch agent can deliver at the intent's interval: warnings, not refusals.

The rules in ``validate.py`` refuse what a switch cannot do at all. These warn where the
controller will push orders the switch accepts but the agent does nothing useful with:

- the agent refuses its orders when a counter group it reads is polled more slowly than it
  runs, or not at all (``flex_counter_table.agent_refusal``: DynaQ's queue watermarks, which
  SONiC polls no faster than 1 s; HDCQ's WRED/ECN queue counters, which not every platform
  publishes); it then holds every dynamic queue at its static fallback;
- from ``NIL_FROM_MS`` on, the agent's measured benefit over that static fallback is nil
  (docs/qos-agent.md, "At a switch's counter intervals", ``bench/agent_intervals.py``);
- the agent runs on SONiC only: a switch whose dialect is ``openconfig`` holds every dynamic
  queue at the static threshold the controller computes (docs/openconfig.md).

A warning is a ``FieldProblem`` (the field, why) the plan carries beside its ops; nothing is
refused because of one.
"""

from __future__ import annotations

from controller.errors import FieldProblem
from controller.intent.models import Dialect, EcnMode, Intent
from controller.sonic.tables.flex_counter_table import agent_refusal

# The shortest interval from which the agent's measured benefit over its static fallback is
# nil: under 0.2 of what the per-packet algorithm gains over that fallback, or, where per
# packet gains nothing, under 3 % better than the fallback itself. Measured with
# `uv run --frozen python -m bench.agent_intervals` (netsim, 1 Gb/s, 60 s; the class mix
# changing every 2 s, seeds 1 and 2, and every 0.1 s, seed 1; docs/qos-agent.md, "At a
# switch's counter intervals", has the tables):
# - MQ-ECN: the agent's figures are its static fallback's (per-queue minimum) at 100 ms, 1 s
#   and 10 s, to within 2 % (bulk slowdown 0.96 against 0.96, probe p99 1.15 ms against
#   1.14 ms): SONiC publishes no queue occupancy, only the watermark, so every queue that
#   passed a packet in the interval looks backlogged and gets its weighted share of K, which
#   is the fallback. Per packet, MQ-ECN gained nothing over it either (1.03).
# - DynaQ: below the 1 s watermark floor the agent cannot run (agent_refusal); at 1 s the
#   worst class's slowdown is 1.16 and at 10 s 1.14 against the fallback's 1.15 (2 s mix),
#   1.37 = 1.37 at both (0.1 s mix): nil. (At 100 ms, on a platform polling watermarks that
#   fast, 1.11: 0.27 of per-packet DynaQ's gain.)
# - HDCQ: short flows' mean FCT -4.1 % at 100 ms, -1.6 % at 1 s, 0 at 10 s (2 s mix); 0 at
#   every interval with an incast every 0.1 s. Per packet it did worse than the fallback
#   (HDCQ's promotion, docs/reproductions.md), so the 3 % gain is the yardstick.
NIL_FROM_MS: dict[EcnMode, int] = {
    EcnMode.MQECN: 100,
    EcnMode.DYNAQ: 1000,
    EcnMode.HDCQ: 1000,
}


def _algorithm(intent: Intent) -> EcnMode | None:
    """The fabric's dynamic algorithm (one per fabric, ``validate.ecn_modes``)."""
    return next((c.ecn for c in intent.service_classes if c.ecn.is_dynamic), None)


def static_on_openconfig(intent: Intent, algorithm: EcnMode) -> list[FieldProblem]:
    """One warning per OpenConfig switch: no agent runs there, its thresholds are static."""
    reason = (
        f"openconfig switch: the on-switch agent is SONiC-only, so its {algorithm.value} "
        "queues keep the static thresholds the controller computes (their fallback; "
        "docs/openconfig.md)"
    )
    return [
        FieldProblem(f"switches[{i}].dialect", reason)
        for i, switch in enumerate(intent.switches)
        if switch.dialect is Dialect.OPENCONFIG
    ]


def agent_warnings(intent: Intent) -> list[FieldProblem]:
    """Where the agent, at ``fabric.agent.interval_ms``, will hold its static fallback or do
    no measurable good, and the switches it does not run on (OpenConfig); empty when
    nothing runs or it helps everywhere."""
    algorithm = _algorithm(intent)
    if algorithm is None:
        return []
    return static_on_openconfig(intent, algorithm) + _interval_warnings(intent, algorithm)


def _interval_warnings(intent: Intent, algorithm: EcnMode) -> list[FieldProblem]:
    interval_ms = intent.fabric.agent.interval_ms
    refusal = agent_refusal(intent.fabric, algorithm)
    if refusal is not None:
        reason = (
            f"the switches' agent will refuse its orders ({refusal}) and hold every "
            f"{algorithm.value} queue at its static fallback"
        )
        return [FieldProblem("fabric.agent.interval_ms", reason)]
    nil_from = NIL_FROM_MS.get(algorithm)
    if nil_from is None or interval_ms < nil_from:
        return []
    reason = (
        f"{algorithm.value} at {interval_ms} ms: measured no benefit over its static fallback "
        f"from {nil_from} ms on (docs/qos-agent.md, 'At a switch's counter intervals')"
    )
    return [FieldProblem("fabric.agent.interval_ms", reason)]
