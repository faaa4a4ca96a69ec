"""A rolled-out proposal's outcome: the change its prediction named, measured on the fabric.

A proposal made by the counterfactual search (``fabric.tuning.search: twin``) carries, per
class, the twin's small-flow p99 FCT for the current intent and for the proposed one and the
change between them (``search.predicted_change``). Once the proposed version's rollout has
completed and a whole tuning window has passed under it (``settled``), the hosts' p99 FCT of
each class's small flows over that window is set against the same figure over the window the
proposal was made from (its ``baseline``, stored with it): per class the measured change,
whether it goes the predicted way, and the error in percentage points.

Where the hosts report nothing for a class (no ``fabric.host_exporter``, or the class
finished too few small flows in one of the two windows) nothing stands in: a switch's queue
counters do not give a flow's completion time, so the class is recorded as not measurable,
with the reason. Pure: the summaries, the prediction and the rollout's end come in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from controller.tuning.search import RULE
from controller.tuning.summary import SmallFlowFct

# Fewer small flows than this in a window and its p99 is the slowest flow or two, mostly a
# retransmission timeout (docs/tuning.md, "Reading"): not a measurement of the change.
MIN_SMALL_FLOWS = 100
# A change within this many percent either way is "no change": the sign of a p99 that moved
# 1 % is noise, not a direction.
STILL_PCT = 5.0
# The search's evidence key for the prediction's spread over seeds (counterfactual.py).
SPREAD = "predicted_spread_pct"


@dataclass(frozen=True, slots=True)
class Predicted:
    """The twin's small-flow p99 of one class for the current and the proposed intent, us,
    and the change, %; with the least and largest change over the seeds it was run on
    (the search's seeds, ``settings.twin.search_seeds``), where the proposal has them."""

    service_class: str
    before_us: float
    after_us: float
    change_pct: float
    min_pct: float | None = None
    max_pct: float | None = None

    def spans(self, change_pct: float) -> bool | None:
        """Whether ``change_pct`` lies within the seeds' spread (None: no spread recorded)."""
        if self.min_pct is None or self.max_pct is None:
            return None
        return self.min_pct <= change_pct <= self.max_pct


@dataclass(frozen=True, slots=True)
class ClassOutcome:
    """One class: predicted beside measured. ``not_measurable`` says why there is no
    measured change; then ``agrees`` and ``error_pp`` are None."""

    service_class: str
    predicted: Predicted
    measured_before_us: float | None = None
    measured_after_us: float | None = None
    flows_before: float | None = None
    flows_after: float | None = None
    measured_pct: float | None = None
    agrees: bool | None = None
    error_pp: float | None = None
    within_spread: bool | None = None
    not_measurable: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "service_class": self.service_class,
            "predicted_before_us": self.predicted.before_us,
            "predicted_after_us": self.predicted.after_us,
            "predicted_pct": self.predicted.change_pct,
            "predicted_min_pct": self.predicted.min_pct,
            "predicted_max_pct": self.predicted.max_pct,
            "measured_before_us": self.measured_before_us,
            "measured_after_us": self.measured_after_us,
            "flows_before": self.flows_before,
            "flows_after": self.flows_after,
            "measured_pct": self.measured_pct,
            "agrees": self.agrees,
            "error_pp": self.error_pp,
            "within_spread": self.within_spread,
            "not_measurable": self.not_measurable,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of a proposal's prediction. ``verdict``: ``agrees`` (every measurable
    class moved the predicted way), ``disagrees`` (at least one did not), ``not_measurable``
    (no class could be measured), or, with no comparison, the rollout's end: ``rolled_back``,
    ``halted`` or ``superseded`` (another version rolled out before a settled window)."""

    verdict: str
    reason: str
    rollout_id: int
    classes: tuple[ClassOutcome, ...] = ()
    window_start_s: float | None = None
    window_end_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "rollout_id": self.rollout_id,
            "window_start_s": self.window_start_s,
            "window_end_s": self.window_end_s,
            "classes": [c.as_dict() for c in self.classes],
        }


def prediction_of(changes: Sequence[Mapping[str, Any]]) -> tuple[Predicted, ...]:
    """The prediction a stored proposal's search changes carry (every one carries the same);
    empty when no change came from the search."""
    for change in changes:
        evidence = change.get("evidence", {})
        outputs = evidence.get("outputs", {})
        rows = outputs.get("predicted_p99_small_us")
        if evidence.get("rule") == RULE and rows:
            spread = {str(n): (float(lo), float(hi)) for n, lo, hi in outputs.get(SPREAD, ())}
            return tuple(
                Predicted(str(name), float(before), float(after), float(pct), *spread.get(name, ()))
                for name, before, after, pct in rows
            )
    return ()


def baseline_of(fct: Mapping[str, SmallFlowFct]) -> dict[str, dict[str, float]]:
    """The summary's small-flow figures as a proposal stores them (its ``baseline``)."""
    return {name: {"p99_us": f.p99_us, "flows": f.flows} for name, f in sorted(fct.items())}


def from_baseline(stored: Mapping[str, Mapping[str, float]]) -> dict[str, SmallFlowFct]:
    return {
        name: SmallFlowFct(name, float(row["p99_us"]), float(row["flows"]))
        for name, row in stored.items()
    }


def settled(finished_s: float, window_start_s: float) -> bool:
    """Whether a window starting at ``window_start_s`` saw only the version a rollout that
    completed at ``finished_s`` wrote."""
    return window_start_s >= finished_s


def direction(change_pct: float, still_pct: float = STILL_PCT) -> int:
    """-1 (faster), 0 (within ``still_pct``), +1 (slower)."""
    if abs(change_pct) <= still_pct:
        return 0
    return -1 if change_pct < 0 else 1


def compare_class(
    predicted: Predicted,
    before: SmallFlowFct | None,
    after: SmallFlowFct | None,
    *,
    min_flows: float = MIN_SMALL_FLOWS,
    still_pct: float = STILL_PCT,
) -> ClassOutcome:
    """One class's predicted change beside the measured one."""
    name = predicted.service_class
    if before is None or after is None:
        label = "the proposal's window" if before is None else "the window after"
        return ClassOutcome(
            name,
            predicted,
            not_measurable=(
                f"the hosts reported no small flow of {name} finishing in {label} "
                "(no fabric.host_exporter, or the class was idle); a switch's counters "
                "give no completion time to stand in"
            ),
        )
    measured = ClassOutcome(
        name,
        predicted,
        measured_before_us=round(before.p99_us, 1),
        measured_after_us=round(after.p99_us, 1),
        flows_before=before.flows,
        flows_after=after.flows,
    )
    few = min(before.flows, after.flows)
    if few < min_flows or before.p99_us <= 0:
        reason = (
            f"{few:g} small flows of {name} finished in one window: a p99 needs at least "
            f"{min_flows:g}"
        )
        return replace(measured, not_measurable=reason)
    change = round((after.p99_us - before.p99_us) / before.p99_us * 100.0, 1)
    return replace(
        measured,
        measured_pct=change,
        agrees=direction(change, still_pct) == direction(predicted.change_pct, still_pct),
        error_pp=round(change - predicted.change_pct, 1),
        within_spread=predicted.spans(change),
    )


def compare(
    prediction: Sequence[Predicted],
    before: Mapping[str, SmallFlowFct],
    after: Mapping[str, SmallFlowFct],
    *,
    rollout_id: int,
    window: tuple[float, float],
    min_flows: float = MIN_SMALL_FLOWS,
    still_pct: float = STILL_PCT,
) -> Outcome:
    """Every predicted class against the hosts' figures before (the proposal's window) and
    after (a settled window under the new version)."""
    classes = tuple(
        compare_class(
            p,
            before.get(p.service_class),
            after.get(p.service_class),
            min_flows=min_flows,
            still_pct=still_pct,
        )
        for p in prediction
    )
    judged = [c for c in classes if c.agrees is not None]
    wrong = [c.service_class for c in judged if not c.agrees]
    if not judged:
        verdict, reason = "not_measurable", "no predicted class could be measured"
    elif wrong:
        verdict = "disagrees"
        reason = f"{', '.join(wrong)} did not move the way the twin predicted"
    else:
        verdict = "agrees"
        reason = f"{', '.join(c.service_class for c in judged)} moved the way the twin predicted"
    return Outcome(verdict, reason, rollout_id, classes, window[0], window[1])


def not_compared(verdict: str, reason: str, rollout_id: int) -> Outcome:
    """A proposal whose rollout did not leave its version running: nothing to compare."""
    return Outcome(verdict, reason, rollout_id)


def spread_text(predicted: Predicted) -> str:
    """`` [-62.9, -58.5] over seeds`` where the prediction has a spread; empty otherwise."""
    if predicted.min_pct is None or predicted.max_pct is None:
        return ""
    return f" [{predicted.min_pct:+.1f}, {predicted.max_pct:+.1f}] over seeds"


def _spanned(within: bool | None) -> str:
    if within is None:
        return ""
    return ", within the seeds' spread" if within else ", outside the seeds' spread"


def describe(outcome: Outcome) -> str:
    """One line for the log and the CLI: each class's predicted and measured change."""
    parts = []
    for c in outcome.classes:
        head = (
            f"{c.service_class} predicted {c.predicted.change_pct:+.1f} %{spread_text(c.predicted)}"
        )
        if c.measured_pct is None:
            parts.append(f"{head}, not measurable ({c.not_measurable})")
        else:
            verdict = "agrees" if c.agrees else "disagrees"
            parts.append(
                f"{head}, measured {c.measured_pct:+.1f} % ({verdict}, error "
                f"{c.error_pp:+.1f} pp{_spanned(c.within_spread)})"
            )
    detail = "; ".join(parts)
    return f"{outcome.verdict}: {outcome.reason}" + (f" [{detail}]" if detail else "")
