"""The controller's services over a test database, as the rollout tests drive them (the
vsonic fabric's ``tests/integration/rollout/conftest.py`` and the real switch's
``tests/realsonic/conftest.py``)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from controller.intent.loader import dump_intent
from controller.intent.models import Intent
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.rollouts import RolloutService
from tests.integration.conftest import StepClock

OPERATOR = Actor(name="test-operator", request_id="test")


class ControllerServices:
    """Mixed into a test's controller dataclass, which holds ``sessions`` and ``clock``."""

    sessions: sessionmaker[Session]
    clock: StepClock

    @property
    def intents(self) -> IntentService:
        return IntentService(self.sessions, clock=self.clock)

    @property
    def rollouts(self) -> RolloutService:
        return RolloutService(self.sessions, clock=self.clock)

    def store_intent(self, intent: Intent, reason: str = "test") -> int:
        """``intent`` as the next version; its number."""
        written = self.intents.replace(
            dump_intent(intent), expected=self.intents.head(), actor=OPERATOR, reason=reason
        )
        return written.version.number
