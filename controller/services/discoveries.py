"""Discovery: what running switches are, read by the worker, answered through the API.

The API records a request (``request``: the switches, each by name from the current intent
or by its gNMI endpoint and credential reference) and waits for the worker, the only process
that talks to switches, to answer it (``answer``: each switch read once per database,
``controller/sonic/discovery.py``). What is stored is what each switch runs; what is shown
(``get``) is worked out from it when read, against the intent of that moment: the fabric's
topology from LLDP and its base RTT estimate (``controller/sonic/topology.py``), the
inventory as intent YAML to review, and the declared ports checked against the switches'.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from controller.errors import FieldProblem, NotFound, SouthboundError
from controller.intent.models import GnmiEndpoint, Intent, Switch
from controller.reconcile.access import SwitchDiscovery
from controller.reconcile.fanout import map_parallel
from controller.services.common import Actor, WorkerWait
from controller.services.intents import head_intent
from controller.sonic.cables import discovered_cables
from controller.sonic.discovery import Discovery, inventory_problems
from controller.sonic.topology import DEFAULT_PER_HOP_US, estimate_rtt, inventory, topology
from controller.store.models import Discovery as DiscoveryRow
from controller.store.repositories import discoveries
from controller.types import Clock, JsonObject

log = logging.getLogger(__name__)

# SONiC's default port MTU (sonic-port.yang): the frame size the RTT estimate assumes when
# there is no intent to say the fabric's.
DEFAULT_MTU_BYTES = 9100


@dataclass(frozen=True, slots=True)
class DiscoverTarget:
    """A switch to discover and how to reach it."""

    name: str
    gnmi: GnmiEndpoint
    credential_ref: str
    username: str | None = None  # None: the worker's gNMI user name

    def as_json(self) -> JsonObject:
        return {
            "name": self.name,
            "gnmi": self.gnmi.model_dump(mode="json", exclude_none=True),
            "credential_ref": self.credential_ref,
            "username": self.username,
        }


def _intent_target(switch: Switch) -> DiscoverTarget:
    """An intent switch's target, logged in as its sessions are (its own login or its
    group's)."""
    try:
        login = switch.login("")
    except LookupError as error:
        raise NotFound(f"switch {switch.name}: {error}") from None
    return DiscoverTarget(switch.name, switch.gnmi, login.secret_ref, login.username or None)


@dataclass(frozen=True)
class DiscoveryInfo:
    id: int
    state: str
    requested_by: str
    requested_at: datetime
    finished_at: datetime | None
    found: tuple[Discovery, ...]
    errors: dict[str, str]
    topology: JsonObject | None
    rtt: JsonObject | None
    declared_rtt_us: float | None
    inventory: JsonObject | None
    problems: tuple[FieldProblem, ...]


def _targets(
    names: Sequence[str], endpoints: Sequence[DiscoverTarget], intent: Intent | None
) -> list[DiscoverTarget]:
    """The named intent switches' targets, then the given endpoints (by name, once)."""
    known = {s.name: s for s in intent.switches} if intent is not None else {}
    missing = [name for name in names if name not in known]
    if missing:
        raise NotFound(
            f"no such switch in the intent: {', '.join(missing)} (give its gNMI endpoint)"
        )
    targets = {name: _intent_target(known[name]) for name in names}
    targets.update({t.name: t for t in endpoints})
    if not targets:
        raise NotFound("nothing to discover: name intent switches or give endpoints")
    return list(targets.values())


def discovery_view(row: DiscoveryRow, intent: Intent | None) -> DiscoveryInfo:
    """What a request found, and what follows from it against ``intent``."""
    result = row.result or {}
    found = tuple(
        Discovery.from_json(item) for item in result.get("switches", []) if "error" not in item
    )
    errors = {
        str(item["switch"]): str(item["error"])
        for item in result.get("switches", [])
        if "error" in item
    }
    if row.state != "done":
        return DiscoveryInfo(
            row.id, row.state, row.requested_by, row.requested_at, None, (), {}, None, None,
            None, None, (),
        )  # fmt: skip
    topo = topology(found)
    mtu = intent.fabric.mtu_bytes if intent is not None else DEFAULT_MTU_BYTES
    per_hop = float(row.request.get("per_hop_us") or DEFAULT_PER_HOP_US)
    rtt = estimate_rtt(topo, found, mtu_bytes=mtu, per_hop_us=per_hop)
    endpoints = {
        str(t["name"]): {"gnmi": t["gnmi"], "credential_ref": t["credential_ref"]}
        for t in row.request.get("switches", [])
    }
    cables = discovered_cables({d.switch: d for d in found}).discovered()
    declared = {s.name: s for s in intent.switches} if intent is not None else {}
    problems: list[FieldProblem] = []
    for discovery in found:
        switch = declared.get(discovery.switch)
        if switch is not None:
            problems += inventory_problems(switch, discovery)
    return DiscoveryInfo(
        row.id,
        row.state,
        row.requested_by,
        row.requested_at,
        row.finished_at,
        found,
        errors,
        topo.as_json(),
        None if rtt is None else rtt.as_json(),
        intent.fabric.base_rtt_us if intent is not None else None,
        inventory(found, topo, endpoints, rtt, cables),
        tuple(problems),
    )


class DiscoveryService:
    def __init__(
        self, sessions: sessionmaker[Session], *, clock: Clock, wait: WorkerWait | None = None
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._wait = wait or WorkerWait()

    def request(
        self,
        *,
        names: Sequence[str] = (),
        endpoints: Sequence[DiscoverTarget] = (),
        per_hop_us: float | None = None,
        actor: Actor,
    ) -> DiscoveryInfo:
        """Record a discovery of the named intent switches and the given endpoints, wait
        for the worker to answer it, and give what it found."""
        with self._sessions.begin() as session:
            targets = _targets(names, endpoints, head_intent(session))
            request: dict[str, Any] = {"switches": [t.as_json() for t in targets]}
            if per_hop_us is not None:
                request["per_hop_us"] = per_hop_us
            row = discoveries.insert(
                session=session,
                request=request,
                requested_by=actor.name,
                request_id=actor.request_id,
                at=self._clock(),
            )
            discovery_id = row.id

        def answered() -> bool:
            with self._sessions() as session:
                found = discoveries.get(session=session, discovery_id=discovery_id)
                return found is not None and found.state == "done"

        self._wait.until(answered, f"discovery {discovery_id}")
        return self.get(discovery_id)

    def get(self, discovery_id: int) -> DiscoveryInfo:
        with self._sessions() as session:
            row = discoveries.get(session=session, discovery_id=discovery_id)
            if row is None:
                raise NotFound(f"discovery {discovery_id} does not exist")
            return discovery_view(row, head_intent(session))

    def answer(self, access: SwitchDiscovery, *, max_parallel: int = 8) -> int:
        """The worker's side: read every switch of every pending request; how many
        requests it answered."""
        with self._sessions() as session:
            pending = [(row.id, dict(row.request)) for row in discoveries.pending(session=session)]
        for discovery_id, request in pending:
            targets = [
                DiscoverTarget(
                    str(t["name"]),
                    GnmiEndpoint.model_validate(t["gnmi"]),
                    str(t["credential_ref"]),
                    None if t.get("username") is None else str(t["username"]),
                )
                for t in request.get("switches", [])
            ]
            found = map_parallel(
                lambda target: _discover_one(access, target),
                targets,
                max_parallel=max_parallel,
                name="discover",
            )
            with self._sessions.begin() as session:
                discoveries.finish(
                    session=session,
                    discovery_id=discovery_id,
                    result={"switches": found},
                    at=self._clock(),
                )
        return len(pending)


def _discover_one(access: SwitchDiscovery, target: DiscoverTarget) -> JsonObject:
    """What one switch runs, or why it could not be read."""
    try:
        found = access.discover(
            target.name, target.gnmi, target.credential_ref, username=target.username
        )
    except (SouthboundError, NotFound) as error:
        log.warning("discovery of %s failed: %s", target.name, error.detail)
        return {"switch": target.name, "error": error.detail}
    return found.as_json()
