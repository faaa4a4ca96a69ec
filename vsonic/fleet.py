"""Build the switch targets a gNMI server process answers for.

Standalone: one switch on its own Redis, the way a SONiC box holds its databases; an agent
can read and write that Redis directly.

Fleet: many switches in one process, each with its own in-memory store, selected by the
gNMI prefix ``target`` (the switch name). A 1,000-switch scale test then needs one process
and no Redis at all; every switch still validates, writes and answers on its own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from vsonic.db import MemoryStore, Store
from vsonic.gcu import GcuBehaviour
from vsonic.seed import PortSeed, SwitchSeed, seed_store
from vsonic.switch import Switch, Targets


def standalone_targets(
    name: str, store: Store, ports: Sequence[PortSeed], gcu: GcuBehaviour | None = None
) -> Targets:
    seed_store(store, SwitchSeed(hostname=name, ports=tuple(ports)))
    return Targets([Switch(name, store, gcu=gcu or GcuBehaviour())], fleet=False)


def fleet_targets(
    names: Sequence[str],
    ports: Sequence[PortSeed],
    gcu: GcuBehaviour | None = None,
    without_sluice_yang: Collection[str] = (),
) -> Targets:
    """``without_sluice_yang``: switches that model a SONiC without sonic-sluice-agent.yang."""
    base = gcu or GcuBehaviour()
    if len(set(names)) != len(names):
        raise ValueError("fleet switch names must be unique")
    switches = []
    for name in names:
        store = MemoryStore()
        seed_store(store, SwitchSeed(hostname=name, ports=tuple(ports)))
        behaviour = replace(
            base, yang_extension=base.yang_extension and name not in without_sluice_yang
        )
        switches.append(Switch(name, store, gcu=behaviour))
    return Targets(switches, fleet=True)
