"""What the controller knows of each switch's own config, for plans and rollout starts.

A switch sluice adopted has its adoption record's baseline; one it has not adopted but
discovered has what the newest discovery read; one it knows nothing of has neither (a fresh
switch, as far as sluice can tell). From that, before anything is recorded:

- ``preflight`` refuses an intent whose declared ports differ from what a switch last
  reported (``InventoryMismatch``), that would change a switch's lossless traffic
  (``LosslessConflict``), or that puts a PFC watchdog on a switch that runs none, which GCU
  refuses (``WatchdogNotStarted``), each problem named (``controller/sonic/discovery.py``,
  ``controller/sonic/coexist.py``, ``controller/sonic/gcu.py``);
- ``effective_fleet`` is what sluice would write to each switch: the desired state merged with
  the operator's config (``controller/sonic/coexist.py``);
- ``buffermgrd_warnings`` says, per port where SONiC's traditional buffer manager writes the
  lossless groups, that the headroom is its lookup-table profile, and where its figures
  differ from the intent's (``controller/sonic/buffermgrd.py``); ``buffermgrd_invariants``
  refuses an intent whose lossless invariants break with that profile's figures
  (``BuffermgrdHeadroomDoesNotFit``, ``BuffermgrdKmaxAboveXoff``);
- ``pfc_to_pg_notes`` says, per switch a lossless class reaches, whether sluice binds its PFC
  priority -> group map there and why: only where SONiC's own template does, by the
  switch's platform (``controller/sonic/asic.py``);
- ``pg_counter_warnings`` says, per switch whose operator disabled the priority group
  counters a lossless class reads, that sluice leaves them off
  (``controller/sonic/tables/flex_counter_table.py``).

The worker checks the same against a fresh read before it writes; these are the API's early
answers, from what is recorded.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from controller.errors import (
    FieldProblem,
    InventoryMismatch,
    LosslessConflict,
    WatchdogNotStarted,
)
from controller.intent.models import Intent
from controller.sonic.asic import pfc_to_pg
from controller.sonic.buffermgrd import LeftToBuffermgrd, check_left_headroom, headroom_notes
from controller.sonic.coexist import (
    coexist,
    effective,
    lossless_claim,
    lossless_problems,
    operator_baseline,
)
from controller.sonic.discovery import Discovery, inventory_problems
from controller.sonic.gcu import watchdog_not_started
from controller.sonic.model import EntryKey, SwitchConfig
from controller.sonic.tables.flex_counter_table import TABLE as FLEX_COUNTER_TABLE
from controller.sonic.tables.flex_counter_table import operator_disabled
from controller.store.adoption_store import adoption_state
from controller.store.repositories import discoveries


@dataclass(frozen=True)
class KnownSwitch:
    """``baseline``: the operator's config (the adoption's, else the discovered one);
    ``adopted``: whether an active adoption record holds it; ``discovery``: the newest."""

    baseline: SwitchConfig | None
    adopted: bool
    discovery: Discovery | None


def known_switches(session: Session, names: Collection[str]) -> dict[str, KnownSwitch]:
    adopted = adoption_state(session, names)
    found = _discoveries(session, names)
    known: dict[str, KnownSwitch] = {}
    for name in names:
        discovery = found.get(name)
        baseline = adopted.baselines.get(name)
        if baseline is None and discovery is not None:
            baseline = operator_baseline(discovery.config())
        known[name] = KnownSwitch(baseline, name in adopted.baselines, discovery)
    return known


def fabric_discoveries(session: Session, intent: Intent) -> dict[str, Discovery]:
    """The newest discovery of each of the intent's switches, and of each switch their LLDP
    tables name as a neighbour (the other end of a fabric link, in the intent or not), by
    the name it was discovered by: what lossless headroom is sized from
    (``controller/sonic/cables.py``)."""
    found = _discoveries(session, [s.name for s in intent.switches])
    peers = {n.system_name for d in found.values() for n in d.neighbours} - found.keys()
    return found | (_discoveries(session, sorted(peers)) if peers else {})


def _discoveries(session: Session, names: Collection[str]) -> dict[str, Discovery]:
    return {
        name: Discovery.from_json(data)
        for name, data in discoveries.latest_found(session=session, switches=names).items()
    }


def baselines_of(known: Mapping[str, KnownSwitch]) -> dict[str, SwitchConfig]:
    return {name: k.baseline for name, k in known.items() if k.baseline is not None}


def effective_fleet(
    desired: Mapping[str, SwitchConfig], known: Mapping[str, KnownSwitch]
) -> dict[str, SwitchConfig]:
    """Each switch's desired state as sluice would write it there."""
    return {
        name: effective(config, known[name].baseline if name in known else None)
        for name, config in desired.items()
    }


def inherited_fields(
    desired: SwitchConfig, known: KnownSwitch | None
) -> dict[EntryKey, dict[str, str]]:
    """The fields each merged map takes from an operator's map (for a plan's ownership)."""
    return coexist(desired, known.baseline if known else None).inherited


def preflight(
    intent: Intent | None,
    desired: Mapping[str, SwitchConfig],
    known: Mapping[str, KnownSwitch],
) -> None:
    """Refuse ``intent`` (its compiled ``desired`` per switch) when a switch last reported
    other ports or speeds than it declares, or when it would change a switch's lossless
    traffic; every problem of every switch named, ports first."""
    mismatched: list[FieldProblem] = []
    for switch in intent.switches if intent is not None else ():
        found = known.get(switch.name)
        if switch.name in desired and found is not None and found.discovery is not None:
            mismatched += inventory_problems(switch, found.discovery)
    if mismatched:
        raise InventoryMismatch(mismatched)
    touched: list[FieldProblem] = []
    claim = lossless_claim(intent)
    for name, config in sorted(desired.items()):
        baseline = known[name].baseline if name in known else None
        if not config or baseline is None:
            continue
        touched += [
            FieldProblem(f"{name}: {p.path}", p.reason)
            for p in lossless_problems(
                effective(config, baseline),
                baseline,
                declared=claim.taken_over,
                claimed=claim.claimed,
            )
        ]
    if touched:
        raise LosslessConflict(touched)
    unstarted = [
        FieldProblem(f"{name}: {problem.path}", problem.reason)
        for name, problem in sorted(watchdogs_not_started(desired, known).items())
    ]
    if unstarted:
        raise WatchdogNotStarted(unstarted)


def watchdogs_not_started(
    desired: Mapping[str, SwitchConfig], known: Mapping[str, KnownSwitch]
) -> dict[str, FieldProblem]:
    """Per switch whose newest discovery shows no PFC watchdog, where sluice would write one:
    GCU would refuse it (``controller/sonic/gcu.py`` ``watchdog_not_started``). A switch
    never discovered is judged by the worker from its own read."""
    found: dict[str, FieldProblem] = {}
    for name, config in desired.items():
        switch = known.get(name)
        if not config or switch is None or switch.discovery is None:
            continue
        problem = watchdog_not_started(
            effective(config, switch.baseline), switch.discovery.config()
        )
        if problem is not None:
            found[name] = problem
    return found


def buffermgrd_warnings(
    desired: Mapping[str, SwitchConfig],
    known: Mapping[str, KnownSwitch],
    seen: Mapping[str, SwitchConfig],
) -> list[FieldProblem]:
    """One warning per port of each switch whose lossless groups SONiC's traditional buffer
    manager writes (its baseline's buffer model and cables): whose headroom it is, and how
    its profile (from ``seen``, what the switch is recorded to run) compares with the
    intent's. Port speeds from the newest discovery."""
    return [
        FieldProblem(f"switches.{name}.ports.{note.port}", note.note())
        for name, notes in sorted(_left_to_buffermgrd(desired, known, seen).items())
        for note in notes
    ]


def buffermgrd_invariants(
    intent: Intent | None,
    desired: Mapping[str, SwitchConfig],
    known: Mapping[str, KnownSwitch],
    seen: Mapping[str, SwitchConfig],
) -> None:
    """Refuse ``intent`` when, on a port whose lossless groups buffermgrd writes and whose
    lookup-table profile the switch holds (as ``buffermgrd_warnings`` finds it), the lossless
    invariants break with that profile's figures (``controller/sonic/buffermgrd.py``
    ``check_left_headroom``): the first such port, switches in name order."""
    if intent is None:
        return
    for name, notes in sorted(_left_to_buffermgrd(desired, known, seen).items()):
        check_left_headroom(intent, name, notes)


def _left_to_buffermgrd(
    desired: Mapping[str, SwitchConfig],
    known: Mapping[str, KnownSwitch],
    seen: Mapping[str, SwitchConfig],
) -> dict[str, list[LeftToBuffermgrd]]:
    """Per switch, its ports whose headroom buffermgrd's lookup-table profile gives
    (``headroom_notes``), from its baseline's buffer facts, ``seen`` and the newest
    discovery's port speeds."""
    left: dict[str, list[LeftToBuffermgrd]] = {}
    for name, config in sorted(desired.items()):
        found = known.get(name)
        if not config or found is None or found.baseline is None:
            continue
        ports = found.discovery.ports if found.discovery is not None else ()
        speeds = {("PORT", p.name): {"speed": str(p.speed_mbps)} for p in ports if p.speed_mbps}
        observed = {**found.baseline, **seen.get(name, {}), **speeds}
        want = effective(config, found.baseline)
        notes = headroom_notes(config, want, found.baseline, observed)
        if notes:
            left[name] = notes
    return left


def pfc_to_pg_notes(
    desired: Mapping[str, SwitchConfig], known: Mapping[str, KnownSwitch]
) -> list[FieldProblem]:
    """One note per switch whose compiled state binds sluice's ``pfc_to_pg_map``: whether
    it stays bound there (``controller/sonic/asic.py`` ``pfc_to_pg``, from the switch's
    baseline), or, for a switch never discovered, that the rollout judges it from its read."""
    notes: list[FieldProblem] = []
    for name, config in sorted(desired.items()):
        if not any(t == "PORT_QOS_MAP" and "pfc_to_pg_map" in f for (t, _), f in config.items()):
            continue
        found = known.get(name)
        if found is None or found.baseline is None:
            said = (
                "PORT_QOS_MAP.pfc_to_pg_map: the switch was never discovered, so its platform "
                "is not known: the rollout binds sluice's PFC priority -> group map only if "
                "the platform it reads is one SONiC binds it on (mellanox, barefoot)"
            )
        else:
            said = pfc_to_pg(found.baseline).note()
        notes.append(FieldProblem(f"switches.{name}", said))
    return notes


def pg_counter_warnings(
    desired: Mapping[str, SwitchConfig], known: Mapping[str, KnownSwitch]
) -> list[FieldProblem]:
    """One warning per switch where the intent's lossless class would enable a priority group
    counter group that the operator's config (its baseline) disables: sluice leaves it off,
    so the class's drops are read at its queue only and its priority groups' watermarks not
    at all (``flex_counter_table.operator_disabled``)."""
    warnings: list[FieldProblem] = []
    for name, config in sorted(desired.items()):
        found = known.get(name)
        off = operator_disabled(config, found.baseline if found is not None else None)
        if not off:
            continue
        groups = ", ".join(f"{FLEX_COUNTER_TABLE}|{group}" for group in off)
        said = (
            f"{groups}: disabled in the operator's config, which sluice keeps; the lossless "
            "class's priority group counters are off there (its drops are read at its queue "
            "only), until the operator enables them (counterpoll pg-drop enable / "
            "counterpoll watermark enable)"
        )
        warnings.append(FieldProblem(f"switches.{name}", said))
    return warnings
