"""Switches: the fabric's switches and their ports (one entry of the current intent each)."""

from __future__ import annotations

from api.routes._resources import resource_router
from controller.services.intents import ResourceKind

router = resource_router(ResourceKind.SWITCH, "/switches", "switch")
