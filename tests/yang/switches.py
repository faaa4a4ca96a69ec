"""What a switch holds before sluice writes: vsonic's seed (PORT, BUFFER_POOL, DEVICE_METADATA)
for a switch of the intent, so leafrefs to PORT and BUFFER_POOL have their targets."""

from __future__ import annotations

from controller.intent.models import Switch
from vsonic.db import Config, MemoryStore, read_config
from vsonic.seed import PortSeed, SwitchSeed, seed_store


def seeded_config(switch: Switch) -> Config:
    store = MemoryStore()
    ports = tuple(PortSeed(p.name, p.speed_gbps) for p in switch.ports)
    seed_store(store, SwitchSeed(hostname=switch.name, ports=ports))
    return read_config(store)
