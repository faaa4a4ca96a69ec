"""Twin runs: what to run (workload, load, flows, seed, class mix, versions) and a run's state,
progress and result."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from api.schemas.common import DB_BIGINT_MAX, DB_INTEGER_MAX, Strict, ViewOut, WholeNumber
from controller.services.twin_runs import TwinRequest


class TwinRunIn(Strict):
    # strict: true or "0.6" is not a number (refused, not coerced)
    model_config = ConfigDict(strict=True)

    workload: Literal["websearch", "datamining", "cache", "hadoop"] = "websearch"
    load: float = Field(
        default=0.6, gt=0.0, lt=1.0, allow_inf_nan=False, description="of every host link"
    )
    flows: WholeNumber = Field(default=2000, ge=1, le=1_000_000)
    seed: WholeNumber = Field(default=1, ge=0, le=DB_BIGINT_MAX)
    mix: dict[str, Annotated[float, Field(ge=0.0, le=1e6, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="each class's share of the load (default: equal)"
    )
    version: WholeNumber | None = Field(
        default=None, ge=1, le=DB_INTEGER_MAX, description="default: the current intent"
    )
    compare_version: WholeNumber | None = Field(
        default=None, ge=1, le=DB_INTEGER_MAX, description="a second version run on the same flows"
    )

    def request(self) -> TwinRequest:
        """What the twin runs (the versions are the service's own arguments)."""
        return TwinRequest(self.workload, self.load, self.flows, self.seed, tuple(self.mix.items()))


class TwinRunOut(ViewOut):
    id: int
    state: str
    intent_version: int
    compare_version: int | None
    request: dict[str, Any]
    progress: str | None
    result: dict[str, Any] | None
    message: str | None
    requested_by: str
    requested_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
