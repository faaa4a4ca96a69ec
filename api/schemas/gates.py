"""Health gates, as switch rollouts and host runs take and answer them (the policy, its checks
and built-ins: ``controller/rollout/gates.py``, through the rollout service)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from api.schemas.common import Strict, ViewOut
from controller.services.rollouts import BUILTINS, GatePolicy, parse_policy

GateName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")]


# What _one_source and parse_policy check, as JSON Schema says it, so the published schema
# allows exactly the gates the validator takes: a built-in (no query), or a named PromQL
# query (no built-in); a max_increase_pct threshold is not negative.
ONE_SOURCE: dict[str, Any] = {
    "if": {"required": ["comparison"], "properties": {"comparison": {"const": "max_increase_pct"}}},
    "then": {"properties": {"threshold": {"minimum": 0}}},
    "anyOf": [
        {
            "required": ["builtin"],
            "properties": {"builtin": {"type": "string"}, "query": {"type": "null"}},
        },
        {
            "required": ["query", "name"],
            "properties": {
                "query": {"type": "string"},
                "name": {"type": "string"},
                "builtin": {"type": "null"},
            },
        },
    ],
}


class GateIn(Strict):
    # strict: "0" or true is not a threshold (a request that says so is refused, not coerced)
    model_config = ConfigDict(strict=True, json_schema_extra=ONE_SOURCE)

    name: GateName | None = Field(default=None, description="defaults to the built-in's name")
    builtin: (
        Literal["drops", "mark_fraction", "occupancy", "agent_fallback", "fct_p99_small"] | None
    ) = Field(default=None, description=f"a built-in check: {', '.join(sorted(BUILTINS))}")
    service_class: GateName | None = Field(
        default=None,
        alias="class",
        description="the service class a per-class built-in reads (fct_p99_small)",
    )
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        pattern=r"\S",  # not blank: parse_policy refuses an empty query
        description='raw PromQL answering one number; "$switches" becomes the batch\'s switches',
    )
    threshold: float = Field(allow_inf_nan=False, ge=-1e18, le=1e18)
    comparison: Literal["absolute", "max_increase_pct", "objective"] = "absolute"

    @model_validator(mode="after")
    def _one_source(self) -> GateIn:
        if (self.builtin is None) == (self.query is None):
            raise ValueError("give exactly one of builtin or query")
        if self.name is None and self.builtin is None:
            raise ValueError("a PromQL gate needs a name")
        return self


class GatePolicyIn(Strict):
    model_config = ConfigDict(strict=True)

    gates: list[GateIn] = Field(min_length=1, max_length=50)
    soak_s: float = Field(default=60.0, ge=0.0, le=86_400.0, description="soak after each batch")
    on_fail: Literal["rollback_batch", "rollback_all", "halt"] = "rollback_batch"
    force: bool = Field(default=False, description="start even when a pre-check fails")

    def policy(self) -> GatePolicy:
        """The checked policy (unique names are checked here: a ValueError is a 422)."""
        parsed = parse_policy(self.model_dump(by_alias=True, exclude_none=True))
        if parsed is None:  # pragma: no cover - min_length=1 keeps it non-empty
            raise ValueError("no gates")
        return parsed

    @model_validator(mode="after")
    def _parses(self) -> GatePolicyIn:
        parse_policy(self.model_dump(by_alias=True, exclude_none=True))
        return self


class GateEvaluationOut(ViewOut):
    batch: int = Field(description="the batch; -1 for the pre-checks before the start")
    stage: str = Field(description="precheck, baseline (before the batch) or soak (after it)")
    gate: str
    expression: str = Field(description="the PromQL read")
    value: float | None = Field(description="what it answered; None: no sample")
    baseline: float | None
    threshold: float
    comparison: str
    limit: float | None = Field(description="the largest value the gate accepted")
    verdict: str = Field(description="pass or fail")
    detail: str
    at: datetime


class GatesOut(ViewOut):
    gate_policy: dict[str, Any] | None = Field(description="the rollout's gate policy")
    soak_batch: int | None = Field(description="the batch soaking now, if any")
    soak_until: datetime | None
    evaluations: list[GateEvaluationOut] | None = Field(
        default=None, description="every gate reading (in GET /rollouts/{id})"
    )
