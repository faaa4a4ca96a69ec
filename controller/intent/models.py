"""Intent: what the operator declares. Frozen pydantic models that reject unknown keys.

Field-level rules (types, ranges, formats) live here; rules that look across objects (each
DSCP used once, QJUMP levels fit the line rate, thresholds fit the buffer) live in
``controller/intent/validate.py``, which returns every problem at once with its field path.

Units are in the field names: ``_gbps`` (10^9 bit/s), ``_bytes``, ``_us`` (microseconds).
"""

from __future__ import annotations

import functools
import itertools
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from controller.qos.lossless import DCQCN_PAPER, DcqcnEcn, HeadroomPlatform
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
# Frame sizes a port may carry (SONiC's PORT ``mtu`` goes to 9216) and cable lengths headroom
# is sized for (SONiC's dynamic buffer model takes any length; 10 km is beyond a fabric).
MTU_MIN_BYTES = 576
MTU_MAX_BYTES = 9216
CABLE_LENGTH_MAX_M = 10_000.0


def _json_type_mismatch(annotation: object, value: object) -> str | None:
    """Why ``value`` is not of the JSON type ``annotation`` wants, where pydantic's lax mode
    would convert it anyway (a boolean or text read as a number, text or a number read as a
    boolean), directly or as an item of a tuple/list/dict value; None when it is. Held to
    this, the intent refuses what its published JSON Schema refuses."""
    if annotation in (int, float):
        if isinstance(value, bool):
            return "a boolean is not a number"
        if isinstance(value, str) and _reads_as_number(value):
            return "text is not a number (write the number without quotes)"
        return None
    if annotation is bool:
        if not isinstance(value, bool) and _lax_booleans.get(str(value).lower()) is not None:
            return "must be true or false"
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _json_type_mismatch(args[0], value)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None  # None is refused, where it is, by pydantic with its own reason
        reasons = [_json_type_mismatch(arg, value) for arg in args if arg is not type(None)]
        return None if None in reasons else reasons[0]
    items: Iterable[object] = ()
    if origin in (tuple, list) and isinstance(value, (list, tuple)) and args:
        items, annotation = value, args[0]
    elif origin is dict and isinstance(value, dict) and len(args) == 2:
        items, annotation = value.values(), args[1]
    return next((r for r in (_json_type_mismatch(annotation, i) for i in items) if r), None)


# What pydantic's lax mode reads as a boolean (pydantic-core's bool validator).
_lax_booleans = dict.fromkeys(("0", "off", "f", "false", "n", "no", "0.0"), False) | dict.fromkeys(
    ("1", "on", "t", "true", "y", "yes", "1.0"), True
)


def _reads_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _wants_number(annotation: object, value: object) -> bool:
    """Whether ``value`` is a boolean where ``annotation`` wants a number."""
    return _json_type_mismatch(annotation, value) == "a boolean is not a number"


def _mapping_key_type(annotation: object) -> Any:
    """The key type of a ``dict`` field (through ``Annotated`` and ``| None``), else None."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _mapping_key_type(args[0])
    if origin in (typing.Union, types.UnionType):
        keys = [_mapping_key_type(arg) for arg in args if arg is not type(None)]
        return keys[0] if len(keys) == 1 else None
    if origin is dict and len(args) == 2:
        return args[0]
    return None


@functools.cache
def _key_reader(owner: type[BaseModel], field_name: str) -> tuple[Any, TypeAdapter[Any]] | None:
    key_type = _mapping_key_type(owner.model_fields[field_name].annotation)
    return None if key_type is None else (key_type, TypeAdapter(key_type))


def colliding_keys(
    key_type: Any, mapping: dict[Any, Any], adapter: TypeAdapter[Any] | None = None
) -> str | None:
    """Why ``mapping`` cannot be read as keyed by ``key_type`` without losing an entry: two
    keys that convert to one (``7`` and ``'07'`` are both level 7, and pydantic would keep
    only the last), or a boolean where the key is a number. None when none."""
    adapter = adapter or TypeAdapter(key_type)
    seen: dict[object, object] = {}
    for key in mapping:
        if _wants_number(key_type, key):
            return f"key {key!r} is a boolean, not a number"
        try:
            converted = adapter.validate_python(key)
        except ValidationError:
            continue  # refused by the field's own validation, with its reason
        if converted in seen:
            return f"keys {seen[converted]!r} and {key!r} both mean {converted!r}: give it once"
        seen[converted] = key
    return None


def _collision(reader: tuple[Any, TypeAdapter[Any]], mapping: dict[Any, Any]) -> str | None:
    key_type, adapter = reader
    return colliding_keys(key_type, mapping, adapter)


class Frozen(BaseModel):
    """Base of every intent model: unknown keys are errors, instances are immutable, numbers
    are numbers (no booleans, no NaN or infinity: neither is a CONFIG_DB value), and a
    mapping's keys never collide once converted (``7`` and ``'07'``)."""

    # No str_strip_whitespace: " leaf1" is refused as its schema's pattern refuses it.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _json_types_are_kept(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic reads True as 1 for an int field (``queue: true`` became queue 1), "25" as
        # 25 and "yes" as True; the published schema refuses all three, and so does this.
        field = cls.model_fields.get(info.field_name or "")
        reason = None if field is None else _json_type_mismatch(field.annotation, value)
        if reason is not None:
            raise ValueError(reason)
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _keys_stay_apart(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict) or info.field_name not in cls.model_fields:
            return value
        reader = _key_reader(cls, info.field_name)
        reason = None if reader is None else _collision(reader, value)
        if reason is not None:
            raise ValueError(reason)
        return value


class Role(StrEnum):
    LEAF = "leaf"
    SPINE = "spine"


class Dialect(StrEnum):
    """What a switch's gNMI server speaks: SONiC's CONFIG_DB (origin ``sonic-db``) or the
    OpenConfig models (``openconfig-qos``, docs/openconfig.md)."""

    SONIC = "sonic"
    OPENCONFIG = "openconfig"


class Platform(StrEnum):
    """An OpenConfig switch's vendor platform, for what it does not support of the models
    (openconfig/featureprofiles' deviations; ``controller/openconfig/deviations.py``)."""

    ARISTA_CEOS = "arista_ceos"
    CISCO_8000 = "cisco_8000"
    JUNIPER = "juniper"
    NOKIA_SRL = "nokia_srl"


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
    cable_length_m: float | None = Field(
        default=None,
        gt=0,
        le=CABLE_LENGTH_MAX_M,
        description="length of the cable on this port, m (sizes lossless headroom); unset: "
        "fabric.lossless.cable_length_m",
    )
    mtu_bytes: int | None = Field(
        default=None,
        ge=MTU_MIN_BYTES,
        le=MTU_MAX_BYTES,
        description="this port's MTU (sizes lossless headroom); unset: fabric.mtu_bytes",
    )


# Where a secret lives, never the secret: the schemes ``controller/southbound/credentials.py``
# reads (docs/intent.md, "Credentials").
SECRET_SCHEMES = ("env", "file", "vault")
SECRET_REF_RE = re.compile(r"^(?P<scheme>[a-z]+):(?P<where>\S+)$")
# A vault reference: mount/path[#field]; no empty segment, no '..'.
VAULT_WHERE_RE = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+(?:#[A-Za-z0-9_.-]+)?$")
# A gNMI user name as SONiC's accounts allow it (Linux user names, and '.', '@' of LDAP/TACACS).
GNMI_USER_RE = r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$"


def check_secret_ref(value: str) -> str:
    """``value`` if it is a reference in one of ``SECRET_SCHEMES``; the refusal never repeats
    the value (it may be a secret pasted where its reference belongs)."""
    schemes = ", ".join(f"{scheme}:" for scheme in SECRET_SCHEMES)
    match = SECRET_REF_RE.match(value)
    if match is None or match["scheme"] not in SECRET_SCHEMES:
        raise ValueError(
            f"must be a reference to where the secret lives, in one of the schemes {schemes} "
            "(env:NAME, file:/path, vault:mount/path#field)"
        )
    scheme, where = match["scheme"], match["where"]
    if scheme == "vault" and (VAULT_WHERE_RE.match(where) is None or ".." in where.split("/")):
        raise ValueError("a vault: reference is vault:mount/path or vault:mount/path#field")
    return value


# The schema's pattern says what check_secret_ref checks, less its friendlier messages.
SECRET_REF_PATTERN = (
    r"^(env:\S+|file:\S+|vault:[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+(#[A-Za-z0-9_.-]+)?)$"
)
SecretRef = Annotated[
    str,
    Field(min_length=1, max_length=256, json_schema_extra={"pattern": SECRET_REF_PATTERN}),
    AfterValidator(check_secret_ref),
]
GnmiUser = Annotated[str, Field(pattern=GNMI_USER_RE)]


@dataclass(frozen=True)
class Login:
    """Whom a switch session logs in as: a user name and where its password lives."""

    username: str
    secret_ref: str


class Credential(Frozen):
    """A gNMI login shared by a group of switches (``intent.credentials``): each switch that
    names it in ``credential`` logs in with this user name and this secret."""

    name: Name
    username: GnmiUser
    secret_ref: SecretRef = Field(
        description="where the password lives (env:NAME, file:/path, vault:mount/path#field)"
    )


class Switch(Frozen):
    name: Name
    role: Role
    gnmi: GnmiEndpoint
    credential_ref: SecretRef | None = Field(
        default=None,
        description="this switch's own password: where it lives (e.g. env:SLUICE_GNMI_PASSWORD, "
        "file:/run/secrets/leaf1, vault:secret/fabric/leaf1#password); never the secret. "
        "Give this or credential",
    )
    username: GnmiUser | None = Field(
        default=None,
        description="this switch's own gNMI user name, with credential_ref; unset: the "
        "controller's SLUICE_GNMI_USERNAME",
    )
    credential: Name | None = Field(
        default=None,
        description="the name of a login in the intent's credentials, shared by a group of "
        "switches; instead of credential_ref and username",
    )
    ports: tuple[Port, ...] = Field(min_length=1)
    dialect: Dialect = Field(
        default=Dialect.SONIC,
        description="what the switch's gNMI server speaks: sonic (CONFIG_DB) or openconfig "
        "(openconfig-qos, docs/openconfig.md: no on-switch agent, no lossless classes)",
    )
    platform: Platform | None = Field(
        default=None,
        description="an openconfig switch's vendor platform: what it does not support of "
        "openconfig-qos is written around or refused (docs/openconfig.md, Vendor deviations)",
    )
    # The group named by ``credential``, attached by the intent that holds this switch.
    _group: Credential | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _one_login(self) -> Switch:
        if self.credential is not None and (
            self.credential_ref is not None or self.username is not None
        ):
            raise ValueError(
                "give credential (a group's login) or credential_ref and username, not both"
            )
        if self.credential is None and self.credential_ref is None:
            raise ValueError(
                "needs credential_ref (where its password lives) or credential (a group's login)"
            )
        return self

    def login(self, default_username: str) -> Login:
        """Whom this switch's sessions log in as. ``LookupError`` when it names a group but
        was not read as part of an intent that has it (the intent's rules refuse that)."""
        if self.credential is not None:
            if self._group is None:
                raise LookupError(f"credential {self.credential!r} is not in the intent")
            return Login(self._group.username, self._group.secret_ref)
        assert self.credential_ref is not None  # _one_login
        return Login(self.username or default_username, self.credential_ref)


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


class Objective(Frozen):
    """What the class's users should feel, as the hosts measure it (docs/intent.md). One
    objective for now; more may be added beside it (each optional, so an intent that sets
    none stays valid). The auto mode's rollouts gate each class on it
    (``controller/services/auto_rollout.py``): a batch passes while the objective holds, or,
    when it was already missed before the batch, while the batch made it no worse."""

    p99_fct_us_small: float | None = Field(
        default=None,
        gt=0,
        le=3.6e9,
        description="the 99th percentile completion time of the class's flows up to 100 kB, us",
    )


class Lossless(Frozen):
    """This class is lossless (docs/lossless.md): PFC pauses its priority instead of dropping,
    and its queue marks ECN for DCQCN between Kmin and Kmax, at most Pmax below Kmax. Defaults
    are the DCQCN paper's (SIGCOMM 2015: Kmin 5 KB, Kmax 200 KB, Pmax 1 %)."""

    pfc_priority: int = Field(ge=0, le=7, description="the 802.1p priority PFC pauses")
    kmin_bytes: int = Field(
        default=DCQCN_PAPER.kmin_bytes, ge=1, le=BUFFER_BYTES_MAX, description="ECN marks from here"
    )
    kmax_bytes: int = Field(
        default=DCQCN_PAPER.kmax_bytes,
        ge=1,
        le=BUFFER_BYTES_MAX,
        description="ECN marks every packet past here; must be below the XOFF point",
    )
    pmax_pct: int = Field(
        default=DCQCN_PAPER.pmax_pct, ge=1, le=100, description="marking probability at Kmax, %"
    )
    take_over: bool = Field(
        default=False,
        description="replace an operator's own lossless config of this priority on a switch "
        "sluice adopts; false: an intent that would change it is refused",
    )

    @model_validator(mode="after")
    def _kmin_below_kmax(self) -> Lossless:
        if self.kmin_bytes >= self.kmax_bytes:
            raise ValueError(
                f"kmin_bytes ({self.kmin_bytes}) must be below kmax_bytes ({self.kmax_bytes})"
            )
        return self

    def ecn(self) -> DcqcnEcn:
        return DcqcnEcn(self.kmin_bytes, self.kmax_bytes, self.pmax_pct)


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
    objective: Objective | None = Field(
        default=None, description="what the class's flows should see (hosts' measurements)"
    )
    lossless: Lossless | None = Field(
        default=None, description="PFC on a priority and DCQCN's ECN; none: the class may drop"
    )

    @property
    def dcqcn(self) -> DcqcnEcn | None:
        """A lossless class's DCQCN marking, which the switches write and the hosts' NICs react
        to; none when the class is lossy or does not mark (``ecn: off``)."""
        if self.lossless is None or self.ecn is EcnMode.OFF:
            return None
        return self.lossless.ecn()


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
        default_factory=dict,
        description="throughput factor f_i per level",
        json_schema_extra={"propertyNames": {"pattern": "^[0-7]$"}},
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
    allow_port_flaps: bool = Field(
        default=False,
        description="correct drift even when the repair takes switch ports admin down and up "
        "(QUEUE, BUFFER_QUEUE, PORT_QOS_MAP ...); otherwise such drift is only alerted",
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
    pfc_pause_per_s_warn: float = Field(
        default=300.0,
        ge=0.0,
        description="PFC pause frames/s on a lossless priority, either way (a pause storm)",
    )
    pfc_pause_per_s_critical: float = Field(
        default=3000.0,
        ge=0.0,
        description="also the pause-rate gate's limit in a rollout of a lossless class; at "
        "100 Gb/s this many pauses of the largest quanta hold the port paused all the time",
    )


class TuningMode(StrEnum):
    """What the tuner does with a change it finds (docs/tuning.md)."""

    OFF = "off"  # the tuner does not run
    PROPOSE = "propose"  # each change is a proposal an operator approves
    AUTO = "auto"  # each change is applied through a health-gated rollout


class TuningSearch(StrEnum):
    """Whether a tuning pass searches lambdas and weights in the twin (docs/tuning.md)."""

    OFF = "off"  # the rules alone
    TWIN = "twin"  # the counterfactual search in the twin, behind its fit check


class TunerRollout(Frozen):
    """How ``auto`` mode rolls out a version the tuner wrote (controller/services/
    auto_rollout.py, docs/tuning.md "Auto mode's rollout"): batches of ``batch_size``
    switches, each soaked ``soak_s`` and gated on its drops (at most ``drops_max_increase_pct``
    above the baseline read before the batch), on the agents' fallback (``agent_fallback``)
    and, where the hosts report it, on each busy class's small-flow FCT (its objective, or at
    most ``fct_max_increase_pct`` above the baseline); a failure acts per ``on_fail``."""

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
        "with one); no_increase: the pre-check lets a fabric with faulty agents start, but "
        "each batch must end with none on its switches (faults do not pass by standing "
        "still). An idle agent is not on its fallback",
    )
    fct_max_increase_pct: float = Field(
        default=50.0,
        ge=0.0,
        le=100_000.0,
        description="with the host exporter on: each class's small-flow p99 FCT gate, % above "
        "the baseline (a class with an objective is held to it instead)",
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
    search: TuningSearch = Field(
        default=TuningSearch.OFF,
        description="twin: lambdas and weights are searched in the twin, behind a fit check",
    )
    search_flows: int = Field(
        default=1000,
        ge=100,
        le=20_000,
        description="flows in each of the search's twin runs (bounds a candidate's run time)",
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


class PfcAction(StrEnum):
    """What SONiC's PFC watchdog does with a queue it finds stormed (sonic-pfcwd.yang)."""

    DROP = "drop"
    FORWARD = "forward"
    ALERT = "alert"


class PfcWatchdog(Frozen):
    """SONiC's PFC watchdog on every lossless port (``PFC_WD|<port>``). The defaults are
    sonic-utilities' ``pfcwd start_default`` for up to 32 ports (pfcwd/main.py:
    DEFAULT_DETECTION_TIME 200, DEFAULT_RESTORATION_TIME 200, DEFAULT_ACTION drop); the ranges
    are sonic-pfcwd.yang's."""

    detection_time_ms: int = Field(
        default=200, ge=100, le=5000, description="a queue paused this long is stormed"
    )
    restoration_time_ms: int = Field(
        default=200, ge=100, le=60_000, description="no pause this long ends the storm"
    )
    action: PfcAction = Field(default=PfcAction.DROP, description="what a stormed queue does")


class Cnp(Frozen):
    """What the NICs send DCQCN's congestion notification packets (CNPs) with: RoCE's usual
    DSCP 48 and 802.1p priority 6 (Guo et al., "RDMA over Commodity Ethernet at Scale",
    SIGCOMM 2016, puts CNPs in a high-priority lossy class of their own; NVIDIA's RoCE
    configuration guidance and its NICs' defaults, mlx5 ``cnp_dscp`` 48 and
    ``cnp_802p_prio`` 6). A CNP must not wait behind the data it slows down, nor be paused
    or dropped by a lossless queue's DCQCN ramp: its DSCP belongs to a lossy class on a
    strict or heavily weighted queue (``validate.cnp_rides_a_lossy_class``)."""

    dscp: Dscp = Field(default=48, description="the CNPs' DSCP, a lossy class's")
    priority: int = Field(
        default=6, ge=0, le=7, description="the CNPs' 802.1p priority, not a PFC one"
    )


class LosslessPlatform(Frozen):
    """What the switches' ASIC needs for lossless headroom (docs/lossless.md), as SONiC's
    dynamic buffer model keeps it (STATE_DB ``ASIC_TABLE``, ``PERIPHERAL_TABLE``, CONFIG_DB
    ``LOSSLESS_TRAFFIC_PATTERN``), in bytes. No default for the ASIC's own figures: they
    differ per chip and a guess would size headroom wrong."""

    cell_bytes: int = Field(ge=1, le=65_536, description="the ASIC's buffer cell size")
    pipeline_latency_bytes: float = Field(
        ge=0, le=BUFFER_BYTES_MAX, description="pipeline latency in bytes (xon)"
    )
    mac_phy_delay_bytes: float = Field(ge=0, le=BUFFER_BYTES_MAX, description="MAC/PHY delay")
    peer_response_bytes: float | None = Field(
        default=None,
        ge=0,
        le=BUFFER_BYTES_MAX,
        description="what the peer sends after XOFF arrives; unset: IEEE 802.3's pause quanta "
        "for the port's speed",
    )
    gearbox_delay_ns: float = Field(default=0.0, ge=0, le=1_000_000, description="0: no gearbox")
    small_packet_pct: float = Field(
        default=100.0, ge=0, le=100, description="share of small packets (worst case 100)"
    )
    lossless_mtu_bytes: int = Field(
        default=1024, ge=64, le=MTU_MAX_BYTES, description="largest lossless (RDMA) packet"
    )
    cable_length_m: float = Field(
        default=5.0,
        gt=0,
        le=CABLE_LENGTH_MAX_M,
        description="cable length of a port that sets none",
    )
    dynamic_th: int = Field(
        default=0, ge=-8, le=7, description="the lossless groups' shared-buffer alpha, 2^n"
    )
    ingress_pool: str = Field(
        default="ingress_lossless_pool",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$",
        description="existing BUFFER_POOL the lossless priority groups draw from (the "
        "operator's; SONiC's buffer templates name it ingress_lossless_pool)",
    )
    egress_pool: str = Field(
        default="egress_lossless_pool",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$",
        description="existing BUFFER_POOL the lossless queues' static egress profile draws "
        "from (the operator's; SONiC's buffer templates name it egress_lossless_pool)",
    )
    watchdog: PfcWatchdog = Field(default_factory=PfcWatchdog)
    cnp: Cnp | None = Field(
        default=None,
        description="what the NICs send CNPs with (RoCE's usual: DSCP 48, priority 6); none: "
        "not declared, the hosts' NICs keep their own",
    )

    def headroom_platform(self) -> HeadroomPlatform:
        return HeadroomPlatform(
            cell_bytes=self.cell_bytes,
            pipeline_latency_bytes=self.pipeline_latency_bytes,
            mac_phy_delay_bytes=self.mac_phy_delay_bytes,
            peer_response_bytes=self.peer_response_bytes,
            small_packet_pct=self.small_packet_pct,
            lossless_mtu_bytes=self.lossless_mtu_bytes,
            gearbox_delay_ns=self.gearbox_delay_ns,
        )


class Fabric(Frozen):
    base_rtt_us: float = Field(gt=0, le=100_000)
    ecn_lambda: float = Field(default=1.0, gt=0, le=10)
    mtu_bytes: int = Field(default=1500, ge=MTU_MIN_BYTES, le=MTU_MAX_BYTES)
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
    lossless: LosslessPlatform | None = Field(
        default=None, description="the ASIC's headroom parameters; needed by a lossless class"
    )


class Intent(Frozen):
    """The whole declared state of the fabric; every version in the store is one of these."""

    api_version: Literal["sluice/v1"] = "sluice/v1"
    fabric: Fabric
    credentials: tuple[Credential, ...] = Field(
        default=(), description="gNMI logins shared by groups of switches (switch.credential)"
    )
    switches: tuple[Switch, ...] = ()
    hosts: tuple[Host, ...] = ()
    service_classes: tuple[ServiceClass, ...] = ()

    @model_validator(mode="after")
    def _attach_credentials(self) -> Intent:
        # Each switch carries its group's login, so the southbound needs only the switch; an
        # unknown name is left for validate.py to report with its path.
        groups = {credential.name: credential for credential in self.credentials}
        for switch in self.switches:
            if switch.credential is not None:
                switch._group = groups.get(switch.credential)
        return self
