"""Intent: what the operator declares. Frozen pydantic models that reject unknown keys.

Field-level rules (types, ranges, formats) live here; rules that look across objects (each
DSCP used once, QJUMP levels fit the line rate, thresholds fit the buffer) live in
``controller/intent/validate.py``, which returns every problem at once with its field path.

Units are in the field names: ``_gbps`` (10^9 bit/s), ``_bytes``, ``_us`` (microseconds).
"""

from __future__ import annotations

import itertools
import re
import types
import typing
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from controller.qos.qjump import QjumpWindow

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
# SONiC port names as CONFIG_DB keys them; sluice manages Ethernet ports only.
PORT_RE = r"^Ethernet[0-9]{1,4}$"

Name = Annotated[str, Field(pattern=NAME_RE)]
QueueIndex = Annotated[int, Field(ge=0, le=7)]
Dscp = Annotated[int, Field(ge=0, le=63)]
# The largest byte count a CONFIG_DB buffer field holds (BUFFER_PROFILE ``size`` is a YANG
# int32 in sonic-buildimage's sonic-buffer-profile.yang; controller/sonic/tables/buffer_profile.py).
BUFFER_BYTES_MAX = 2**31 - 1


def _wants_number(annotation: object, value: object) -> bool:
    """Whether ``value`` holds a boolean where ``annotation`` wants an int or a float
    (directly, or as an element of a tuple/list/dict value)."""
    if annotation in (int, float):
        return isinstance(value, bool)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _wants_number(args[0], value)
    if origin in (typing.Union, types.UnionType):
        if isinstance(value, bool) and bool in args:
            return False
        return any(_wants_number(arg, value) for arg in args)
    if origin in (tuple, list) and isinstance(value, (list, tuple)) and args:
        return any(_wants_number(args[0], item) for item in value)
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return any(_wants_number(args[1], item) for item in value.values())
    return False


class Frozen(BaseModel):
    """Base of every intent model: unknown keys are errors, instances are immutable, numbers
    are numbers (no booleans, no NaN or infinity: neither is a CONFIG_DB value)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, str_strip_whitespace=True, allow_inf_nan=False
    )

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_not_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic reads True as 1 for an int field (``queue: true`` became queue 1).
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and _wants_number(field.annotation, value):
            raise ValueError("a boolean is not a number")
        return value


class Role(StrEnum):
    LEAF = "leaf"
    SPINE = "spine"


class EcnMode(StrEnum):
    """How a class's queue is marked or dropped (see docs/algorithms.md)."""

    OFF = "off"  # no WRED/ECN profile on the queue
    STANDARD = "standard"  # K = C x RTT x lambda on every queue (MQ-ECN, NSDI 2016 §2)
    PER_QUEUE_MINIMUM = "per-queue-minimum"  # K_i = w_i / sum(w) x K, static
    MQECN = "mqecn"  # agent moves K_i with the fair-share rate
    DYNAQ = "dynaq"  # agent moves per-queue drop thresholds, no ECN
    HDCQ = "hdcq"  # agent adapts the threshold from the marked fraction

    @property
    def is_dynamic(self) -> bool:
        return self in (EcnMode.MQECN, EcnMode.DYNAQ, EcnMode.HDCQ)


class SchedulingType(StrEnum):
    STRICT = "STRICT"
    DWRR = "DWRR"


class Workload(StrEnum):
    """Flow-size distributions shipped in ``controller/qos/workloads/``."""

    WEBSEARCH = "websearch"
    DATAMINING = "datamining"
    CACHE = "cache"
    HADOOP = "hadoop"


class GnmiEndpoint(Frozen):
    address: str = Field(min_length=1, max_length=253)
    port: int = Field(ge=1, le=65535)
    target: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="gNMI prefix target, for a server that fronts several switches (e.g. vsonic "
        "--fleet); leave unset for a SONiC switch's own gNMI server",
    )
    set_deadline_s: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="how long one Set may take on this switch's platform: every CONFIG_DB Set "
        "is a GCU run (checkpoint, YANG-validated patch, config save), seconds to minutes; "
        "unset takes the controller's default (60 s)",
    )


class Port(Frozen):
    name: Annotated[str, Field(pattern=PORT_RE)]
    speed_gbps: int = Field(gt=0, le=800, description="line rate in Gb/s")
    buffer_bytes: int | None = Field(
        default=None,
        gt=0,
        le=BUFFER_BYTES_MAX,
        description="egress buffer this port may use; fabric default if unset",
    )


class Switch(Frozen):
    name: Name
    role: Role
    gnmi: GnmiEndpoint
    credential_ref: str = Field(
        min_length=1,
        max_length=256,
        description=(
            "where the gNMI credential lives (e.g. env:SLUICE_GNMI_PASSWORD); never the secret"
        ),
    )
    ports: tuple[Port, ...] = Field(min_length=1)

    @field_validator("credential_ref")
    @classmethod
    def _reference_not_secret(cls, value: str) -> str:
        if not re.match(r"^(env|file|vault):[^\s]+$", value):
            raise ValueError("must be a reference such as env:NAME, file:/path or vault:path")
        return value


# A Linux interface name: 1..15 bytes, no '/', ':' or whitespace (IFNAMSIZ is 16 with the NUL).
IFNAME_RE = r"^[A-Za-z0-9_.-]{1,15}$"
# What Ansible needs to reach a host and run its modules there (docs/hosts.md).
SSH_USER_RE = r"^[a-z_][a-z0-9_-]{0,31}$"
ABSOLUTE_PATH_RE = r"^/[A-Za-z0-9_./+-]{0,4095}$"
PortRange = Annotated[str, Field(pattern=r"^[0-9]{1,5}-[0-9]{1,5}$")]
L4Port = Annotated[int, Field(ge=1, le=65535)]


class HostSsh(Frozen):
    """How Ansible logs in to a host. The modules write /proc/sys, tc and nftables, so the
    login needs root: log in as root, or as another user with ``become``."""

    user: str = Field(default="root", pattern=SSH_USER_RE)
    port: int = Field(default=22, ge=1, le=65535)
    key_ref: str | None = Field(
        default=None,
        max_length=4096,
        description=(
            "file:/path of the private key Ansible logs in with (a reference, never the key); "
            "none: the SSH agent or the control node's default keys"
        ),
    )
    become: bool = Field(default=False, description="escalate to root with sudo after login")

    @field_validator("key_ref")
    @classmethod
    def _key_is_a_file_reference(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^file:/[^\s]+$", value):
            raise ValueError("must be file:/absolute/path (ssh reads the key from a file)")
        return value


class Host(Frozen):
    name: Name
    address: str = Field(min_length=1, max_length=253)
    nic_gbps: int = Field(gt=0, le=800)
    ssh: HostSsh = Field(default_factory=HostSsh)
    device: str = Field(
        default="eth0", pattern=IFNAME_RE, description="the NIC the QJUMP HTB tree is built on"
    )
    python: str = Field(
        default="/usr/bin/python3",
        pattern=ABSOLUTE_PATH_RE,
        description="the host's Python 3.10+ (ansible_python_interpreter; never discovered)",
    )


class Scheduling(Frozen):
    type: SchedulingType
    weight: int | None = Field(
        default=None, gt=0, le=1_000_000, description="DWRR weight, any scale; normalised to 1..100"
    )
    weight_min: int | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        description="the least weight the tuner may give (same scale as weight); unset: weight",
    )
    weight_max: int | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        description="the most weight the tuner may give (same scale as weight); unset: weight",
    )

    @model_validator(mode="after")
    def _weight_inside_its_range(self) -> Scheduling:
        if (self.weight_min is not None or self.weight_max is not None) and self.weight is None:
            raise ValueError("weight_min/weight_max need a weight (DWRR) to range around")
        low = self.weight_min if self.weight_min is not None else self.weight
        high = self.weight_max if self.weight_max is not None else self.weight
        in_range = low is None or high is None or self.weight is None or low <= self.weight <= high
        if not in_range:
            raise ValueError(
                f"need weight_min <= weight <= weight_max, got {low}, {self.weight}, {high}"
            )
        return self


class PiasStage(Frozen):
    """A demotion stage: once a flow has sent past the previous threshold it moves here."""

    dscp: Dscp
    queue: QueueIndex


class Pias(Frozen):
    """PIAS tagging for this class (PIAS, NSDI 2015): stage 0 is the class's own
    first DSCP and queue; each demotion stage has its own DSCP and queue."""

    workload: Workload
    load: float = Field(gt=0.0, lt=1.0)
    demotions: tuple[PiasStage, ...] = Field(min_length=1, max_length=7)
    derivation: Literal["byte_weighted", "mm1_chain"] = Field(
        default="byte_weighted",
        description="thresholds from sluice's byte-weighted model or the paper's M/M/1 chain "
        "(PIAS NSDI'15 §4.2; docs/algorithms.md §6)",
    )
    thresholds_bytes: tuple[Annotated[int, Field(ge=1, le=2**40)], ...] | None = Field(
        default=None,
        description="demotion thresholds in force instead of the derived ones, one per "
        "demotion, increasing (the tuner writes them when the measured sizes drift)",
    )

    @model_validator(mode="after")
    def _thresholds_match_the_stages(self) -> Pias:
        given = self.thresholds_bytes
        if given is None:
            return self
        if len(given) != len(self.demotions):
            raise ValueError(
                f"thresholds_bytes has {len(given)} values for {len(self.demotions)} "
                "demotions: give one per demotion"
            )
        if any(b <= a for a, b in itertools.pairwise(given)):
            raise ValueError("thresholds_bytes must increase: each demotion comes later")
        return self


class Hdcq(Frozen):
    """HDCQ's three priorities (HDCQ 2021 §3.3, Algorithms 1 and 3): hosts mark pure ACKs
    Priority 1 (``ack``), a flow's first ``flow_type_thresh_bytes`` Priority 2 (the class's own
    first DSCP and queue) and the rest Priority 3 (``long``); the switch serves the ACK queue
    first (strict) and the other two by strict priority or, with ``wrr_weight`` w, by WRR with
    w packets of Priority 2 per one of Priority 3 (the paper uses w = 5)."""

    flow_type_thresh_bytes: int = Field(gt=0, le=2**40)
    ack: PiasStage
    long: PiasStage
    wrr_weight: int | None = Field(default=None, ge=1, le=100)
    port_threshold_pct: float = Field(
        default=60.0, gt=0.0, le=100.0, description="per-port ECN point, % of the port buffer"
    )


class HostsMatch(Frozen):
    """Which locally sent packets a host marks with this class (docs/intent.md): every key
    optional and all must hold; an empty match selects every packet the host sends."""

    protocol: Literal["tcp", "udp", "sctp", "dccp"] | None = None
    dports: tuple[L4Port | PortRange, ...] | None = Field(default=None, min_length=1)
    sports: tuple[L4Port | PortRange, ...] | None = Field(default=None, min_length=1)
    uid: int | None = Field(default=None, ge=0, le=2**32 - 2, description="socket owner")
    cgroup: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_./-]{1,200}$",
        description="cgroup v2 path of the sending process, e.g. system.slice/voip.service",
    )

    @field_validator("dports", "sports")
    @classmethod
    def _ranges_increase(cls, value: tuple[int | str, ...] | None) -> tuple[int | str, ...] | None:
        for item in value or ():
            if isinstance(item, str):
                low, high = (int(part) for part in item.split("-"))
                if not 0 < low < high <= 65535:
                    raise ValueError(f"port range {item!r} must be low-high with 1 <= low < high")
        return value

    @field_validator("cgroup")
    @classmethod
    def _cgroup_inside(cls, value: str | None) -> str | None:
        if value is not None and ".." in value.split("/"):
            raise ValueError("a cgroup path may not climb out with '..'")
        return value


class ServiceClass(Frozen):
    name: Name
    dscp: tuple[Dscp, ...] = Field(min_length=1)
    queue: QueueIndex
    scheduling: Scheduling
    ecn: EcnMode = EcnMode.STANDARD
    ecn_lambda: float | None = Field(
        default=None,
        gt=0,
        le=10,
        description="this class's lambda of K = C x RTT x lambda; none: fabric.ecn_lambda",
    )
    qjump_level: int | None = Field(default=None, ge=0, le=7, description="802.1p priority level")
    pias: Pias | None = None
    hdcq: Hdcq | None = None
    hosts_match: HostsMatch | None = Field(
        default=None,
        description="how hosts recognise this class's packets; none: hosts do not mark it",
    )


class HostExporter(Frozen):
    """sluice-host-exporter on every host (docs/hosts.md): finished flows' sizes, QJUMP fan-in
    and packet sizes, which only hosts see, for the tuner (docs/tuning.md). It listens on each
    host's ``address``, so that must be an IP address while it is on."""

    port: int = Field(default=9140, ge=1, le=65535)
    fan_in_window_ms: int = Field(
        default=10, ge=1, le=60_000, description="fan-in: distinct senders within this window"
    )
    reap_interval_s: float = Field(
        default=5.0, ge=0.1, le=3600.0, description="how often expired flows are reported"
    )


class Qjump(Frozen):
    """QJUMP fabric parameters (QJUMP, NSDI 2015 §3): epoch = 2nP/R + eps."""

    hosts: int = Field(gt=0, le=1_000_000, description="n: hosts that may fan in")
    packet_bytes: int = Field(default=256, ge=64, le=9216, description="P")
    epsilon_us: float = Field(default=4.0, ge=0.0, le=1000.0, description="switch processing slack")
    factors: dict[Annotated[int, Field(ge=0, le=7)], Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict, description="throughput factor f_i per level"
    )
    window: QjumpWindow = Field(
        default=QjumpWindow.ALIGNED,
        description="aligned: f x P per host epoch (the paper's limiter); sliding: at most "
        "floor(f) packets (every packet charged as P) in every epoch-long window, f >= 1",
    )
    release_jitter_us: float = Field(
        default=0.0,
        ge=0.0,
        le=1_000_000.0,
        description="sliding: how much later than its limiter lets a packet out a host may "
        "send it (interrupts, a descheduled virtual CPU); each level refills over an epoch "
        "plus this, so a window of one epoch holds at the wire too",
    )


class Agent(Frozen):
    """Orders for the on-switch qos-agent (written to SLUICE_AGENT|global)."""

    interval_ms: int = Field(
        default=100,
        ge=1,
        le=60_000,
        description="the agent's loop; its queue counters are polled this often (>= the floor)",
    )
    hysteresis_pct: float = Field(default=5.0, ge=0.0, le=50.0)
    hdcq_k: float = Field(default=0.06, gt=0.0, lt=1.0)
    stale_after_ms: int = Field(default=1000, ge=1, le=600_000)


class CounterPolling(Frozen):
    """What the switches' counters can be polled at (a fact about the platform) and how often
    sluice polls them (``FLEX_COUNTER_TABLE``, docs/telemetry.md). Floors default to SONiC's
    ``counterpoll`` minimums (sonic-utilities:counterpoll/main.py: queue and port 100 ms,
    watermark 1 s); a platform with high-frequency telemetry declares lower ones."""

    queue_floor_ms: int = Field(default=100, ge=1, le=60_000)
    port_floor_ms: int = Field(default=100, ge=1, le=60_000)
    watermark_floor_ms: int = Field(default=1000, ge=1, le=60_000)
    queue_interval_ms: int = Field(
        default=10_000, ge=1, le=3_600_000, description="queue counters when no agent runs"
    )
    port_interval_ms: int = Field(default=1000, ge=1, le=3_600_000)
    watermark_interval_ms: int = Field(
        default=60_000, ge=1, le=3_600_000, description="queue watermarks when no agent runs"
    )
    wred_ecn_queue: bool = Field(
        default=False,
        description="the platform publishes WRED/ECN queue counters (SONiC 202505+)",
    )


class ReconcileMode(StrEnum):
    """What the reconciliation loop does about drift (docs/intent.md)."""

    CORRECT = "correct"  # write the desired values back, then verify by read-back
    ALERT = "alert"  # record the drift only; an operator decides


class Reconcile(Frozen):
    """The reconciliation loop's policy: how often it reads every switch and what it does
    about what it finds. Jitter spreads the passes of many controllers and switches."""

    mode: ReconcileMode = ReconcileMode.CORRECT
    interval_s: float = Field(default=60.0, ge=1.0, le=86_400.0)
    jitter_pct: float = Field(
        default=10.0, ge=0.0, le=50.0, description="each wait is interval_s +/- this percent"
    )


class Health(Frozen):
    """When telemetry makes a queue, switch or the fabric warn or critical
    (controller/telemetry/health.py, docs/health.md). Each pair is warn, then critical."""

    drops_per_s_warn: float = Field(default=1.0, ge=0.0, description="dropped packets/s")
    drops_per_s_critical: float = Field(default=100.0, ge=0.0)
    mark_fraction_warn: float = Field(default=0.5, ge=0.0, le=1.0, description="marked/sent")
    mark_fraction_critical: float = Field(default=0.9, ge=0.0, le=1.0)
    occupancy_pct_warn: float = Field(
        default=70.0, ge=0.0, le=100.0, description="queue occupancy, % of the port's buffer"
    )
    occupancy_pct_critical: float = Field(default=90.0, ge=0.0, le=100.0)
    agent_heartbeat_s_warn: float = Field(default=5.0, gt=0.0, le=86_400.0)
    agent_heartbeat_s_critical: float = Field(default=30.0, gt=0.0, le=86_400.0)
    counters_age_s_warn: float = Field(
        default=30.0, gt=0.0, le=86_400.0, description="since the switch's last update"
    )
    counters_age_s_critical: float = Field(default=120.0, gt=0.0, le=86_400.0)
    collector_lag_s_warn: float = Field(default=5.0, gt=0.0, le=86_400.0)
    collector_lag_s_critical: float = Field(default=30.0, gt=0.0, le=86_400.0)


class TuningMode(StrEnum):
    """What the tuner does with a change it finds (docs/tuning.md)."""

    OFF = "off"  # the tuner does not run
    PROPOSE = "propose"  # each change is a proposal an operator approves
    AUTO = "auto"  # each change is applied through a health-gated rollout


class TunerRollout(Frozen):
    """How ``auto`` mode rolls out a version the tuner wrote (controller/services/
    auto_rollout.py, docs/tuning.md "Auto mode's rollout"): batches of ``batch_size``
    switches, each soaked ``soak_s`` and gated on its drops (at most ``drops_max_increase_pct``
    above the baseline read before the batch) and on the agents' fallback (``agent_fallback``);
    a failure acts per ``on_fail``."""

    batch_size: int = Field(default=1, ge=1, le=10_000, description="switches per batch")
    soak_s: float = Field(
        default=120.0, ge=0.0, le=86_400.0, description="wait after each batch before its gates"
    )
    drops_max_increase_pct: float = Field(
        default=50.0, ge=0.0, le=100_000.0, description="drops gate: % above the baseline"
    )
    on_fail: Literal["rollback_batch", "rollback_all", "halt"] = Field(
        default="rollback_all", description="what a failed gate does"
    )
    agent_fallback: Literal["none", "no_increase"] = Field(
        default="none",
        description="none: no agent may be on its fallback (a pre-check refuses a fabric "
        "with one); no_increase: a batch may not put more queues on it than it had before",
    )


class Tuning(Frozen):
    """The tuner's policy (controller/tuning/, docs/tuning.md): what it may do, and what keeps
    it from flapping (a band inside which nothing changes, a minimum interval between two
    changes of one parameter, and a maximum relative step per change)."""

    mode: TuningMode = TuningMode.OFF
    window_s: float = Field(
        default=600.0, ge=10.0, le=86_400.0, description="telemetry history each decision reads"
    )
    hysteresis_pct: float = Field(
        default=10.0, ge=0.0, le=50.0, description="relative change below which none is proposed"
    )
    min_interval_s: float = Field(
        default=900.0, ge=0.0, le=604_800.0, description="least time between changes of one value"
    )
    max_step_pct: float = Field(
        default=25.0, gt=0.0, le=100.0, description="largest relative change in one step"
    )
    utilisation_target: float = Field(
        default=0.9, gt=0.0, le=1.0, description="ECN: port utilisation the tuner aims at"
    )
    ecn_lambda_min: float = Field(
        default=0.17,
        gt=0.0,
        le=10.0,
        description="ECN safe floor: K never below C x RTT x this (DCTCP analysis)",
    )
    ecn_lambda_max: float = Field(default=2.0, gt=0.0, le=10.0)
    pias_ks_threshold: float = Field(
        default=0.1, gt=0.0, lt=1.0, description="PIAS: CDF distance that counts as drift"
    )
    pias_min_flows: int = Field(
        default=1000, ge=1, description="PIAS: finished flows needed before drift is judged"
    )
    rollout: TunerRollout = Field(
        default_factory=TunerRollout, description="auto mode's health-gated rollout"
    )

    @model_validator(mode="after")
    def _lambda_range(self) -> Tuning:
        if self.ecn_lambda_min > self.ecn_lambda_max:
            raise ValueError("ecn_lambda_min must not exceed ecn_lambda_max")
        return self


class HostTransport(Frozen):
    """The hosts' TCP settings (sysctls). Unset ``tcp_ecn`` follows the classes: 1 (ask for
    ECN) when a class is ECN-marked on the switches, else 2, the Linux default (answer ECN
    but never ask). Unset ``congestion_control`` leaves each host's own choice alone."""

    tcp_ecn: int | None = Field(default=None, ge=0, le=2, description="net.ipv4.tcp_ecn")
    congestion_control: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9_]{1,15}$",
        description="net.ipv4.tcp_congestion_control; the host kernel must offer it",
    )


class Fabric(Frozen):
    base_rtt_us: float = Field(gt=0, le=100_000)
    ecn_lambda: float = Field(default=1.0, gt=0, le=10)
    mtu_bytes: int = Field(default=1500, ge=576, le=9216)
    port_buffer_bytes: int = Field(
        gt=0, le=BUFFER_BYTES_MAX, description="default per-port egress buffer"
    )
    wred_drop_probability_pct: int = Field(default=100, ge=0, le=100)
    egress_pool: str = Field(
        default="egress_lossy_pool",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$",
        description=(
            "existing BUFFER_POOL the queue buffer profiles draw from (not owned by sluice)"
        ),
    )
    qjump: Qjump | None = None
    host_transport: HostTransport = Field(default_factory=HostTransport)
    agent: Agent = Field(default_factory=Agent)
    counters: CounterPolling = Field(default_factory=CounterPolling)
    reconcile: Reconcile = Field(default_factory=Reconcile)
    health: Health = Field(default_factory=Health)
    tuning: Tuning = Field(default_factory=Tuning)
    host_exporter: HostExporter | None = None


class Intent(Frozen):
    """The whole declared state of the fabric; every version in the store is one of these."""

    api_version: Literal["sluice/v1"] = "sluice/v1"
    fabric: Fabric
    switches: tuple[Switch, ...] = ()
    hosts: tuple[Host, ...] = ()
    service_classes: tuple[ServiceClass, ...] = ()
