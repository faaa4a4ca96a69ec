"""Health gates of a rollout: values in, verdicts out (pure; the reads are at the edge).

A rollout's policy names gates. Each gate is a PromQL expression whose value is one number:
a built-in check (``BUILTINS``: the health model's checks scoped to the switches of the batch,
and what the hosts measure of each service class's flows) or a raw expression the operator
writes. Before a batch is applied the runner reads every gate (its *baseline*); after the batch
is applied and verified it waits ``soak_s`` (on its own clock, coming back rather than
blocking) and reads them again. A gate passes when

- ``comparison = "absolute"``: value <= threshold;
- ``comparison = "max_increase_pct"``: value <= baseline * (1 + threshold / 100)
  (a baseline of 0 allows no increase at all); for a built-in that counts faults
  (``agent_fallback``) a baseline above zero is no pass mark: faults that were there before the
  batch and are still there after it do not pass by standing still, the limit is 0;
- ``comparison = "objective"``: value <= threshold (a service class's objective), or, when the
  baseline already missed it, value <= baseline (the batch made it no worse).

A gate with no value fails: a batch that silenced its own telemetry has not shown it is
healthy. Its detail says why there is none (``explain_no_value``): Prometheus did not answer,
or which series had no samples, or, for a built-in whose series exist, what their emptiness
means (no flow of the class finished in the window). Pre-checks read every gate once before
the rollout starts and refuse it when an ``absolute`` gate already fails (a relative or
objective gate has no baseline yet, so only its presence of data is checked), unless the
operator forces it.

An idle switch is not a faulty one: its agent reports mode ``idle`` (no queue counter moved
for the agent's stale limit and none holds bytes; docs/qos-agent.md). The rate and occupancy
built-ins count it as 0 (its last rates are those of the last interval that moved, not of
now), so a batch of idle switches reads 0 drops rather than no value, and ``agent_fallback``
does not count it.

The comparison to a baseline and a soak window follow the progressive-delivery practice of
Flagger (docs.flagger.app, "Metrics analysis": a threshold range per metric checked every
interval) and Argo Rollouts (argo-rollouts.readthedocs.io, "Analysis": ``successCondition``
per measurement); the failure policy is sluice's own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

Comparison = Literal["absolute", "max_increase_pct", "objective"]
OnFail = Literal["rollback_batch", "rollback_all", "halt"]
Verdict = Literal["pass", "fail"]
Stage = Literal["precheck", "baseline", "soak"]

COMPARISONS: tuple[Comparison, ...] = ("absolute", "max_increase_pct", "objective")
ON_FAIL: tuple[OnFail, ...] = ("rollback_batch", "rollback_all", "halt")
SWITCHES_PLACEHOLDER = "$switches"
CLASS_PLACEHOLDER = "$class"
WINDOW_PLACEHOLDER = "$window"

# A flow is small up to 100 kB, the band the papers report small-flow FCT in (HDCQ,
# Information 2021, §5, Figs. 11-12: 0-100 KB, 100 KB-10 MB, 10 MB and above); the hosts'
# exporter labels each finished flow with its band (``size``: small, medium, large).
SMALL_FLOW_BYTES = 100_000


@dataclass(frozen=True, slots=True)
class Builtin:
    """A built-in check: its PromQL (``$switches``, ``$class``, ``$window`` filled in per
    reading), the series whose emptiness explains a reading with no value, and what no value
    means when those series do have samples."""

    query: str
    series: tuple[str, ...]
    per_class: bool = False
    counts_faults: bool = False
    when_empty: str = ""


def _idle_aware(aggregate: str, metric: str) -> str:
    """``aggregate`` of ``metric`` over the batch, where a switch whose agent reports idle
    counts 0: its counters have not moved, so its last rates are not now's."""
    per_switch = f'{aggregate} by (switch) ({metric}{{switch=~"$switches"}})'
    idle = 'sluice_agent_mode_info{switch=~"$switches",mode="idle"}'
    return (
        f"{aggregate}(({per_switch} unless on (switch) {idle})"
        f" or on (switch) (0 * max by (switch) ({idle})))"
    )


_FCT_BUCKETS = 'sluice_host_flow_completion_seconds_bucket{class="$class",size="small"}'
# A lossless class's PFC series (docs/telemetry.md): pause frames either way on its priority,
# drops on its priority group and on its queue, the watchdog's storms on its queue.
_PAUSES = (
    '{__name__=~"sluice_port_pfc_(rx|tx)_pause_frames_per_second",'
    'switch=~"$switches",class="$class"}'
)
_CLASS_OF_BATCH = '{switch=~"$switches",class="$class"}'
_LOSSLESS_QUEUE_DROPS = f"sluice_queue_dropped_packets_per_second{_CLASS_OF_BATCH}"
_LOSSLESS_PG_DROPS = f"sluice_pg_dropped_packets_per_second{_CLASS_OF_BATCH}"
_STORMING = f"sluice_queue_pfc_storm_active{_CLASS_OF_BATCH}"
_STORMS = f"sluice_queue_pfc_storms_detected_total{_CLASS_OF_BATCH}"

# The health model's checks (controller/telemetry/health.py) as one number over the switches
# of a batch, in the collector's metric names (docs/telemetry.md), and the hosts' flow
# completion times (docs/tuning.md, the host exporter). ``$switches`` becomes a regular
# expression matching exactly those switch names.
BUILTINS: Mapping[str, Builtin] = {
    # dropped packets/s summed over every queue of the batch's switches
    "drops": Builtin(
        _idle_aware("sum", "sluice_queue_dropped_packets_per_second"),
        ('sluice_queue_dropped_packets_per_second{switch=~"$switches"}',),
    ),
    # the worst ECN mark fraction of any queue
    "mark_fraction": Builtin(
        _idle_aware("max", "sluice_queue_mark_fraction"),
        ('sluice_queue_mark_fraction{switch=~"$switches"}',),
    ),
    # the largest queue occupancy in bytes
    "occupancy": Builtin(
        _idle_aware("max", "sluice_queue_occupancy_bytes"),
        ('sluice_queue_occupancy_bytes{switch=~"$switches"}',),
    ),
    # queues whose agent threshold is on its stale fallback, plus agents in fallback mode (an
    # idle switch's agent reports mode and basis ``idle``: not counted)
    "agent_fallback": Builtin(
        'count(sluice_queue_threshold_info{switch=~"$switches",basis="stale_fallback"}'
        ' or sluice_agent_mode_info{switch=~"$switches",mode="fallback"}) or vector(0)',
        (),
        counts_faults=True,
    ),
    # the 99th percentile completion time of the class's small flows (up to 100 kB) that
    # finished in the last ``$window`` (the policy's soak), in microseconds, over every host
    "fct_p99_small": Builtin(
        f"histogram_quantile(0.99, sum by (le) (increase({_FCT_BUCKETS}[$window]))) * 1e6",
        (_FCT_BUCKETS,),
        per_class=True,
        when_empty=(
            "no flow of class $class up to 100 kB finished in the last $window (the hosts'"
            ' sluice_host_flow_completion_seconds_count{class="$class",size="small"} did not'
            " grow)"
        ),
    ),
    # the most PFC pause frames a second any port of the batch sent or received on the
    # lossless class's priority (a storm: a port held paused most of the time)
    "pfc_pause_rate": Builtin(f"max({_PAUSES})", (_PAUSES,), per_class=True),
    # the PFC watchdog's storms on the class's queues: those in a storm now plus those it
    # detected during the last ``$window`` (the soak), restored or not
    "pfc_storms": Builtin(
        f"(sum(increase({_STORMS}[$window])) or vector(0))"
        f" + (count({_STORMING} == 1) or vector(0))",
        (),
        per_class=True,
    ),
    # packets of the lossless class dropped a second: at its queues and, where the switch
    # counts them, at its ingress priority groups; a lossless class must drop none
    "lossless_drops": Builtin(
        f"sum({_LOSSLESS_QUEUE_DROPS}) + (sum({_LOSSLESS_PG_DROPS}) or vector(0))",
        (_LOSSLESS_QUEUE_DROPS,),
        per_class=True,
    ),
}
# The built-ins a lossless class turns on (``lossless_gates``).
LOSSLESS_BUILTINS = ("pfc_pause_rate", "pfc_storms", "lossless_drops")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")
# A metric selector with label matchers: ``name{...}`` (what a raw query's emptiness is
# explained by; functions and keywords are never followed by a brace).
_SELECTOR_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*\{[^{}]*\}")


class GatePolicyInvalid(ValueError):
    """A gate policy that cannot be evaluated (unknown built-in, bad comparison, ...)."""


def window_text(window_s: float) -> str:
    """A PromQL range of at least one second (``30s``)."""
    return f"{max(1, math.ceil(window_s))}s"


@dataclass(frozen=True, slots=True)
class Gate:
    """One check: ``builtin`` names one of ``BUILTINS``; else ``query`` is raw PromQL. A
    per-class built-in (``fct_p99_small``) names its ``service_class``."""

    name: str
    threshold: float
    comparison: Comparison = "absolute"
    builtin: str | None = None
    query: str | None = None
    service_class: str | None = None

    def expression(self, switches: Sequence[str], window_s: float = 60.0) -> str:
        """The PromQL to read for a batch of ``switches`` (all of the rollout for pre-checks);
        ``window_s`` is the range of a windowed built-in (the policy's soak)."""
        text = BUILTINS[self.builtin].query if self.builtin is not None else (self.query or "")
        return self.fill(text, switches, window_s)

    def fill(self, text: str, switches: Sequence[str], window_s: float) -> str:
        """``text`` with this gate's placeholders filled in for ``switches`` and the window."""
        text = text.replace(SWITCHES_PLACEHOLDER, switches_regex(switches))
        text = text.replace(WINDOW_PLACEHOLDER, window_text(window_s))
        return text.replace(CLASS_PLACEHOLDER, _label_value(self.service_class or ""))

    @property
    def counts_faults(self) -> bool:
        return self.builtin is not None and BUILTINS[self.builtin].counts_faults

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "name": self.name,
            "threshold": self.threshold,
            "comparison": self.comparison,
            "builtin": self.builtin,
            "query": self.query,
        }
        if self.service_class is not None:
            found["class"] = self.service_class
        return found


@dataclass(frozen=True, slots=True)
class GatePolicy:
    gates: tuple[Gate, ...] = ()
    soak_s: float = 0.0
    on_fail: OnFail = "rollback_batch"
    force: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "gates": [g.to_json() for g in self.gates],
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


def default_gate_name(builtin: str, service_class: str | None) -> str:
    """A built-in gate's name when the policy gives none: ``drops``, ``fct_p99_small.rpc``."""
    return builtin if service_class is None else f"{builtin}.{service_class}"


def lossless_gates(classes: Sequence[str], pause_limit_per_s: float) -> tuple[Gate, ...]:
    """The gates each lossless class turns on in a gated rollout: its pause rate at most
    ``pause_limit_per_s`` (the intent's ``fabric.health.pfc_pause_per_s_critical``), no
    watchdog storm and no drop, each read for the batch's switches."""
    limits = {"pfc_pause_rate": pause_limit_per_s, "pfc_storms": 0.0, "lossless_drops": 0.0}
    return tuple(
        Gate(default_gate_name(builtin, name), limits[builtin], builtin=builtin, service_class=name)
        for name in sorted(classes)
        for builtin in LOSSLESS_BUILTINS
    )


def with_gates(policy: GatePolicy, extra: Iterable[Gate]) -> GatePolicy:
    """``policy`` with each gate of ``extra`` it does not already name (the operator's own
    gate of that name wins)."""
    names = {gate.name for gate in policy.gates}
    added = tuple(gate for gate in extra if gate.name not in names)
    if not added:
        return policy
    return GatePolicy((*policy.gates, *added), policy.soak_s, policy.on_fail, policy.force)


def _parse_gate(raw: Mapping[str, Any]) -> Gate:
    builtin, query, klass = raw.get("builtin"), raw.get("query"), raw.get("class")
    name = str(raw.get("name") or (default_gate_name(builtin, klass) if builtin else ""))
    if not _NAME_RE.match(name):
        raise GatePolicyInvalid(f"gate name {name!r} is not a name (letters, digits, _.-)")
    if (builtin is None) == (query is None):
        raise GatePolicyInvalid(f"gate {name}: give exactly one of builtin or query")
    if builtin is not None and builtin not in BUILTINS:
        raise GatePolicyInvalid(
            f"gate {name}: unknown built-in {builtin!r} (known: {', '.join(sorted(BUILTINS))})"
        )
    if query is not None and not str(query).strip():
        raise GatePolicyInvalid(f"gate {name}: the query is empty")
    per_class = builtin is not None and BUILTINS[builtin].per_class
    if per_class and not (isinstance(klass, str) and _NAME_RE.match(klass)):
        raise GatePolicyInvalid(f"gate {name}: built-in {builtin} needs the class it reads")
    if klass is not None and not per_class:
        raise GatePolicyInvalid(f"gate {name}: only a per-class built-in takes a class")
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
    query_text = None if query is None else str(query)
    return Gate(name, threshold, comparison, builtin, query_text, klass)


def switches_regex(switches: Sequence[str]) -> str:
    """A PromQL (RE2) alternation matching exactly these names (anchored by PromQL)."""
    return "|".join(re.escape(name) for name in sorted(set(switches)))


def _label_value(text: str) -> str:
    """A PromQL string literal's content (a class name is a plain name; escaped anyway)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


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


class Reading(Protocol):
    """One recorded gate reading, as a store keeps it (an ``Evaluation``, or its row)."""

    @property
    def gate(self) -> str: ...

    @property
    def stage(self) -> str: ...

    @property
    def batch(self) -> int: ...

    @property
    def value(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class GateState:
    """Where a staged run, a switch rollout or a host run alike, stands with its health gates:
    the policy, the batch soaking and until when, each batch's baseline reading per gate, and
    the batches whose soak readings are recorded."""

    policy: GatePolicy | None = None
    soak_batch: int | None = None
    soak_until: datetime | None = None
    baselines: Mapping[int, Mapping[str, float | None]] = field(default_factory=dict)
    soaked: frozenset[int] = frozenset()

    @classmethod
    def recorded(
        cls,
        policy: Mapping[str, Any] | None,
        soak_batch: int | None,
        soak_until: datetime | None,
        readings: Iterable[Reading],
    ) -> GateState:
        """The state a store recorded: the policy's JSON form, the soak, every reading."""
        baselines: dict[int, dict[str, float | None]] = {}
        soaked: set[int] = set()
        for reading in readings:
            if reading.stage == "baseline":
                baselines.setdefault(reading.batch, {})[reading.gate] = reading.value
            elif reading.stage == "soak":
                soaked.add(reading.batch)
        return cls(parse_policy(policy), soak_batch, soak_until, baselines, frozenset(soaked))

    @property
    def gated(self) -> GatePolicy | None:
        """The policy when it has gates to read; None when the run is not gated."""
        return self.policy if self.policy is not None and self.policy.gates else None

    def soaking(self, now: datetime) -> bool:
        """Whether the batch soaking has not yet soaked its time."""
        return self.soak_until is not None and now < self.soak_until


def allowed_limit(gate: Gate, baseline: float | None) -> float | None:
    """The largest value the gate accepts (None: not computable, no baseline)."""
    if gate.comparison == "absolute":
        return gate.threshold
    if baseline is None:
        return None
    if gate.comparison == "objective":
        return max(gate.threshold, baseline)
    if gate.counts_faults and baseline > 0:
        return 0.0
    return baseline * (1.0 + gate.threshold / 100.0)


NO_VALUE = "no value: the query returned no sample"


def judge(
    gate: Gate,
    *,
    stage: Stage,
    batch: int,
    expression: str,
    value: float | None,
    baseline: float | None,
    at: datetime,
    no_value: str = NO_VALUE,
) -> Evaluation:
    """The verdict of one reading against the gate's threshold (and baseline); ``no_value``
    is the detail of a reading without one (``explain_no_value``)."""
    limit = allowed_limit(gate, baseline)
    verdict: Verdict
    if value is None:
        verdict, detail = "fail", no_value
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
    if gate.comparison == "absolute" or baseline is None:
        return f"threshold {limit:g}"
    if gate.comparison == "objective":
        if baseline <= gate.threshold:
            return f"objective {gate.threshold:g}"
        return (
            f"{limit:g} (the baseline {baseline:g} already missed the objective "
            f"{gate.threshold:g}: no worse than before)"
        )
    if gate.counts_faults and baseline > 0:
        return f"0 (the baseline's {baseline:g} faults do not pass by standing still)"
    return f"{limit:g} (baseline {baseline:g} + {gate.threshold:g} %)"


Reader = Callable[[str], float | None]


def no_reader(_: str) -> float | None:
    """The reader when no metrics source is configured: every gate reads no value, and a gate
    with no value fails (module docstring)."""
    return None


def explain_no_value(
    gate: Gate, switches: Sequence[str], window_s: float, expression: str, read: Reader
) -> str:
    """Why ``gate`` read no value, asked of the same source: Prometheus did not answer, or
    the series that had no samples (a built-in's own, a raw query's selectors), or what a
    built-in's emptiness means when its series do have samples."""
    if read is no_reader:
        return f"{NO_VALUE}: no metrics source is configured (SLUICE_PROMETHEUS_URL)"
    if read("vector(1)") is None:
        return f"{NO_VALUE}: Prometheus did not answer (see the log)"
    builtin = BUILTINS[gate.builtin] if gate.builtin is not None else None
    series = (
        [gate.fill(s, switches, window_s) for s in builtin.series]
        if builtin is not None
        else _SELECTOR_RE.findall(expression)
    )
    empty = [s for s in series if read(f"count({s})") is None]
    if empty:
        return f"{NO_VALUE}: no samples of {', '.join(empty)}"
    if builtin is not None and builtin.when_empty:
        return f"{NO_VALUE}: {gate.fill(builtin.when_empty, switches, window_s)}"
    return f"{NO_VALUE}: its series have samples, but the expression matched nothing or was NaN"


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
    no metrics source, ``no_reader``). A windowed built-in reads the policy's soak."""
    read = read or no_reader
    found = []
    for gate in policy.gates:
        expression = gate.expression(switches, policy.soak_s)
        value = read(expression)
        no_value = (
            explain_no_value(gate, switches, policy.soak_s, expression, read)
            if value is None
            else NO_VALUE
        )
        found.append(
            judge(
                gate,
                stage=stage,
                batch=batch,
                expression=expression,
                value=value,
                baseline=baselines.get(gate.name),
                at=at,
                no_value=no_value,
            )
        )
    return found


def failed(evaluations: Sequence[Evaluation]) -> list[Evaluation]:
    return [e for e in evaluations if e.verdict == "fail"]


def describe(evaluations: Sequence[Evaluation]) -> str:
    return "; ".join(f"{e.gate}: {e.detail}" for e in evaluations)
