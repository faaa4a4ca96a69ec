"""The reconcile loop: the last run per switch, and one pass on demand."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import OperatorActor, ServicesDep, Viewer
from api.schemas.reconcile import ReconcileRunsOut

router = APIRouter(prefix="/reconcile", tags=["reconcile"])


@router.get("", response_model=ReconcileRunsOut)
def list_reconcile_runs(services: ServicesDep, _: Viewer) -> ReconcileRunsOut:
    """The newest run of every switch, by switch name."""
    return ReconcileRunsOut.of(services.reconcile.last_runs())


@router.post("/run", response_model=ReconcileRunsOut)
def run_reconcile(services: ServicesDep, actor: OperatorActor) -> ReconcileRunsOut:
    """One pass over every switch now, made by the worker (the request is recorded and
    answered when the worker has made the pass; 504 if no worker does so in time); answers
    the newest run of every switch afterwards."""
    return ReconcileRunsOut.of(services.reconcile.request_pass(actor=actor))
