"""Plain data the table builders read: what each queue gets, per port profile and per switch.

The compiler (``controller/sonic/compile.py``) works these out from the intent once per fleet
(classes, weights, maps) and once per (speed, buffer) port profile (thresholds, profiles), so
a fleet of a thousand 64-port switches computes the QoS arithmetic a handful of times and the
table builders only stamp out per-port entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.intent.models import EcnMode, Fabric
from controller.qos.lossless import DcqcnEcn
from controller.sonic.model import Fields

# Every object sluice creates carries this prefix, so the diff can tell it from an operator's.
PREFIX = "SLUICE"
MAP_NAME = "SLUICE"


@dataclass(frozen=True, slots=True)
class QueueClass:
    """What one egress queue gets, from the class (or PIAS demotion stage) mapped to it."""

    queue: int
    class_name: str
    scheduling: str  # "STRICT" or "DWRR"
    weight: int  # normalised into SONiC's 1..100 for DWRR, 0 for STRICT
    ecn: EcnMode
    # HDCQ's per-port ECN point as a share of the port buffer (HDCQ 2021 §4.2.1: 60 %)
    port_threshold_pct: float | None = None
    # The class's own lambda of K = C x RTT x lambda (None: the fabric's)
    ecn_lambda: float | None = None
    # A lossless class's queue marking with DCQCN's Kmin/Kmax/Pmax (None: lossy, or ecn off)
    dcqcn: DcqcnEcn | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Bounds:
    """Where the agent may move a dynamic queue's threshold, and its static fallback (bytes)."""

    floor_bytes: int
    ceiling_bytes: int
    static_bytes: int


@dataclass(frozen=True, slots=True)
class QueueProfile:
    """One queue on ports of one (speed, buffer).

    ``wred_name`` is set for a shared static profile; a dynamic queue has ``bounds`` and its
    own per-port profile built from ``wred_fields`` (the start values); ``ecn`` off has
    neither.
    """

    queue: int
    scheduler: str
    weight: int
    wred_name: str | None
    wred_fields: Fields | None
    bounds: Bounds | None
    buffer_profile: str
    port_threshold_bytes: int | None = None  # HDCQ per-port ECN point on this port
    # The class's own lambda, ordered to the agent with the queue (None: the fabric's). Left out
    # of repr, which the port digest hashes, so an intent without one keeps its versions.
    ecn_lambda: float | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PortProfile:
    """Everything that depends only on a port's speed and buffer."""

    speed_gbps: int
    buffer_bytes: int
    k_bytes: int
    queues: tuple[QueueProfile, ...]
    static_wred: dict[str, Fields]  # shared WRED profiles these queues use, by name
    buffer_profiles: dict[str, Fields]  # BUFFER_PROFILE entries these queues use, by name
    digest: str  # short hash of the above: part of the switch's config version


@dataclass(frozen=True)
class FleetLossless:
    """What the intent's lossless classes put on every port (docs/lossless.md): the PFC
    priorities (each its own ingress priority group, as SONiC's stock config numbers them),
    the maps from TC (= queue) to priority group, from PFC priority to queue and from PFC
    priority to priority group, and the watchdog's fields. Which of them may replace an
    operator's own lossless config is the brownfield rules'
    (``controller.sonic.coexist.lossless_claim``)."""

    priorities: tuple[int, ...]
    tc_to_pg: Fields
    pfc_to_queue: Fields
    pfc_to_pg: Fields
    watchdog: Fields
    pool: str
    dynamic_th: int
    egress_pool: str


@dataclass(frozen=True)
class PgProfile:
    """A lossless BUFFER_PROFILE: an ingress one per (speed, cable length, MTU) as SONiC's,
    or the switch's static egress one for the lossless queues."""

    name: str
    fields: Fields


@dataclass(frozen=True)
class FleetQos:
    """Everything that depends only on the intent (the same on every switch)."""

    fabric: Fabric
    queues: tuple[QueueClass, ...]
    dscp_to_tc: Fields
    tc_to_queue: Fields
    schedulers: dict[str, Fields]
    algorithm: str  # static, or the one dynamic ECN mode in use
    dynamic_queues: tuple[int, ...]
    digest: str
    lossless: FleetLossless | None = None


@dataclass(frozen=True)
class PortContext:
    name: str
    profile: PortProfile
    lossless: PgProfile | None = None  # the port's lossless priority groups' profile


@dataclass(frozen=True)
class SwitchContext:
    """One switch's inputs to the table builders."""

    name: str
    fleet: FleetQos
    ports: tuple[PortContext, ...]
    version: str  # short hash of this switch's desired config (SLUICE_AGENT|global version)
    lossless_egress: PgProfile | None = None  # the lossless queues' egress profile


def dynamic_wred_name(port: str, queue: int) -> str:
    """Per-queue profile the agent rewrites: ``SLUICE_Q_Ethernet0_3`` (at most 23 characters
    for Ethernet9999, inside WRED_PROFILE's 32-character limit)."""
    return f"{PREFIX}_Q_{port}_{queue}"


def scheduler_name(queue: int) -> str:
    return f"{PREFIX}_SCHED_{queue}"
