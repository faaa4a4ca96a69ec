# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure part of the host's lossless class (``sluice_lossless``, docs/hosts.md): the variable's
schema, the parsing of iproute2 ``dcb`` output, and the plan that brings a NIC to what the
variable asks while keeping what the operator set.

What sluice sets on a NIC, and what it was before, is kept in an ownership record (the module
stores it on the host): a DSCP-to-priority entry or a PFC priority that was already there is
the operator's and is never removed; a DCQCN knob sluice switched on goes back to its earlier
value when the class goes. Nothing here touches the system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    DEVICE_RE,
    NAME_RE,
    SchemaError,
    _fail,
    _int,
    _require_mapping,
)

PRIORITIES = range(8)  # IEEE 802.1Q priorities, the keys of dcb's prio-pfc
DSCP_RANGE = (0, 63)
TRUSTS = ("dscp",)  # what the NIC classifies received RoCE traffic by
# The DCQCN knobs of NVIDIA's ConnectX driver, one file per priority 0..7 holding 0 or 1
# (NVIDIA MLNX_OFED user manual and DOCA SDK documentation, "Explicit Congestion Notification
# (ECN)": /sys/class/net/<interface>/ecn/<roce_np|roce_rp>/enable/<priority>): the
# notification point (the receiver sending CNPs) and the reaction point (the sender cutting
# its rate on a CNP).
DCQCN_POINTS = ("roce_np", "roce_rp")
ENABLED, DISABLED = "1", "0"
# What the notification point sends CNPs with, in the same driver's sysfs (the same manual:
# /sys/class/net/<interface>/ecn/roce_np/cnp_dscp and cnp_802p_prio), one value each.
CNP_KNOBS = ("cnp_dscp", "cnp_802p_prio")


@dataclass(frozen=True)
class LosslessClass:
    name: str
    dscp: tuple[int, ...]
    pfc_priority: int
    dcqcn: bool


@dataclass(frozen=True)
class Cnp:
    """The DSCP and 802.1p priority the NIC sends DCQCN's CNPs with."""

    dscp: int
    priority: int


@dataclass(frozen=True)
class LosslessWant:
    device: str
    classes: tuple[LosslessClass, ...]
    cnp: Cnp | None = None

    @property
    def pfc(self) -> frozenset[int]:
        return frozenset(c.pfc_priority for c in self.classes)

    @property
    def dscp_prio(self) -> frozenset[tuple[int, int]]:
        return frozenset((d, c.pfc_priority) for c in self.classes for d in c.dscp)

    @property
    def dcqcn(self) -> frozenset[int]:
        return frozenset(c.pfc_priority for c in self.classes if c.dcqcn)


def lossless_want(value: Any, path: str = "sluice_lossless") -> LosslessWant:
    """The validated variable; a ``SchemaError`` names the first bad field."""
    keys = {"device", "trust", "classes", "cnp"}
    data = _require_mapping(value, path, keys, {"device", "classes"})
    device = data["device"]
    if not isinstance(device, str) or not DEVICE_RE.match(device):
        raise _fail(f"{path}.device", f"not a network device name: {device!r}")
    trust = data.get("trust", "dscp")
    if trust not in TRUSTS:
        raise _fail(f"{path}.trust", f"must be one of {list(TRUSTS)}, got {trust!r}")
    if not isinstance(data["classes"], list):
        raise _fail(f"{path}.classes", "must be a list")
    classes = tuple(
        _lossless_class(entry, f"{path}.classes[{i}]") for i, entry in enumerate(data["classes"])
    )
    _each_dscp_once(classes, f"{path}.classes")
    cnp = None if data.get("cnp") is None else _cnp(data["cnp"], f"{path}.cnp")
    if cnp is not None and any(cnp.dscp in c.dscp for c in classes):
        raise _fail(f"{path}.cnp.dscp", f"DSCP {cnp.dscp} is a lossless class's")
    return LosslessWant(device=device, classes=classes, cnp=cnp)


def _cnp(value: Any, path: str) -> Cnp:
    data = _require_mapping(value, path, {"dscp", "priority"}, {"dscp", "priority"})
    dscp = _int(data["dscp"], f"{path}.dscp", *DSCP_RANGE)
    priority = _int(data["priority"], f"{path}.priority", PRIORITIES[0], PRIORITIES[-1])
    return Cnp(dscp=dscp, priority=priority)


def _lossless_class(value: Any, path: str) -> LosslessClass:
    keys = {"name", "dscp", "pfc_priority", "dcqcn"}
    data = _require_mapping(value, path, keys, {"name", "dscp", "pfc_priority"})
    name = data["name"]
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _fail(f"{path}.name", f"not a class name: {name!r}")
    dscps = data["dscp"]
    if not isinstance(dscps, list) or not dscps:
        raise _fail(f"{path}.dscp", "must be a non-empty list of DSCP values")
    dscp = tuple(_int(d, f"{path}.dscp[{i}]", *DSCP_RANGE) for i, d in enumerate(dscps))
    priority = _int(data["pfc_priority"], f"{path}.pfc_priority", PRIORITIES[0], PRIORITIES[-1])
    dcqcn = data.get("dcqcn", True)
    if not isinstance(dcqcn, bool):
        raise _fail(f"{path}.dcqcn", f"must be true or false, got {dcqcn!r}")
    return LosslessClass(name=name, dscp=dscp, pfc_priority=priority, dcqcn=dcqcn)


def _each_dscp_once(classes: tuple[LosslessClass, ...], path: str) -> None:
    seen: dict[int, str] = {}
    for c in classes:
        for d in c.dscp:
            if d in seen:
                raise _fail(path, f"DSCP {d} is in both {seen[d]} and {c.name}")
            seen[d] = c.name


# ---------------------------------------------------------------- dcb output
# Formats as dcb-pfc(8) and dcb-app(8) show them: "prio-pfc 0:off 1:off ... 7:on" and,
# with -N (numbers, not DSCP names), "dscp-prio 0:0 24:2 24:3 48:6".


def parse_prio_pfc(text: str) -> frozenset[int]:
    """The priorities PFC is on for, from ``dcb pfc show dev X prio-pfc``."""
    enabled: set[int] = set()
    for token in _values_of(text, "prio-pfc"):
        prio, state = token.split(":", 1)
        if state == "on":
            enabled.add(int(prio))
    return frozenset(enabled)


def parse_dscp_prio(text: str) -> frozenset[tuple[int, int]]:
    """The (DSCP, priority) entries of ``dcb -N app show dev X dscp-prio``."""
    entries: set[tuple[int, int]] = set()
    for token in _values_of(text, "dscp-prio"):
        dscp, prio = token.split(":", 1)
        entries.add((int(dscp), int(prio)))
    return frozenset(entries)


def _values_of(text: str, key: str) -> list[str]:
    for line in text.splitlines():
        tokens = line.split()
        if tokens[:1] == [key]:
            return tokens[1:]
    return []


def dcqcn_knob(device: str, point: str, priority: int, sysfs: str = "/sys") -> str:
    return f"{sysfs}/class/net/{device}/ecn/{point}/enable/{priority}"


def cnp_knob(device: str, name: str, sysfs: str = "/sys") -> str:
    return f"{sysfs}/class/net/{device}/ecn/roce_np/{name}"


def wanted_knobs(want: LosslessWant, sysfs: str = "/sys") -> dict[str, str]:
    """Each knob the classes need, with its value: DCQCN's points on per priority, and, where
    the NIC notifies (some class runs DCQCN) and the variable names one, the CNPs' DSCP and
    priority."""
    wanted = {
        dcqcn_knob(want.device, point, prio, sysfs): ENABLED
        for prio in want.dcqcn
        for point in DCQCN_POINTS
    }
    if want.cnp is not None and want.dcqcn:
        dscp, priority = CNP_KNOBS
        wanted[cnp_knob(want.device, dscp, sysfs)] = str(want.cnp.dscp)
        wanted[cnp_knob(want.device, priority, sysfs)] = str(want.cnp.priority)
    return wanted


# ---------------------------------------------------------------- ownership and the plan


@dataclass(frozen=True)
class Owned:
    """What sluice set on one device: PFC priorities it turned on, DSCP entries it added,
    and each DCQCN knob it wrote with the value it had before."""

    pfc: frozenset[int] = frozenset()
    dscp_prio: frozenset[tuple[int, int]] = frozenset()
    knobs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "pfc": sorted(self.pfc),
            "dscp_prio": [list(e) for e in sorted(self.dscp_prio)],
            "knobs": dict(sorted(self.knobs.items())),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Owned:
        return cls(
            pfc=frozenset(int(p) for p in data.get("pfc", [])),
            dscp_prio=frozenset((int(d), int(p)) for d, p in data.get("dscp_prio", [])),
            knobs={str(k): str(v) for k, v in data.get("knobs", {}).items()},
        )

    @property
    def empty(self) -> bool:
        return not (self.pfc or self.dscp_prio or self.knobs)


class DscpTaken(ValueError):
    """The operator maps a DSCP the lossless class needs to another priority."""


@dataclass(frozen=True)
class DcbPlan:
    pfc_on: frozenset[int]
    pfc_off: frozenset[int]
    app_add: frozenset[tuple[int, int]]
    app_del: frozenset[tuple[int, int]]
    pfc: frozenset[int]  # owned afterwards
    dscp_prio: frozenset[tuple[int, int]]  # owned afterwards

    @property
    def changes(self) -> bool:
        return bool(self.pfc_on or self.pfc_off or self.app_add or self.app_del)


def plan_dcb(
    want: LosslessWant,
    pfc_now: frozenset[int],
    app_now: frozenset[tuple[int, int]],
    owned: Owned,
) -> DcbPlan:
    """PFC and DSCP-to-priority changes: add what is missing (and own it), take back what
    sluice added and no longer wants, leave the operator's entries alone. A DSCP the operator
    maps to another priority is refused (``DscpTaken``): the NIC would classify it twice."""
    operators_app = app_now - owned.dscp_prio
    for dscp, prio in sorted(want.dscp_prio):
        other = sorted(p for d, p in operators_app if d == dscp and p != prio)
        if other:
            raise DscpTaken(
                f"{want.device}: DSCP {dscp} is mapped to priority {other[0]} by the "
                f"operator (dcb app); the lossless class wants priority {prio}"
            )
    pfc_on = want.pfc - pfc_now
    pfc_off = (owned.pfc - want.pfc) & pfc_now
    app_add = want.dscp_prio - app_now
    app_del = (owned.dscp_prio - want.dscp_prio) & app_now
    return DcbPlan(
        pfc_on=pfc_on,
        pfc_off=pfc_off,
        app_add=app_add,
        app_del=app_del,
        pfc=(owned.pfc & want.pfc) | pfc_on,
        dscp_prio=(owned.dscp_prio & want.dscp_prio) | app_add,
    )


def plan_knobs(
    want: LosslessWant, knobs_now: dict[str, str], owned: Owned, sysfs: str = "/sys"
) -> tuple[dict[str, str], dict[str, str]]:
    """``(writes, owned afterwards)`` for the knobs (``wanted_knobs``): each wanted knob set to
    its value (its earlier value owned), each owned knob no longer wanted put back as it
    was. A knob the driver does not have (absent from ``knobs_now``) is not written."""
    wanted = wanted_knobs(want, sysfs)
    writes: dict[str, str] = {}
    after: dict[str, str] = {}
    for knob, value in sorted(wanted.items()):
        now = knobs_now.get(knob)
        if knob in owned.knobs:
            after[knob] = owned.knobs[knob]
        elif now is not None and now != value:
            after[knob] = now
        if now is not None and now != value:
            writes[knob] = value
    for knob, before in sorted(owned.knobs.items()):
        if knob not in wanted and knob in knobs_now and knobs_now[knob] != before:
            writes[knob] = before
    return writes, after


def dcb_lines(device: str, pfc: frozenset[int], app: frozenset[tuple[int, int]]) -> str:
    """The device's DCB state as diff lines."""
    lines = [f"{device} pfc prio {p}: on\n" for p in sorted(pfc)]
    lines += [f"{device} dscp-prio {d}:{p}\n" for d, p in sorted(app)]
    return "".join(lines)


def knob_lines(knobs: dict[str, str]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in sorted(knobs.items()))


__all__ = [
    "CNP_KNOBS",
    "DCQCN_POINTS",
    "Cnp",
    "DcbPlan",
    "DscpTaken",
    "LosslessClass",
    "LosslessWant",
    "Owned",
    "SchemaError",
    "cnp_knob",
    "dcb_lines",
    "dcqcn_knob",
    "knob_lines",
    "lossless_want",
    "parse_dscp_prio",
    "parse_prio_pfc",
    "plan_dcb",
    "plan_knobs",
    "wanted_knobs",
]
