"""What a fresh virtual switch holds of its own in the tables sluice reads: the counter groups
SONiC's init_cfg enables (vsonic's seed), in the shared FLEX_COUNTER_TABLE."""

from __future__ import annotations

from controller.sonic.model import SwitchConfig
from vsonic.seed import ENABLED_COUNTER_GROUPS

SWITCH_OWN: SwitchConfig = {
    ("FLEX_COUNTER_TABLE", group): {"FLEX_COUNTER_STATUS": "enable"}
    for group in ENABLED_COUNTER_GROUPS
}


def as_read_back(config: SwitchConfig) -> SwitchConfig:
    """What reading sluice's tables returns once ``config`` is applied to a fresh switch:
    ``config``, plus the switch's own entries that sluice did not compile."""
    return {**{k: v for k, v in SWITCH_OWN.items() if k not in config}, **config}
