"""The services one app instance uses, built in the app's lifespan from its settings.

None of them talks to switches or hosts: what needs them is recorded in PostgreSQL and done
by the worker (``controller/worker.py``); ``wait`` says how long a request that answers with
the worker's result (a host plan, a reconcile pass) waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from controller.services.audit import AuditService
from controller.services.common import WorkerWait
from controller.services.discoveries import DiscoveryService
from controller.services.health import HealthService
from controller.services.host_runs import HostRunService
from controller.services.intents import IntentService
from controller.services.plans import PlanService
from controller.services.reconcile import ReconcileService
from controller.services.releases import ReleaseService
from controller.services.rollouts import RolloutService
from controller.services.tokens import TokenService
from controller.services.twin_runs import TwinRunService
from controller.settings import Settings
from controller.store.db import make_sessions
from controller.types import Clock


@dataclass(frozen=True, slots=True)
class Services:
    intents: IntentService
    plans: PlanService
    audit: AuditService
    tokens: TokenService
    health: HealthService
    host_runs: HostRunService
    rollouts: RolloutService
    reconcile: ReconcileService
    twin_runs: TwinRunService
    discoveries: DiscoveryService
    releases: ReleaseService


def build_services(engine: Engine, *, clock: Clock, settings: Settings) -> Services:
    sessions = make_sessions(engine)
    wait = WorkerWait(timeout_s=settings.api.worker_wait_s)
    return Services(
        intents=IntentService(sessions, clock=clock),
        plans=PlanService(sessions, clock=clock),
        audit=AuditService(sessions),
        tokens=TokenService(sessions, clock=clock),
        health=HealthService(sessions),
        host_runs=HostRunService(sessions, clock=clock, wait=wait),
        rollouts=RolloutService(sessions, clock=clock),
        reconcile=ReconcileService(sessions, clock=clock, wait=wait),
        twin_runs=TwinRunService(sessions, clock=clock),
        discoveries=DiscoveryService(sessions, clock=clock, wait=wait),
        releases=ReleaseService(sessions, clock=clock),
    )
