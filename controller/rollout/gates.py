"""Health gates of a rollout: values in, verdicts out (pure; the reads are at the edge).

A rollout's policy names gates. Each gate is a PromQL expression whose value is one number:
a built-in check of the health model (``BUILTINS``, scoped to the switches of the batch) or
a raw expression the operator writes. Before a batch is applied the runner reads every gate
(its *baseline*); after the batch is applied and verified it waits ``soak_s`` (on its own
clock, coming back rather than blocking) and reads them again. A gate passes when

- ``comparison = "absolute"``: value <= threshold;
- ``comparison = "max_increase_pct"``: value <= baseline * (1 + threshold / 100)
  (a baseline of 0 allows no increase at all).

A gate with no value (the query answered nothing) fails: a batch that silenced its own
telemetry has not shown it is healthy. Pre-checks read every gate once before the rollout
starts and refuse it when an ``absolute`` gate already fails (a relative gate has no baseline
yet, so only its presence of data is checked), unless the operator forces it.

The comparison to a baseline and a soak window follow the progressive-delivery practice of
Flagger (docs.flagger.app, "Metrics analysis": a threshold range per metric checked every
interval) and Argo Rollouts (argo-rollouts.readthedocs.io, "Analysis": ``successCondition``
per measurement); the failure policy is sluice's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Comparison = Literal["absolute", "max_increase_pct"]
OnFail = Literal["rollback_batch", "rollback_all", "halt"]
Verdict = Literal["pass", "fail"]
Stage = Literal["precheck", "baseline", "soak"]

COMPARISONS: tuple[Comparison, ...] = ("absolute", "max_increase_pct")
ON_FAIL: tuple[OnFail, ...] = ("rollback_batch", "rollback_all", "halt")
SWITCHES_PLACEHOLDER = "$switches"

# The health model's checks (controller/telemetry/health.py) as one number over the switches
# of a batch, in the collector's metric names (docs/telemetry.md). ``$switches`` becomes a
# regular expression matching exactly those switch names.
BUILTINS: Mapping[str, str] = {
    # dropped packets/s summed over every queue of the batch's switches
    "drops": 'sum(sluice_queue_dropped_packets_per_second{switch=~"$switches"})',
    # the worst ECN mark fraction of any queue
    "mark_fraction": 'max(sluice_queue_mark_fraction{switch=~"$switches"})',
    # the largest queue occupancy in bytes
    "occupancy": 'max(sluice_queue_occupancy_bytes{switch=~"$switches"})',
    # queues whose agent threshold is on its stale fallback, plus agents in fallback mode
    "agent_fallback": (
        'count(sluice_queue_threshold_info{switch=~"$switches",basis="stale_fallback"}'
        ' or sluice_agent_mode_info{switch=~"$switches",mode="fallback"}) or vector(0)'
    ),
}
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")


class GatePolicyInvalid(ValueError):
    """A gate policy that cannot be evaluated (unknown built-in, bad comparison, ...)."""


@dataclass(frozen=True, slots=True)
class Gate:
    """One check: ``builtin`` names one of ``BUILTINS``; else ``query`` is raw PromQL."""

    name: str
    threshold: float
    comparison: Comparison = "absolute"
    builtin: str | None = None
    query: str | None = None

    def expression(self, switches: Sequence[str]) -> str:
        """The PromQL to read for a batch of ``switches`` (all of the rollout for pre-checks)."""
        text = BUILTINS[self.builtin] if self.builtin is not None else (self.query or "")
        return text.replace(SWITCHES_PLACEHOLDER, switches_regex(switches))


@dataclass(frozen=True, slots=True)
class GatePolicy:
    gates: tuple[Gate, ...] = ()
    soak_s: float = 0.0
    on_fail: OnFail = "rollback_batch"
    force: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "gates": [
                {
                    "name": g.name,
                    "threshold": g.threshold,
                    "comparison": g.comparison,
                    "builtin": g.builtin,
                    "query": g.query,
                }
                for g in self.gates
            ],
            "soak_s": self.soak_s,
            "on_fail": self.on_fail,
            "force": self.force,
        }


def parse_policy(data: Mapping[str, Any] | None) -> GatePolicy | None:
    """A policy from its JSON form (``GatePolicy.to_json``; the API and CLI send it)."""
    if not data:
        return None
    gates = tuple(_parse_gate(raw) for raw in data.get("gates") or ())
    names = [g.name for g in gates]
    if len(set(names)) != len(names):
        raise GatePolicyInvalid("gate names must be unique")
    soak_s = float(data.get("soak_s", 0.0))
    if not 0.0 <= soak_s <= 86_400.0:
        raise GatePolicyInvalid("soak_s must be between 0 and 86400 seconds")
    on_fail = data.get("on_fail", "rollback_batch")
    if on_fail not in ON_FAIL:
        raise GatePolicyInvalid(f"on_fail must be one of {', '.join(ON_FAIL)}")
    return GatePolicy(gates, soak_s, on_fail, bool(data.get("force", False)))


def _parse_gate(raw: Mapping[str, Any]) -> Gate:
    name = str(raw.get("name") or raw.get("builtin") or "")
    if not _NAME_RE.match(name):
        raise GatePolicyInvalid(f"gate name {name!r} is not a name (letters, digits, _.-)")
    builtin, query = raw.get("builtin"), raw.get("query")
    if (builtin is None) == (query is None):
        raise GatePolicyInvalid(f"gate {name}: give exactly one of builtin or query")
    if builtin is not None and builtin not in BUILTINS:
        raise GatePolicyInvalid(
            f"gate {name}: unknown built-in {builtin!r} (known: {', '.join(sorted(BUILTINS))})"
        )
    if query is not None and not str(query).strip():
        raise GatePolicyInvalid(f"gate {name}: the query is empty")
    comparison = raw.get("comparison", "absolute")
    if comparison not in COMPARISONS:
        raise GatePolicyInvalid(f"gate {name}: comparison must be one of {', '.join(COMPARISONS)}")
    try:
        threshold = float(raw["threshold"])
    except (KeyError, TypeError, ValueError):
        raise GatePolicyInvalid(f"gate {name}: threshold must be a number") from None
    if threshold != threshold or threshold in (float("inf"), float("-inf")):
        raise GatePolicyInvalid(f"gate {name}: threshold must be finite")
    if comparison == "max_increase_pct" and threshold < 0:
        raise GatePolicyInvalid(f"gate {name}: max_increase_pct must not be negative")
    return Gate(name, threshold, comparison, builtin, None if query is None else str(query))


def switches_regex(switches: Sequence[str]) -> str:
    """A PromQL (RE2) alternation matching exactly these names (anchored by PromQL)."""
    return "|".join(re.escape(name) for name in sorted(set(switches)))


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One reading of one gate: what was asked, what was seen, and the verdict."""

    gate: str
    stage: Stage
    batch: int
    expression: str
    value: float | None
    baseline: float | None
    threshold: float
    comparison: Comparison
    limit: float | None
    verdict: Verdict
    detail: str
    at: datetime
    extra: Mapping[str, Any] = field(default_factory=dict)


def allowed_limit(gate: Gate, baseline: float | None) -> float | None:
    """The largest value the gate accepts (None: not computable, no baseline)."""
    if gate.comparison == "absolute":
        return gate.threshold
    if baseline is None:
        return None
    return baseline * (1.0 + gate.threshold / 100.0)


def judge(
    gate: Gate,
    *,
    stage: Stage,
    batch: int,
    expression: str,
    value: float | None,
    baseline: float | None,
    at: datetime,
) -> Evaluation:
    """The verdict of one reading against the gate's threshold (and baseline)."""
    limit = allowed_limit(gate, baseline)
    verdict: Verdict
    if value is None:
        verdict, detail = "fail", "no value: the query returned no sample"
    elif stage in ("precheck", "baseline") and limit is None:
        # A relative gate before any batch: there is nothing to compare with yet.
        verdict, detail = "pass", f"value {value:g} recorded (relative gate, no baseline yet)"
    elif limit is None:
        verdict, detail = "fail", f"value {value:g} but no baseline was recorded"
    elif value <= limit:
        verdict, detail = "pass", f"value {value:g} <= {_limit_text(gate, baseline, limit)}"
    else:
        verdict, detail = "fail", f"value {value:g} > {_limit_text(gate, baseline, limit)}"
    return Evaluation(
        gate.name,
        stage,
        batch,
        expression,
        value,
        baseline,
        gate.threshold,
        gate.comparison,
        limit,
        verdict,
        detail,
        at,
    )


def _limit_text(gate: Gate, baseline: float | None, limit: float) -> str:
    if gate.comparison == "absolute":
        return f"threshold {limit:g}"
    return f"{limit:g} (baseline {baseline:g} + {gate.threshold:g} %)"


Reader = Callable[[str], float | None]


def no_reader(_: str) -> float | None:
    """The reader when no metrics source is configured: every gate reads no value, and a gate
    with no value fails (module docstring)."""
    return None


def read_all(
    policy: GatePolicy,
    read: Reader | None,
    *,
    stage: Stage,
    batch: int,
    switches: Sequence[str],
    baselines: Mapping[str, float | None],
    at: datetime,
) -> list[Evaluation]:
    """Read and judge every gate of ``policy`` for ``switches`` (``read`` is the edge; None:
    no metrics source, ``no_reader``)."""
    read = read or no_reader
    found = []
    for gate in policy.gates:
        expression = gate.expression(switches)
        found.append(
            judge(
                gate,
                stage=stage,
                batch=batch,
                expression=expression,
                value=read(expression),
                baseline=baselines.get(gate.name),
                at=at,
            )
        )
    return found


def failed(evaluations: Sequence[Evaluation]) -> list[Evaluation]:
    return [e for e in evaluations if e.verdict == "fail"]


def describe(evaluations: Sequence[Evaluation]) -> str:
    return "; ".join(f"{e.gate}: {e.detail}" for e in evaluations)
