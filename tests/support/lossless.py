"""A lossless class on the example intent, as the rollout tests over vsonic and SONiC's own
software make one (docs/lossless.md)."""

from __future__ import annotations

from typing import Any

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent

# Spectrum-2's headroom figures (sonic-buildimage files/build_templates/asic_table.j2).
SPECTRUM_2 = {"cell_bytes": 144, "pipeline_latency_bytes": 18432, "mac_phy_delay_bytes": 819.2}


def with_lossless_storage(intent: Intent, *, cnp: bool = False) -> Intent:
    """The storage class (queue 3) lossless on PFC priority 3, marking with DCQCN's defaults;
    ``cnp``: with RoCE's usual CNP priority (DSCP 48, priority 6: the example intent's
    control class carries DSCP 48)."""
    data: dict[str, Any] = dump_intent(intent)
    data["fabric"]["lossless"] = dict(SPECTRUM_2) | ({"cnp": {}} if cnp else {})
    for service_class in data["service_classes"]:
        if service_class["name"] == "storage":
            service_class |= {"ecn": "standard", "lossless": {"pfc_priority": 3}}
    return parse_intent(data)
