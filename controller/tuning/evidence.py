"""What the tuner proposes, and why: every change carries the rule, its inputs and outputs,
and the bounds it was clamped to, so an operator can check it by hand
(``sluice tune explain N``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Value = float | int | str | bool | None | tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Evidence:
    """``rule`` names the rule (``ecn.lambda``); ``inputs`` are the measured values and intent
    parameters it read; ``outputs`` what it computed before the stability guards;
    ``bounds`` says, in words, each bound or guard that changed the result."""

    rule: str
    source: str
    inputs: Mapping[str, Value]
    outputs: Mapping[str, Value]
    bounds: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "source": self.source,
            "inputs": dict(self.inputs),
            "outputs": dict(self.outputs),
            "bounds": list(self.bounds),
        }


@dataclass(frozen=True, slots=True)
class Change:
    """One parameter the tuner would change: ``parameter`` is a stable key naming it
    (``ecn_lambda/storage/25gbps``, ``weight/bulk``, ``qjump/hosts``), ``current`` and
    ``proposed`` its values. ``held`` is set when the rule found a new value but a stability
    guard kept the current one; such a Change is reported, never applied."""

    parameter: str
    current: Value
    proposed: Value
    evidence: Evidence
    held: str | None = None
    related: Mapping[str, Value] = field(default_factory=dict)

    @property
    def applies(self) -> bool:
        return self.held is None and self.proposed != self.current

    def as_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.parameter,
            "current": self.current,
            "proposed": self.proposed,
            "held": self.held,
            "related": dict(self.related),
            "evidence": self.evidence.as_dict(),
        }


# Each parameter's last applied change as the tuning history stores it (``Change.as_dict``):
# what a rule saw and did when it last moved the parameter, for a rule that judges its own
# last step (controller/tuning/dcqcn.py).
LastApplied = Mapping[str, Mapping[str, Any]]
