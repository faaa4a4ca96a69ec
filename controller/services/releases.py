"""Releasing a switch: sluice gives the operator's config back and lets go.

A release is a plan like any other. ``plan`` is its dry run, from what the switch is
recorded to run: sluice's own entries deleted, every field of a shared entry sluice
overwrote set back to the value its adoption record saved (``controller/sonic/diff.py``),
the rest of the switch untouched. ``request`` records it (refused while a rollout is under
way, for a switch sluice has not adopted, or, when it takes ports down, unless
``allow_port_flaps``), and the worker carries it out (``run_pending``): a fresh read, the same
plan, written and verified by read-back (``controller/rollout/switches.py``
``converge_switch`` with nothing desired), sluice's leftovers checked for, the adoption
record closed. The reconcile loop then leaves the switch alone; a rollout adopts it again,
with a new record.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from controller.errors import Conflict, NotFound
from controller.intent.models import Intent, Switch
from controller.reconcile.access import SwitchAccess, unapplied
from controller.rollout.switches import Adoptions, converge_switch
from controller.services.audit import record_change
from controller.services.common import Actor, Page
from controller.services.rollouts import refuse_port_flaps
from controller.sonic.buffermgrd import buffermgrd_leftovers
from controller.sonic.coexist import effective, sluice_leftovers
from controller.sonic.diff import plan_switch, with_ownership
from controller.sonic.model import Plan, SwitchConfig
from controller.store.adoption_store import SqlAdoptions
from controller.store.models import Adoption, Release
from controller.store.repositories import adoptions, intents, rollouts, states
from controller.store.snapshots import decode_config, decode_fleet, save_running_state
from controller.types import Clock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdoptionInfo:
    id: int
    switch: str
    adopted_at: datetime
    adopted_by: str
    released_at: datetime | None
    released_by: str | None
    baseline: SwitchConfig

    @property
    def entries(self) -> int:
        return len(self.baseline)


@dataclass(frozen=True)
class ReleaseInfo:
    """A release: recorded (``id``), or only planned (a dry run: ``id`` and ``state`` say so)."""

    id: int | None
    switch: str
    state: str
    allow_port_flaps: bool
    reason: str | None
    requested_by: str | None
    requested_at: datetime | None
    finished_at: datetime | None
    adoption_id: int
    plan: Plan | None


def _adoption_info(row: Adoption) -> AdoptionInfo:
    return AdoptionInfo(
        row.id,
        row.switch_name,
        row.adopted_at,
        row.adopted_by,
        row.released_at,
        row.released_by,
        decode_config(row.baseline),
    )


def _release_info(row: Release, plan: Plan | None = None) -> ReleaseInfo:
    return ReleaseInfo(
        row.id,
        row.switch_name,
        row.state,
        row.allow_port_flaps,
        row.reason,
        row.requested_by,
        row.requested_at,
        row.finished_at,
        row.adoption_id,
        plan,
    )


@dataclass(frozen=True)
class _Letting:
    """What a release of one switch works from."""

    adoption: Adoption
    baseline: SwitchConfig
    owned: SwitchConfig  # what sluice wrote there, as it wrote it
    switch: Switch | None  # how to reach it (the newest intent that has it)


def _letting(session: Session, name: str) -> _Letting:
    adoption = adoptions.active(session=session, switch_name=name)
    if adoption is None:
        raise Conflict(f"{name} is not adopted by sluice: there is nothing to release")
    baseline = decode_config(adoption.baseline)
    versions = [intents.head_number(session=session)]
    verified = rollouts.verified_versions(session=session, switches=[name]).get(name)
    if verified:
        versions.append(verified)
    owned: SwitchConfig = {}
    switch: Switch | None = None
    for version in versions:
        stored = intents.desired_states(session=session, version=version, switches=[name])
        owned.update(effective(decode_fleet(stored).get(name, {}), baseline))
        row = intents.get_version(session=session, number=version) if version else None
        found = Intent.model_validate(row.intent).switches if row is not None else ()
        switch = switch or next((s for s in found if s.name == name), None)
    return _Letting(adoption, baseline, owned, switch)


def release_plan(name: str, running: SwitchConfig, letting: _Letting) -> Plan:
    """From ``running`` to the operator's config: nothing of sluice's desired."""
    # buffermgrd's groups for priorities sluice enabled go with them (as sluice's own).
    owned = letting.owned | buffermgrd_leftovers(running, letting.baseline, letting.owned, {})
    plan = plan_switch(name, {}, running, owned, baseline=letting.baseline)
    return with_ownership(plan, running, letting.baseline)


class ReleaseService:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    # -- the API's side ------------------------------------------------------------------------

    def plan(self, switch: str) -> ReleaseInfo:
        """The dry run: what releasing ``switch`` would write, from its recorded state."""
        with self._sessions() as session:
            letting = _letting(session, switch)
            return self._planned(session, switch, letting)

    def _planned(self, session: Session, switch: str, letting: _Letting) -> ReleaseInfo:
        running = decode_fleet(states.latest_running_states(session=session, switches=[switch]))
        plan = release_plan(switch, running.get(switch, {}), letting)
        return ReleaseInfo(
            None, switch, "planned", False, None, None, None, None, letting.adoption.id, plan
        )

    def request(self, switch: str, *, allow_port_flaps: bool, actor: Actor) -> ReleaseInfo:
        """Record a release of ``switch`` for the worker; its plan as of now."""
        with self._sessions.begin() as session:
            rollouts.lock_rollout_starts(session=session)
            active = rollouts.active_rollout(session=session)
            if active is not None:
                raise Conflict(
                    f"rollout {active.id} is {active.state}; let it finish or roll it back "
                    "before releasing a switch"
                )
            if adoptions.pending_release_of(session=session, switch_name=switch) is not None:
                raise Conflict(f"a release of {switch} is already pending")
            letting = _letting(session, switch)
            planned = self._planned(session, switch, letting)
            if planned.plan is not None and not allow_port_flaps:
                refuse_port_flaps(
                    {switch: planned.plan.port_flaps} if planned.plan.port_flaps else {}
                )
            at = self._clock()
            row = adoptions.insert_release(
                session=session,
                switch_name=switch,
                adoption_id=letting.adoption.id,
                allow_port_flaps=allow_port_flaps,
                requested_by=actor.name,
                request_id=actor.request_id,
                at=at,
            )
            record_change(
                session,
                actor,
                "release",
                resource_type="switch",
                resource_id=switch,
                version=None,
                before={"adoption": letting.adoption.id},
                after={"release": row.id, "allow_port_flaps": allow_port_flaps},
                at=at,
            )
            return _release_info(row, planned.plan)

    def get(self, release_id: int) -> ReleaseInfo:
        with self._sessions() as session:
            row = adoptions.get_release(session=session, release_id=release_id)
            if row is None:
                raise NotFound(f"release {release_id} does not exist")
            return _release_info(row)

    def list(self, *, limit: int, offset: int) -> Page[ReleaseInfo]:
        with self._sessions() as session:
            rows, total = adoptions.list_releases(session=session, limit=limit, offset=offset)
            return Page([_release_info(r) for r in rows], total, limit, offset)

    def adoptions(
        self, *, limit: int, offset: int, switch: str | None = None
    ) -> Page[AdoptionInfo]:
        with self._sessions() as session:
            rows, total = adoptions.list_adoptions(
                session=session, limit=limit, offset=offset, switch=switch
            )
            return Page([_adoption_info(r) for r in rows], total, limit, offset)

    # -- the worker's side ---------------------------------------------------------------------

    def run_pending(self, access: SwitchAccess) -> int:
        """Carry out every pending release; how many it finished."""
        with self._sessions() as session:
            pending = [
                (row.id, row.switch_name, row.allow_port_flaps)
                for row in adoptions.pending_releases(session=session)
            ]
        for release_id, switch, allow in pending:
            state, reason, detail = self._release(access, release_id, switch, allow)
            with self._sessions.begin() as session:
                adoptions.finish_release(
                    session=session,
                    release_id=release_id,
                    state=state,
                    reason=reason,
                    detail=detail,
                    at=self._clock(),
                )
            log.info(
                "release %d of %s: %s%s",
                release_id,
                switch,
                state,
                f" ({reason})" if reason else "",
            )
        return len(pending)

    def _release(
        self, access: SwitchAccess, release_id: int, name: str, allow: bool
    ) -> tuple[str, str | None, dict[str, object] | None]:
        with self._sessions() as session:
            try:
                letting = _letting(session, name)
            except Conflict as error:
                return "failed", error.detail, None
        if letting.switch is None:
            result = unapplied(name, "failed", "no intent version says how to reach the switch")
            return "failed", result.reason, result.to_json()
        by = f"release {release_id}"
        records = SqlAdoptions(self._sessions, clock=self._clock)
        held = _HeldRelease(records)
        converged = converge_switch(
            access,
            letting.switch,
            {},
            letting.owned,
            allow_port_flaps=allow,
            adoptions=held,
            by=by,
        )
        result = converged.result
        if result.status != "applied_verified":
            status = result.status if result.status in ("unreachable", "unknown") else "failed"
            return status, result.reason, result.to_json()
        if converged.running is None:
            return "failed", "written, but the switch could not be read back", result.to_json()
        with self._sessions.begin() as session:
            save_running_state(
                session, switch=name, config=converged.running, at=self._clock(), source=by
            )
        left = sluice_leftovers(converged.running)
        if left:
            return "failed", f"sluice's config remains: {', '.join(left[:10])}", result.to_json()
        if held.asked:
            records.release(name, by)
        return "released", None, result.to_json()


class _HeldRelease:
    """Adoption records whose release waits until the release has found nothing of sluice's
    left on the switch: until then the switch stays adopted, so a new release can be asked."""

    def __init__(self, records: Adoptions) -> None:
        self._records = records
        self.asked = False

    def baseline(self, switch: str) -> SwitchConfig | None:
        return self._records.baseline(switch)

    def adopt(self, switch: str, baseline: SwitchConfig, by: str) -> None:
        self._records.adopt(switch, baseline, by)

    def release(self, switch: str, by: str) -> None:
        self.asked = True
