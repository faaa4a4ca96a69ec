"""The services one API process holds, and the one place that builds them and what they need
(the database engine and its sessions, the Prometheus client, the health gates' reads, the
system's name resolver) from the settings.

None of them talks to switches or hosts: what needs them is recorded in PostgreSQL and done
by the worker (``controller/worker.py``); ``WorkerWait`` says how long a request that answers
with the worker's result (a host plan, a reconcile pass) waits for it. The API holds one
``Services`` for its lifetime (``api/main.py``, its lifespan) and hands it to every route
(``api/deps.py``, ``ServicesDep``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import make_promql
from controller.rollout.gates import Reader
from controller.services.audit import AuditService
from controller.services.checks import CheckService
from controller.services.common import WorkerWait
from controller.services.discoveries import DiscoveryService
from controller.services.health import HealthService
from controller.services.host_runs import HostRunService
from controller.services.intents import IntentService
from controller.services.plans import PlanService
from controller.services.reconcile import ReconcileService
from controller.services.releases import ReleaseService
from controller.services.rollouts import RolloutService
from controller.services.telemetry import TelemetryService
from controller.services.tokens import TokenService
from controller.services.tuning import TuningService
from controller.services.twin_runs import TwinRunService
from controller.settings import Settings
from controller.southbound.resolve import resolve_names
from controller.store.db import make_engine, make_sessions
from controller.telemetry.tuning_summary import read_summary
from controller.types import Clock


@dataclass(frozen=True, slots=True)
class Services:
    """What the API offers, one service per resource. ``gate_reads``: how a rollout's or a
    host run's health gates read one expression from Prometheus (passed to ``start``)."""

    intents: IntentService
    plans: PlanService
    audit: AuditService
    tokens: TokenService
    health: HealthService
    host_runs: HostRunService
    rollouts: RolloutService
    reconcile: ReconcileService
    twin_runs: TwinRunService
    telemetry: TelemetryService
    tuning: TuningService
    discoveries: DiscoveryService
    checks: CheckService
    releases: ReleaseService
    gate_reads: Reader


@contextmanager
def open_services(
    settings: Settings,
    *,
    clock: Clock,
    prometheus_transport: httpx.BaseTransport | None = None,
) -> Iterator[Services]:
    """The services over a new database engine and one Prometheus client (history, the
    tuner's summaries and the gates all read through it), both closed on the way out.
    ``prometheus_transport`` lets a test answer for Prometheus in-process."""
    engine = make_engine(settings.database.required_url("API"))
    promql = make_promql(
        settings.prometheus.url, settings.prometheus.timeout_s, prometheus_transport
    )
    try:
        sessions = make_sessions(engine)
        wait = WorkerWait(timeout_s=settings.api.worker_wait_s)
        intents = IntentService(sessions, clock=clock, resolve=resolve_names)
        discoveries = DiscoveryService(sessions, clock=clock, wait=wait)
        yield Services(
            intents=intents,
            plans=PlanService(sessions, clock=clock),
            audit=AuditService(sessions),
            tokens=TokenService(sessions, clock=clock),
            health=HealthService(sessions),
            host_runs=HostRunService(sessions, clock=clock, wait=wait),
            rollouts=RolloutService(sessions, clock=clock),
            reconcile=ReconcileService(sessions, clock=clock, wait=wait),
            twin_runs=TwinRunService(sessions, clock=clock),
            telemetry=TelemetryService(promql, lambda: intents.current().intent, clock=clock),
            tuning=TuningService(
                sessions,
                intents,
                lambda at, window_s: read_summary(promql, at, window_s),
                # No twin: a searching pass is queued for the worker (TuningService.request).
                clock=clock,
            ),
            discoveries=discoveries,
            checks=CheckService(sessions, discoveries),
            releases=ReleaseService(sessions, clock=clock),
            gate_reads=promql_reader(promql),
        )
    finally:
        promql.close()
        engine.dispose()
