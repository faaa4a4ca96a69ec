"""Rollouts: start one, watch its per-switch progress, pause, resume, roll back.

These calls only change what PostgreSQL says; the worker (``python -m controller.worker``)
does the switch work and checks for a pause between batches.
"""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import OperatorActor, PagingDep, RecordId, ServicesDep, Viewer
from api.schemas.common import PageOut, page_out
from api.schemas.rollouts import RolloutIn, RolloutOut, RolloutSummaryOut
from controller.services.rollouts import RolloutPolicy

router = APIRouter(prefix="/rollouts", tags=["rollouts"])


@router.post("", response_model=RolloutOut, status_code=201)
def start_rollout(body: RolloutIn, services: ServicesDep, actor: OperatorActor) -> RolloutOut:
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
    reader = None if body.gates is None else services.gate_reads
    return RolloutOut.of(services.rollouts.start(policy, actor=actor, gates=reader))


@router.get("", response_model=PageOut[RolloutSummaryOut])
def list_rollouts(
    services: ServicesDep, paging: PagingDep, _: Viewer
) -> PageOut[RolloutSummaryOut]:
    """Newest first, with switch counts per status."""
    page = services.rollouts.list(limit=paging.limit, offset=paging.offset)
    return page_out(page, [RolloutSummaryOut.of(info) for info in page.items])


@router.get("/{rollout_id}", response_model=RolloutOut)
def get_rollout(rollout_id: RecordId, services: ServicesDep, _: Viewer) -> RolloutOut:
    """One rollout with every switch's progress."""
    return RolloutOut.of(services.rollouts.get(rollout_id))


@router.post("/{rollout_id}/pause", response_model=RolloutOut)
def pause_rollout(rollout_id: RecordId, services: ServicesDep, actor: OperatorActor) -> RolloutOut:
    """Stop before the next batch (the batch in progress finishes)."""
    return RolloutOut.of(services.rollouts.pause(rollout_id, actor=actor))


@router.post("/{rollout_id}/resume", response_model=RolloutOut)
def resume_rollout(rollout_id: RecordId, services: ServicesDep, actor: OperatorActor) -> RolloutOut:
    """Go on after a pause or a halt; switches that failed are retried."""
    return RolloutOut.of(services.rollouts.resume(rollout_id, actor=actor))


@router.post("/{rollout_id}/rollback", response_model=RolloutOut)
def rollback_rollout(
    rollout_id: RecordId, services: ServicesDep, actor: OperatorActor
) -> RolloutOut:
    """Back to the previous version, switch by switch, each verified by read-back."""
    return RolloutOut.of(services.rollouts.rollback(rollout_id, actor=actor))
