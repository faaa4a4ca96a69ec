"""Everything the app factory needs for rollouts, drift and reconcile, in one import."""

from __future__ import annotations

from fastapi import FastAPI

from api.rollout_services import build_rollout_services
from api.routes import drift, reconcile, rollouts

__all__ = ["build_rollout_services", "install_rollout_routers"]


def install_rollout_routers(app: FastAPI, prefix: str) -> None:
    for module in (rollouts, drift, reconcile):
        app.include_router(module.router, prefix=prefix)
