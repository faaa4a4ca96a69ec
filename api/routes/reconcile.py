"""The reconcile loop: the last run per switch, and one pass on demand."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import OperatorActor, Viewer
from api.rollout_schemas import ReconcileRunOut, ReconcileRunsOut
from api.rollout_services import RolloutServicesDep

router = APIRouter(prefix="/reconcile", tags=["reconcile"])


@router.get("", response_model=ReconcileRunsOut)
def list_reconcile_runs(services: RolloutServicesDep, _: Viewer) -> ReconcileRunsOut:
    """The newest run of every switch, by switch name."""
    runs = services.reconcile.last_runs()
    return ReconcileRunsOut(items=[ReconcileRunOut.of(run) for run in runs])


@router.post("/run", response_model=ReconcileRunsOut)
def run_reconcile(services: RolloutServicesDep, _: OperatorActor) -> ReconcileRunsOut:
    """One pass over every switch now (waits for the worker's step in progress, if any);
    answers the newest run of every switch afterwards."""
    runs = services.reconcile_now()
    return ReconcileRunsOut(items=[ReconcileRunOut.of(run) for run in runs])
