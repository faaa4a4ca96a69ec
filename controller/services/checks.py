"""Fabric checks over what the switches run: the RoCE check (``sluice check roce``).

A check reads the switches fresh (a discovery: recorded, answered by the worker, which alone
talks to switches; ``controller/services/discoveries.py``) and judges what was read with the
pure checker (``controller/sonic/roce.py``). With no switch named, every switch of the
current intent is read. A switch the worker could not read is a finding of the check, not an
error of the request; the discovery stays recorded, so a check can be judged again from it
(``roce_of``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict, NotFound
from controller.services.common import Actor
from controller.services.discoveries import DiscoverTarget, DiscoveryInfo, DiscoveryService
from controller.services.intents import head_intent
from controller.sonic.roce import RoceCheck, check_roce
from controller.sonic.topology import topology


@dataclass(frozen=True)
class RoceCheckInfo:
    """The RoCE check of one discovery."""

    discovery_id: int
    check: RoceCheck


def roce_of(info: DiscoveryInfo) -> RoceCheckInfo:
    """The RoCE check of what a finished discovery read."""
    if info.state != "done":
        raise Conflict(f"discovery {info.id} is {info.state}: nothing to check yet")
    found = list(info.found)
    return RoceCheckInfo(info.id, check_roce(found, topology(found), info.errors))


class CheckService:
    def __init__(self, sessions: sessionmaker[Session], discoveries: DiscoveryService) -> None:
        self._sessions = sessions
        self._discoveries = discoveries

    def _every_switch(self) -> list[str]:
        with self._sessions() as session:
            intent = head_intent(session)
        names = [s.name for s in intent.switches] if intent is not None else []
        if not names:
            raise NotFound("the intent has no switches: name endpoints to check")
        return names

    def roce(
        self,
        *,
        names: Sequence[str] = (),
        endpoints: Sequence[DiscoverTarget] = (),
        actor: Actor,
    ) -> RoceCheckInfo:
        """Read the named switches and endpoints (none: every intent switch) and check them."""
        if not names and not endpoints:
            names = self._every_switch()
        info = self._discoveries.request(names=names, endpoints=endpoints, actor=actor)
        return roce_of(info)

    def roce_of_discovery(self, discovery_id: int) -> RoceCheckInfo:
        """The RoCE check of a recorded discovery."""
        return roce_of(self._discoveries.get(discovery_id))
