"""The services one app instance uses, built in the app's lifespan from its settings."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from controller.services.audit import AuditService
from controller.services.common import Clock
from controller.services.health import HealthService
from controller.services.hosts_rollout import HostRolloutService
from controller.services.intents import IntentService
from controller.services.plans import PlanService
from controller.services.tokens import TokenService
from controller.settings import Settings
from controller.store.db import make_sessions


@dataclass(frozen=True, slots=True)
class Services:
    intents: IntentService
    plans: PlanService
    audit: AuditService
    tokens: TokenService
    health: HealthService
    host_runs: HostRolloutService


def build_services(engine: Engine, *, clock: Clock, settings: Settings) -> Services:
    sessions = make_sessions(engine)
    return Services(
        intents=IntentService(sessions, clock=clock),
        plans=PlanService(sessions, clock=clock),
        audit=AuditService(sessions),
        tokens=TokenService(sessions, clock=clock),
        health=HealthService(sessions),
        host_runs=HostRolloutService(sessions, clock=clock, config=settings.hosts),
    )
