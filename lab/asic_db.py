"""What orchagent made of sluice's tables: the SAI objects a switch config should have become
in ASIC_DB, checked object by object.

A read-back of CONFIG_DB shows that a switch accepted a config; ASIC_DB shows what its
orchagent programmed (sonic-swss ``orchagent/qosorch.cpp``, ``bufferorch.cpp``): a WRED
profile becomes a ``SAI_OBJECT_TYPE_WRED`` that each queue names in
``SAI_QUEUE_ATTR_WRED_PROFILE_ID``; a scheduler becomes a ``SAI_OBJECT_TYPE_SCHEDULER`` set on
the queue's scheduler group (``SAI_SCHEDULER_GROUP_ATTR_SCHEDULER_PROFILE_ID``), not on the
queue; the DSCP and TC maps become ``SAI_OBJECT_TYPE_QOS_MAP`` objects bound to the port; a
buffer profile reaches orchagent through buffermgrd (APPL_DB ``BUFFER_PROFILE_TABLE``) and
becomes a ``SAI_OBJECT_TYPE_BUFFER_PROFILE`` on its pool, named by the queue's
``SAI_QUEUE_ATTR_BUFFER_PROFILE_ID``. Attribute names and values are SAI 1.18's
(``saiwred.h``, ``saischeduler.h``, ``saiqosmap.h``, ``saibuffer.h``, ``saiqueue.h``).

ASIC_DB is keyed by object id, never by name. Ports and queues are found by name through
COUNTERS_DB's ``COUNTERS_PORT_NAME_MAP`` and ``COUNTERS_QUEUE_NAME_MAP`` (what ``show queue``
reads). Which scheduler group serves a queue is an answer orchagent asked the ASIC for
(``SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST``) and is stored nowhere but the sairedis recording
(``sairedis.rec``: each ``g`` request line is followed by its ``G`` answer). A buffer pool is
found by its attributes (type, mode, size), which the switch's ``BUFFER_POOL`` gives.

``AsicView.read`` takes the snapshot (I/O); ``asic_problems`` compares it with a config
(pure), so a check can be read as a list of what differs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import redis

from controller.sonic.model import Fields, SwitchConfig

Objects = Mapping[str, Mapping[str, str]]  # oid -> SAI attribute -> value

WRED = "WRED"
SCHEDULER = "SCHEDULER"
SCHEDULER_GROUP = "SCHEDULER_GROUP"
QUEUE = "QUEUE"
PORT = "PORT"
QOS_MAP = "QOS_MAP"
BUFFER_PROFILE = "BUFFER_PROFILE"
BUFFER_POOL = "BUFFER_POOL"
TYPES = (WRED, SCHEDULER, SCHEDULER_GROUP, QUEUE, PORT, QOS_MAP, BUFFER_PROFILE, BUFFER_POOL)
NULL_OID = "oid:0x0"

# CONFIG_DB WRED_PROFILE field -> SAI attribute (qosorch.cpp WredMapHandler).
_COLOURS = ("green", "yellow", "red")
_WRED_ATTRS = {
    **{
        f"{c}_{bound}_threshold": f"SAI_WRED_ATTR_{c.upper()}_{bound.upper()}_THRESHOLD"
        for c in _COLOURS
        for bound in ("min", "max")
    },
    **{f"{c}_drop_probability": f"SAI_WRED_ATTR_{c.upper()}_DROP_PROBABILITY" for c in _COLOURS},
    **{f"wred_{c}_enable": f"SAI_WRED_ATTR_{c.upper()}_ENABLE" for c in _COLOURS},
}
_ECN_MODES = {
    "ecn_none": "SAI_ECN_MARK_MODE_NONE",
    "ecn_green": "SAI_ECN_MARK_MODE_GREEN",
    "ecn_yellow": "SAI_ECN_MARK_MODE_YELLOW",
    "ecn_red": "SAI_ECN_MARK_MODE_RED",
    "ecn_green_yellow": "SAI_ECN_MARK_MODE_GREEN_YELLOW",
    "ecn_green_red": "SAI_ECN_MARK_MODE_GREEN_RED",
    "ecn_yellow_red": "SAI_ECN_MARK_MODE_YELLOW_RED",
    "ecn_all": "SAI_ECN_MARK_MODE_ALL",
}
_SCHEDULING_TYPES = {
    "STRICT": "SAI_SCHEDULING_TYPE_STRICT",
    "DWRR": "SAI_SCHEDULING_TYPE_DWRR",
    "WRR": "SAI_SCHEDULING_TYPE_WRR",
}
# PORT_QOS_MAP field -> (port attribute, map type, the map entry's key and value fields).
_PORT_MAPS = {
    "dscp_to_tc_map": (
        "SAI_PORT_ATTR_QOS_DSCP_TO_TC_MAP",
        "SAI_QOS_MAP_TYPE_DSCP_TO_TC",
        "DSCP_TO_TC_MAP",
        ("dscp", "tc"),
    ),
    "tc_to_queue_map": (
        "SAI_PORT_ATTR_QOS_TC_TO_QUEUE_MAP",
        "SAI_QOS_MAP_TYPE_TC_TO_QUEUE",
        "TC_TO_QUEUE_MAP",
        ("tc", "qidx"),
    ),
}
_POOL_TYPES = {"ingress": "SAI_BUFFER_POOL_TYPE_INGRESS", "egress": "SAI_BUFFER_POOL_TYPE_EGRESS"}
_POOL_MODES = {
    "static": "SAI_BUFFER_POOL_THRESHOLD_MODE_STATIC",
    "dynamic": "SAI_BUFFER_POOL_THRESHOLD_MODE_DYNAMIC",
}


@dataclass(frozen=True)
class AsicView:
    """One switch's ASIC_DB objects of the QoS types, the name maps, its operator's buffer
    pools, and the scheduler groups' children orchagent was told."""

    objects: Mapping[str, Objects]  # SAI object type (``WRED``) -> oid -> attributes
    ports: Mapping[str, str]  # Ethernet0 -> oid
    queues: Mapping[str, str]  # Ethernet0:3 -> oid
    pools: Mapping[str, Fields]  # CONFIG_DB BUFFER_POOL: name -> fields
    children: Mapping[str, tuple[str, ...]]  # scheduler group oid -> child oids

    @classmethod
    def read(cls, databases: Callable[[str], redis.Redis[str]], recording: Path) -> AsicView:
        """Snapshot through ``databases`` (``RealSwitch.db``) and the sairedis recording."""
        asic = databases("ASIC_DB")
        objects: dict[str, dict[str, dict[str, str]]] = {}
        for kind in TYPES:
            prefix = f"ASIC_STATE:SAI_OBJECT_TYPE_{kind}:"
            keys = list(asic.scan_iter(prefix + "*", count=1000))
            with asic.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hgetall(key)
                values = pipe.execute()
            objects[kind] = {k[len(prefix) :]: v for k, v in zip(keys, values, strict=True)}
        counters = databases("COUNTERS_DB")
        config = databases("CONFIG_DB")
        pools = {
            key.split("|", 1)[1]: config.hgetall(key) for key in config.scan_iter("BUFFER_POOL|*")
        }
        return cls(
            objects,
            counters.hgetall("COUNTERS_PORT_NAME_MAP"),
            counters.hgetall("COUNTERS_QUEUE_NAME_MAP"),
            pools,
            scheduler_group_children(recording),
        )


def scheduler_group_children(recording: Path) -> dict[str, tuple[str, ...]]:
    """Each scheduler group's children, from the answers to orchagent's
    ``SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST`` requests in a sairedis recording (a ``g`` line
    names the object, the ``G`` line after it carries the answer)."""
    children: dict[str, tuple[str, ...]] = {}
    asked: str | None = None
    attr = "SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST="
    if not recording.exists():
        return children
    with recording.open(errors="replace") as lines:
        for line in lines:
            parts = line.rstrip("\n").split("|")
            if len(parts) < 4:
                continue
            if parts[1] == "g":
                obj = parts[2]
                asked = obj.split(":", 1)[1] if attr in parts[3] else None
            elif parts[1] == "G" and asked is not None:
                if parts[2] == "SAI_STATUS_SUCCESS" and parts[3].startswith(attr):
                    listed = parts[3][len(attr) :].split(":", 1)[1]
                    children[asked] = tuple(o for o in listed.split(",") if o)
                asked = None
    return children


def _entries(config: SwitchConfig, table: str) -> dict[str, Fields]:
    return {key: fields for (t, key), fields in config.items() if t == table}


def _differ(where: str, attrs: Mapping[str, str], want: Mapping[str, str]) -> list[str]:
    return [
        f"{where}: {name} is {attrs.get(name)!r}, expected {value!r}"
        for name, value in sorted(want.items())
        if attrs.get(name) != value
    ]


def wred_attributes(fields: Fields) -> dict[str, str]:
    """The SAI attributes orchagent gives the WRED object of a WRED_PROFILE entry."""
    want = {_WRED_ATTRS[name]: value for name, value in fields.items() if name in _WRED_ATTRS}
    if "ecn" in fields:
        want["SAI_WRED_ATTR_ECN_MARK_MODE"] = _ECN_MODES[fields["ecn"]]
    return want


def scheduler_attributes(fields: Fields) -> dict[str, str]:
    """The SAI attributes of a SCHEDULER entry's scheduler object."""
    want = {"SAI_SCHEDULER_ATTR_SCHEDULING_TYPE": _SCHEDULING_TYPES[fields["type"]]}
    if "weight" in fields:
        want["SAI_SCHEDULER_ATTR_SCHEDULING_WEIGHT"] = fields["weight"]
    return want


def buffer_profile_attributes(fields: Fields) -> dict[str, str]:
    """The SAI attributes of a BUFFER_PROFILE entry's profile (its pool checked apart)."""
    want = {"SAI_BUFFER_PROFILE_ATTR_RESERVED_BUFFER_SIZE": fields["size"]}
    if "dynamic_th" in fields:
        want["SAI_BUFFER_PROFILE_ATTR_THRESHOLD_MODE"] = "SAI_BUFFER_PROFILE_THRESHOLD_MODE_DYNAMIC"
        want["SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH"] = fields["dynamic_th"]
    if "static_th" in fields:
        want["SAI_BUFFER_PROFILE_ATTR_THRESHOLD_MODE"] = "SAI_BUFFER_PROFILE_THRESHOLD_MODE_STATIC"
        want["SAI_BUFFER_PROFILE_ATTR_SHARED_STATIC_TH"] = fields["static_th"]
    return want


def _pool_matches(attrs: Mapping[str, str], pool: Fields) -> bool:
    want = {
        "SAI_BUFFER_POOL_ATTR_TYPE": _POOL_TYPES.get(pool.get("type", ""), ""),
        "SAI_BUFFER_POOL_ATTR_THRESHOLD_MODE": _POOL_MODES.get(pool.get("mode", ""), ""),
        "SAI_BUFFER_POOL_ATTR_SIZE": pool.get("size", ""),
    }
    return all(attrs.get(name) == value for name, value in want.items())


def map_pairs(attrs: Mapping[str, str], key_field: str, value_field: str) -> dict[str, str]:
    """A QOS_MAP object's list as ``{key: value}`` strings (``{"46": "6"}`` for DSCP 46 -> TC 6)."""
    raw = attrs.get("SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST")
    if not raw:
        return {}
    listed = json.loads(raw)["list"]
    return {str(item["key"][key_field]): str(item["value"][value_field]) for item in listed}


class _Checker:
    def __init__(self, view: AsicView, config: SwitchConfig) -> None:
        self.view = view
        self.config = config
        self.problems: list[str] = []

    def obj(self, kind: str, oid: str | None, where: str) -> Mapping[str, str] | None:
        if oid is None or oid == NULL_OID:
            self.problems.append(f"{where}: names no {kind} object")
            return None
        found = self.view.objects.get(kind, {}).get(oid)
        if found is None:
            self.problems.append(f"{where}: {oid} is not a {kind} object in ASIC_DB")
        return found

    def queue(self, port_queue: str) -> Mapping[str, str] | None:
        """``Ethernet0|3`` -> the queue object (its name map uses ``:``)."""
        name = port_queue.replace("|", ":")
        oid = self.view.queues.get(name)
        if oid is None:
            self.problems.append(f"queue {name}: not in COUNTERS_QUEUE_NAME_MAP")
            return None
        return self.obj(QUEUE, oid, f"queue {name}")

    def group_of(self, queue_oid: str) -> str | None:
        for group, kids in self.view.children.items():
            if queue_oid in kids:
                return group
        return None

    def queue_profile(
        self,
        where: str,
        port_queue: str,
        attr: str,
        kind: str,
        entry: tuple[str, str],
        attributes: Callable[[Fields], dict[str, str]],
    ) -> Mapping[str, str] | None:
        """The ``kind`` object the queue names in ``attr``, compared with the config's
        ``entry`` (table, name) through ``attributes``."""
        table, name = entry
        queue = self.queue(port_queue)
        if queue is None:
            return None
        found = self.obj(kind, queue.get(attr), where)
        fields = self.config.get(entry)
        if found is not None and fields is not None:
            self.problems += _differ(f"{table}|{name}", found, attributes(fields))
        return found

    def wred(self, port_queue: str, profile: str) -> None:
        where = f"QUEUE|{port_queue} wred_profile {profile}"
        attr = "SAI_QUEUE_ATTR_WRED_PROFILE_ID"
        entry = ("WRED_PROFILE", profile)
        self.queue_profile(where, port_queue, attr, WRED, entry, wred_attributes)

    def scheduler(self, port_queue: str, name: str) -> None:
        where = f"QUEUE|{port_queue} scheduler {name}"
        oid = self.view.queues.get(port_queue.replace("|", ":"))
        group = self.group_of(oid) if oid else None
        if group is None:
            self.problems.append(f"{where}: no scheduler group with this queue was recorded")
            return
        attrs = self.obj(SCHEDULER_GROUP, group, where) or {}
        scheduler = self.obj(
            SCHEDULER, attrs.get("SAI_SCHEDULER_GROUP_ATTR_SCHEDULER_PROFILE_ID"), where
        )
        fields = self.config.get(("SCHEDULER", name))
        if scheduler is not None and fields is not None:
            self.problems += _differ(f"SCHEDULER|{name}", scheduler, scheduler_attributes(fields))

    def buffer(self, port_queue: str, name: str) -> None:
        profile = self.queue_profile(
            f"BUFFER_QUEUE|{port_queue} profile {name}",
            port_queue,
            "SAI_QUEUE_ATTR_BUFFER_PROFILE_ID",
            BUFFER_PROFILE,
            ("BUFFER_PROFILE", name),
            buffer_profile_attributes,
        )
        pool_name = self.config.get(("BUFFER_PROFILE", name), {}).get("pool", "")
        if profile is None or not pool_name:
            return
        where = f"BUFFER_PROFILE|{name} pool {pool_name}"
        pool = self.obj(BUFFER_POOL, profile.get("SAI_BUFFER_PROFILE_ATTR_POOL_ID"), where)
        wanted = self.view.pools.get(pool_name)
        if pool is not None and (wanted is None or not _pool_matches(pool, wanted)):
            self.problems.append(f"BUFFER_PROFILE|{name}: its pool is not {pool_name}")

    def port_maps(self, port: str, fields: Fields) -> None:
        port_oid = self.view.ports.get(port)
        if port_oid is None:
            self.problems.append(f"port {port}: not in COUNTERS_PORT_NAME_MAP")
            return
        attrs = self.obj(PORT, port_oid, f"port {port}") or {}
        for field, (attr, kind, table, (key, value)) in _PORT_MAPS.items():
            name = fields.get(field)
            if name is None:
                continue
            where = f"PORT_QOS_MAP|{port} {field} {name}"
            qos_map = self.obj(QOS_MAP, attrs.get(attr), where)
            if qos_map is None:
                continue
            if qos_map.get("SAI_QOS_MAP_ATTR_TYPE") != kind:
                self.problems.append(f"{where}: map type {qos_map.get('SAI_QOS_MAP_ATTR_TYPE')}")
            want = self.config.get((table, name), {})
            if map_pairs(qos_map, key, value) != want:
                self.problems.append(
                    f"{table}|{name}: ASIC_DB maps {map_pairs(qos_map, key, value)}, "
                    f"expected {want}"
                )


def asic_problems(view: AsicView, config: SwitchConfig) -> list[str]:
    """Every way ASIC_DB differs from what ``config``'s QUEUE, BUFFER_QUEUE and PORT_QOS_MAP
    entries (and the profiles, schedulers and maps they name) should have become; empty
    when orchagent programmed all of it. Pure."""
    check = _Checker(view, config)
    for port_queue, fields in sorted(_entries(config, "QUEUE").items()):
        if "wred_profile" in fields:
            check.wred(port_queue, fields["wred_profile"])
        if "scheduler" in fields:
            check.scheduler(port_queue, fields["scheduler"])
    for port_queue, fields in sorted(_entries(config, "BUFFER_QUEUE").items()):
        check.buffer(port_queue, fields["profile"])
    for port, fields in sorted(_entries(config, "PORT_QOS_MAP").items()):
        check.port_maps(port, fields)
    return check.problems


def wait_for_asic(
    read: Callable[[], AsicView],
    config: SwitchConfig,
    *,
    within_s: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Read ASIC_DB until it holds ``config`` (orchagent programs CONFIG_DB changes
    asynchronously, within seconds); the problems still left when ``within_s`` ran out."""
    deadline = clock() + within_s
    while True:
        problems = asic_problems(read(), config)
        if not problems or clock() >= deadline:
            return problems
        sleep(0.25)
