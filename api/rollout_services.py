"""The services behind the rollout, drift and reconcile endpoints, kept apart from
``api/services.py`` because they also hold a gNMI session pool (for a reconcile pass asked
for through the API) that the app must close when it stops."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Engine

from controller.reconcile.access import GnmiAccess, SwitchAccess
from controller.services.common import Clock
from controller.services.reconcile import ReconcileService, RunInfo
from controller.services.rollouts import RolloutService
from controller.settings import Settings
from controller.southbound.credentials import environment_resolver
from controller.southbound.gnmi import SessionPool
from controller.store.db import make_sessions
from controller.store.locks import switch_work_lock


@dataclass
class RolloutServices:
    engine: Engine
    rollouts: RolloutService
    reconcile: ReconcileService
    access: SwitchAccess
    pool: SessionPool

    def reconcile_now(self) -> list[RunInfo]:
        """One pass now; the worker may be stepping a rollout, so take turns on switches."""
        with switch_work_lock(self.engine):
            return self.reconcile.run_now(self.access)

    def close(self) -> None:
        self.pool.close()


def build_rollout_services(
    engine: Engine,
    *,
    clock: Clock,
    settings: Settings,
    environ: Mapping[str, str] | None = None,
) -> RolloutServices:
    """``environ``: where ``env:`` credential references of switches are looked up (this
    process's environment by default)."""
    sessions = make_sessions(engine)
    pool = settings.gnmi.session_pool()
    resolver = environment_resolver(os.environ if environ is None else environ)
    access = GnmiAccess(pool, resolver, username=settings.gnmi.username)
    return RolloutServices(
        engine,
        RolloutService(sessions, clock=clock),
        ReconcileService(sessions, clock=clock),
        access,
        pool,
    )


def get_rollout_services(request: Request) -> RolloutServices:
    services: RolloutServices = request.app.state.rollout_services
    return services


RolloutServicesDep = Annotated[RolloutServices, Depends(get_rollout_services)]
