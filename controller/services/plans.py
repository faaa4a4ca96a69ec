"""Plans: the ordered CONFIG_DB ops that take switches from one state to another.

Two questions are answered here, both pure over stored snapshots:

- ``plan``: from what each switch is recorded to run (``running_states``; until an apply
  records a read-back, what the newest discovery read of its QoS tables, else nothing) to
  the desired state of the current or a proposed intent, as sluice would write it there
  (merged with the operator's config, ``controller/services/coexistence.py``), each field
  named sluice's, the operator's kept, or the operator's overwritten with its saved value.
  An intent whose ports differ from what a switch reported, or that would change its
  lossless traffic, is refused with every problem named;
- ``diff``: from the desired state of one version to that of another.

With a lossless class, a plan also says which cable length sized each port's headroom and
where it came from (``controller/sonic/cables.py``, from the newest discoveries): a proposed
intent is compiled for them; the current version was compiled for those recorded when it was
written, and a port whose stored profile is for another length is a warning. On a switch in
SONiC's traditional buffer model with cable lengths, where buffermgrd writes the lossless
groups, each port's warning says the headroom is buffermgrd's (``buffermgrd_warnings``), and
where the switch holds that lookup-table profile the lossless invariants are checked with its
figures (``buffermgrd_invariants``: ``BuffermgrdHeadroomDoesNotFit``, ``BuffermgrdKmaxAboveXoff``).
Each switch a lossless class reaches gets a note saying whether sluice's PFC priority -> group
map is bound there, by its platform (``pfc_to_pg_notes``, ``controller/sonic/asic.py``), and
a switch whose operator disabled the priority group counters the class reads is warned that
they stay off (``pg_counter_warnings``).

``owned`` is the desired state of the current version: the entries sluice wrote, so a plan
may remove them when an intent drops them, and never touches anything else. A ``Plan``
(``controller/sonic/model.py``) is this service's answer: the API reads its type here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from sqlalchemy.orm import Session, sessionmaker

from controller.accept import accept_sized, cable_sizing
from controller.errors import FieldProblem, NotFound
from controller.openconfig.qos import platform_warnings
from controller.services.coexistence import (
    KnownSwitch,
    baselines_of,
    buffermgrd_invariants,
    buffermgrd_warnings,
    effective_fleet,
    fabric_discoveries,
    inherited_fields,
    known_switches,
    pfc_to_pg_notes,
    pg_counter_warnings,
    preflight,
)
from controller.services.intents import version_intent
from controller.sonic.agent_advice import agent_warnings
from controller.sonic.cables import NO_SIZING, CableSizing, stale_headroom
from controller.sonic.diff import diff_fleet, with_ownership
from controller.sonic.model import Plan as Plan
from controller.sonic.model import SwitchConfig
from controller.store.repositories import intents, states
from controller.store.snapshots import decode_fleet, save_running_state
from controller.types import Clock


@dataclass(frozen=True, slots=True)
class PlanResult:
    """Plans against ``base_version`` (the current version: its desired state is what sluice
    owns, and the target unless an intent was proposed), and the warnings about the planned
    intent (``controller.sonic.agent_advice``: accepted, but the agent will do no good)."""

    base_version: int
    proposed: bool
    plans: list[Plan]
    warnings: list[FieldProblem]
    # Each lossless port's cable length and where it came from (controller/sonic/cables.py).
    cables: CableSizing = NO_SIZING


@dataclass(frozen=True, slots=True)
class DiffResult:
    from_version: int
    to_version: int
    plans: list[Plan]


class PlanService:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    def plan(
        self, *, intent_data: object | None = None, switches: Sequence[str] | None = None
    ) -> PlanResult:
        """Per-switch plans from the recorded running state to the desired state of
        ``intent_data`` (a proposed intent, validated) or, if None, of the current version."""
        with self._sessions() as session:
            discovered = partial(fabric_discoveries, session)
            accepted = None if intent_data is None else accept_sized(intent_data, discovered)
            head = intents.head_number(session=session)
            if accepted is None:
                # Stored intents were validated when written; only their shape is read here.
                planned = version_intent(session, head)
                proposed = None
                cables = NO_SIZING if planned is None else cable_sizing(planned, discovered)
            else:
                planned, proposed, cables = accepted.intent, accepted.compiled, accepted.cables
            owned = decode_fleet(intents.desired_states(session=session, version=head))
            desired = owned if proposed is None else proposed
            wanted = _select(switches, set(desired) | set(owned))
            observed = decode_fleet(states.latest_running_states(session=session, switches=wanted))
            known = known_switches(session, wanted)
        preflight(planned, _only(desired, wanted), known)
        buffermgrd_invariants(planned, _only(desired, wanted), known, observed)
        plans = _shown_plans(_only(desired, wanted), observed, _only(owned, wanted), known)
        warnings = [] if planned is None else agent_warnings(planned) + platform_warnings(planned)
        warnings += buffermgrd_warnings(_only(desired, wanted), known, observed)
        warnings += pfc_to_pg_notes(_only(desired, wanted), known)
        warnings += pg_counter_warnings(_only(desired, wanted), known)
        shown = cables.only(wanted)
        if planned is not None and proposed is None:
            warnings += stale_headroom(planned, shown, _only(owned, wanted), head)
        return PlanResult(head, proposed is not None, plans, warnings, shown)

    def diff(
        self,
        *,
        from_version: int | None = None,
        to_version: int | None = None,
        switch: str | None = None,
    ) -> DiffResult:
        """Desired-state diff between two versions (default: the previous and the current).

        Version 0 is the empty state before the first intent.
        """
        with self._sessions() as session:
            head = intents.head_number(session=session)
            to_n = head if to_version is None else to_version
            from_n = max(to_n - 1, 0) if from_version is None else from_version
            older = self._snapshot(session, from_n, head)
            newer = self._snapshot(session, to_n, head)
        wanted = _select(None if switch is None else [switch], set(older) | set(newer))
        plans = _plans(_only(newer, wanted), _only(older, wanted), _only(older, wanted))
        return DiffResult(from_n, to_n, plans)

    def record_running_state(self, *, switch: str, config: SwitchConfig, source: str) -> None:
        """Remember what ``switch`` was read back running (called after an apply)."""
        with self._sessions.begin() as session:
            save_running_state(
                session, switch=switch, config=config, at=self._clock(), source=source
            )

    @staticmethod
    def _snapshot(session: Session, number: int, head: int) -> dict[str, SwitchConfig]:
        if number < 0 or number > head:
            raise NotFound(f"intent version {number} does not exist (the newest is {head})")
        if number == 0:
            return {}
        return decode_fleet(intents.desired_states(session=session, version=number))


def _select(requested: Sequence[str] | None, known: Collection[str]) -> list[str]:
    if requested is None:
        return sorted(known)
    missing = sorted(set(requested) - set(known))
    if missing:
        raise NotFound(f"no such switch in the intent: {', '.join(missing)}")
    return sorted(set(requested))


def _only(fleet: Mapping[str, SwitchConfig], names: Collection[str]) -> dict[str, SwitchConfig]:
    return {name: fleet.get(name, {}) for name in names}


def _shown_plans(
    desired: Mapping[str, SwitchConfig],
    observed: Mapping[str, SwitchConfig],
    owned: Mapping[str, SwitchConfig],
    known: Mapping[str, KnownSwitch],
) -> list[Plan]:
    """Plans to what sluice would write to each switch, from what it is recorded to run (or,
    never written, what discovery read), with every field's owner."""
    seen = {
        name: observed.get(name) or (k.discovery.qos if k.discovery is not None else {})
        for name, k in known.items()
    }
    baselines = baselines_of(known)
    plans = diff_fleet(
        effective_fleet(desired, known), seen, effective_fleet(owned, known), baselines=baselines
    )
    # A switch with no operator config known is sluice's alone: no owners to tell apart.
    return [
        with_ownership(
            plans[name],
            seen.get(name, {}),
            baselines[name],
            inherited_fields(desired.get(name, {}), known.get(name)),
        )
        if name in baselines
        else plans[name]
        for name in sorted(plans)
    ]


def _plans(
    desired: Mapping[str, SwitchConfig],
    observed: Mapping[str, SwitchConfig],
    owned: Mapping[str, SwitchConfig],
) -> list[Plan]:
    plans = diff_fleet(desired, observed, owned)
    return [plans[name] for name in sorted(plans)]
