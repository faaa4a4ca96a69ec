"""Rollouts: start one, watch its per-switch progress, pause, resume, roll back.

These calls only change what PostgreSQL says; the worker (``python -m controller.worker``)
does the switch work and checks for a pause between batches.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.deps import DB_BIGINT_MAX, OperatorActor, PagingDep, ServicesDep, Viewer
from api.routes.telemetry import TelemetryDep
from api.schemas import PageOut, RolloutIn, RolloutOut, RolloutSummaryOut, page_out
from controller.prometheus.gate_reads import promql_reader
from controller.services.rollouts import RolloutPolicy

router = APIRouter(prefix="/rollouts", tags=["rollouts"])
RolloutId = Annotated[int, Path(ge=1, le=DB_BIGINT_MAX, description="the rollout's id")]


@router.post("", response_model=RolloutOut, status_code=201)
def start_rollout(
    body: RolloutIn, services: ServicesDep, actor: OperatorActor, telemetry: TelemetryDep
) -> RolloutOut:
    """Roll an intent version out: canary switches first, then batches. 409 while another
    rollout is unfinished, when a health gate's pre-check fails (unless forced), or when
    its changes would take switch ports down (unless ``allow_port_flaps``)."""
    policy = RolloutPolicy(
        to_version=body.to_version,
        canary=tuple(body.canary),
        batch_size=body.batch_size,
        failure_budget=body.failure_budget,
        gates=None if body.gates is None else body.gates.policy(),
        allow_port_flaps=body.allow_port_flaps,
    )
    reader = promql_reader(telemetry.promql) if body.gates is not None else None
    return RolloutOut.of(services.rollouts.start(policy, actor=actor, gates=reader))


@router.get("", response_model=PageOut[RolloutSummaryOut])
def list_rollouts(
    services: ServicesDep, paging: PagingDep, _: Viewer
) -> PageOut[RolloutSummaryOut]:
    """Newest first, with switch counts per status."""
    page = services.rollouts.list(limit=paging.limit, offset=paging.offset)
    return page_out(page, [RolloutSummaryOut.of(info) for info in page.items])


@router.get("/{rollout_id}", response_model=RolloutOut)
def get_rollout(rollout_id: RolloutId, services: ServicesDep, _: Viewer) -> RolloutOut:
    """One rollout with every switch's progress."""
    return RolloutOut.of(services.rollouts.get(rollout_id))


@router.post("/{rollout_id}/pause", response_model=RolloutOut)
def pause_rollout(rollout_id: RolloutId, services: ServicesDep, actor: OperatorActor) -> RolloutOut:
    """Stop before the next batch (the batch in progress finishes)."""
    return RolloutOut.of(services.rollouts.pause(rollout_id, actor=actor))


@router.post("/{rollout_id}/resume", response_model=RolloutOut)
def resume_rollout(
    rollout_id: RolloutId, services: ServicesDep, actor: OperatorActor
) -> RolloutOut:
    """Go on after a pause or a halt; switches that failed are retried."""
    return RolloutOut.of(services.rollouts.resume(rollout_id, actor=actor))


@router.post("/{rollout_id}/rollback", response_model=RolloutOut)
def rollback_rollout(
    rollout_id: RolloutId, services: ServicesDep, actor: OperatorActor
) -> RolloutOut:
    """Back to the previous version, switch by switch, each verified by read-back."""
    return RolloutOut.of(services.rollouts.rollback(rollout_id, actor=actor))
