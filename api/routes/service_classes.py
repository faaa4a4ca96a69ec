"""Service classes: DSCP, queue, scheduling, ECN mode, QJUMP level, PIAS (one entry each)."""

from __future__ import annotations

from api.routes._resources import resource_router
from controller.services.intents import ResourceKind

router = resource_router(ResourceKind.SERVICE_CLASS, "/service-classes", "service_class")
