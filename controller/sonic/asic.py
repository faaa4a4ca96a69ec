"""Whether a SONiC switch's ASIC takes a PFC priority -> priority group map. Pure.

SAI gives ``SAI_PORT_ATTR_QOS_PFC_PRIORITY_TO_PRIORITY_GROUP_MAP`` no default mapping
(``saiport.h``: "Default no map"), and SONiC binds one only on some ASICs: sonic-buildimage
``files/build_templates/qos_config.j2`` writes ``PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|AZURE`` and
each port's ``pfc_to_pg_map`` only when ``asic_type`` is in ``pfc_to_pg_map_supported_asics``
(``mellanox``, ``barefoot``). Where an ASIC refuses the binding, orchagent drops the port's
whole ``PORT_QOS_MAP`` entry before its ``pfc_enable`` (sonic-swss ``orchagent/qosorch.cpp``
``handlePortQosMapTable``: a refused SAI set ends the entry), so the port would have no PFC at
all. sluice therefore binds its own map where SONiC's template does, and nowhere else.

The image's ``asic_type`` lives in ``/etc/sonic/sonic_version.yml``, which neither CONFIG_DB
(sonic-device_metadata.yang has no such leaf) nor SONiC's gNMI server (sonic-net/sonic-gnmi
``sonic_data_client/non_db_client.go``: ``OTHERS/osversion/build`` returns only
``build_version``) exposes. What a switch does say is its platform
(``DEVICE_METADATA|localhost`` ``platform``, which discovery and the rollout read), and
sonic-buildimage names each platform's ASIC in ``device/<vendor>/<platform>/platform_asic``.
From those files (sonic-buildimage commit 086b03bd70, the one the repository's YANG models
come from): every ``x86_64-mlnx_*`` and ``x86_64-nvidia_*`` platform is ``mellanox``, and the
``barefoot`` platforms are the 13 of ``BAREFOOT_PLATFORMS``; no other platform there has either
ASIC. A platform outside both is not bound (SONiC's own choice on most ASICs), and neither is a
platform sluice does not know, unless the switch's own config has a
``PFC_PRIORITY_TO_PRIORITY_GROUP_MAP`` of the operator's, which SONiC's template writes only on
those ASICs.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.sonic.buffermgrd import DEVICE_METADATA, LOCALHOST, PLATFORM
from controller.sonic.context import PREFIX
from controller.sonic.model import SwitchConfig

PFC_TO_PG_TABLE = "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"
# qos_config.j2 ``pfc_to_pg_map_supported_asics``.
PFC_TO_PG_ASICS = ("mellanox", "barefoot")
MELLANOX_PREFIXES = ("x86_64-mlnx_", "x86_64-nvidia_")
# device/*/*/platform_asic = barefoot (sonic-buildimage 086b03bd70).
BAREFOOT_PLATFORMS = frozenset(
    {
        "x86_64-accton_as9516_32d-r0",
        "x86_64-accton_wedge100bf_32qs-r0",
        "x86_64-accton_wedge100bf_32x-r0",
        "x86_64-accton_wedge100bf_65x-r0",
        "x86_64-arista_7170_32c",
        "x86_64-arista_7170_32cd",
        "x86_64-arista_7170_64c",
        "x86_64-arista_7170b_64c",
        "x86_64-ingrasys_s9280_64x-r0",
        "x86_64-netberg_aurora_610-r0",
        "x86_64-netberg_aurora_710-r0",
        "x86_64-netberg_aurora_750-r0",
        "x86_64-wnc_osw1800-r0",
    }
)
TEMPLATE = "qos_config.j2's pfc_to_pg_map_supported_asics (mellanox, barefoot)"


def asic_of(platform: str) -> str | None:
    """``mellanox`` or ``barefoot`` for a platform of theirs, None for any other."""
    if platform.startswith(MELLANOX_PREFIXES):
        return "mellanox"
    return "barefoot" if platform in BAREFOOT_PLATFORMS else None


@dataclass(frozen=True, slots=True)
class PfcToPg:
    """Whether sluice binds its ``pfc_to_pg_map`` on a switch, and why."""

    binds: bool
    why: str

    def note(self) -> str:
        verb = "binds" if self.binds else "does not bind"
        return f"PORT_QOS_MAP.pfc_to_pg_map: {verb} sluice's PFC priority -> group map: {self.why}"


def pfc_to_pg(facts: SwitchConfig) -> PfcToPg:
    """The choice for a switch from what sluice keeps of it (its baseline: the platform in
    ``DEVICE_METADATA|localhost``, the operator's maps). A switch whose record has no
    platform (adopted before sluice kept it) is bound as before: a change there would take
    every lossless port down and up (``PORT_QOS_MAP`` is port-critical)."""
    metadata = facts.get((DEVICE_METADATA, LOCALHOST))
    platform = (metadata or {}).get(PLATFORM)
    if not platform:
        return PfcToPg(True, "the switch's platform is not recorded (bound as before)")
    asic = asic_of(platform)
    if asic is not None:
        return PfcToPg(True, f"platform {platform} is {asic}, where SONiC binds it ({TEMPLATE})")
    theirs = sorted(k for t, k in facts if t == PFC_TO_PG_TABLE and not k.startswith(PREFIX))
    if theirs:
        return PfcToPg(
            True,
            f"the switch has the operator's {PFC_TO_PG_TABLE}|{theirs[0]}, which SONiC writes "
            f"only on the ASICs that take it ({TEMPLATE}; platform {platform})",
        )
    return PfcToPg(
        False,
        f"platform {platform} is not a mellanox or barefoot one, the ASICs SONiC binds it on "
        f"({TEMPLATE}); SAI states no default map and an ASIC that refuses the binding would "
        "lose the port's PFC, so each lossless priority pauses from the group the ASIC gives it",
    )
