"""What a freshly booted virtual switch holds before anyone configures QoS.

Pure: ``seed_entries`` returns the hashes per database; ``seed_store`` writes them. The layout
follows sonic-swss portsorch.cpp: ``COUNTERS_PORT_NAME_MAP`` and
``COUNTERS_QUEUE_NAME_MAP`` map names to SAI object ids, ``COUNTERS_QUEUE_PORT_MAP``,
``_INDEX_MAP`` and ``_TYPE_MAP`` describe each queue oid, and ``COUNTERS:<oid>`` holds the
SAI-named statistics as decimal strings, all zero at boot.

A switch an operator already runs holds more: ``operator_qos_config`` is the QoS config a
Trident2 switch (Force10-S6000) gets from SONiC's default templates at ``config load``, with
two lossless priorities and PFC (``roce_ready_config`` adds their priority groups' lossless
profile and the PFC watchdog, as a switch ready for RoCE has them); ``SwitchSeed.neighbours``
are the LLDP neighbours SONiC's lldp syncd would have written to APPL_DB. The tests of
adopting a running switch start from them, on vsonic and on SONiC's own software alike, and
the RoCE check's from ``roce_ready_config``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vsonic.db import APPL_DB, CONFIG_DB, COUNTERS_DB, STATE_DB, Fields, Store, redis_key

# SAI object ids are 64-bit with the object type in the top byte: 0x10 for ports and 0x15
# for queues, as in sonic-utilities' mock counters_db.json (oid:0x1000000000012,
# oid:0x15000000000357).
PORT_OID_BASE = 0x1000000000000
QUEUE_OID_BASE = 0x15000000000000

# The queue statistics of the counter groups a booted switch polls (DESIGN.md "Telemetry"):
# QUEUE's four and QUEUE_WATERMARK's shared watermark (sonic-swss orchagent/portsorch.cpp).
# Occupancy and the WRED/ECN counts appear only when a group that polls them is enabled.
QUEUE_STATS = (
    "SAI_QUEUE_STAT_PACKETS",
    "SAI_QUEUE_STAT_BYTES",
    "SAI_QUEUE_STAT_DROPPED_PACKETS",
    "SAI_QUEUE_STAT_DROPPED_BYTES",
    "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
)
PORT_STATS = (
    "SAI_PORT_STAT_IF_IN_OCTETS",
    "SAI_PORT_STAT_IF_OUT_OCTETS",
    "SAI_PORT_STAT_IF_IN_UCAST_PKTS",
    "SAI_PORT_STAT_IF_OUT_UCAST_PKTS",
    "SAI_PORT_STAT_IF_IN_DISCARDS",
    "SAI_PORT_STAT_IF_OUT_DISCARDS",
    "SAI_PORT_STAT_IF_OUT_QLEN",
)
EGRESS_POOL = "egress_lossy_pool"
# The counter groups a booted SONiC switch polls: sonic-buildimage
# files/build_templates/init_cfg.json.j2 enables these (among others the virtual switch has
# nothing for), without POLL_INTERVAL, so each runs at orchagent's default.
ENABLED_COUNTER_GROUPS = ("PORT", "QUEUE", "QUEUE_WATERMARK", "PG_WATERMARK")


@dataclass(frozen=True)
class PortSeed:
    name: str
    speed_gbps: int


@dataclass(frozen=True)
class Neighbour:
    """One LLDP neighbour of a port, as lldpd learnt it."""

    port: str
    system_name: str
    port_id: str
    port_description: str = ""


@dataclass(frozen=True)
class SwitchSeed:
    hostname: str
    ports: tuple[PortSeed, ...]
    queues_per_port: int = 8
    # 32 MiB shared egress pool: the order of a 32x100G Tomahawk-class ASIC's packet buffer.
    egress_pool_bytes: int = 32 * 1024 * 1024
    neighbours: tuple[Neighbour, ...] = ()


def default_ports(count: int, speed_gbps: int = 100) -> tuple[PortSeed, ...]:
    """Ethernet0, Ethernet4, Ethernet8, ...: SONiC names ports by their first lane (4 each)."""
    return tuple(PortSeed(f"Ethernet{4 * i}", speed_gbps) for i in range(count))


def port_oid(index: int) -> str:
    return f"oid:{PORT_OID_BASE + index:#x}"


def queue_oid(port_index: int, queue: int, queues_per_port: int) -> str:
    return f"oid:{QUEUE_OID_BASE + port_index * queues_per_port + queue:#x}"


def _config_entries(seed: SwitchSeed) -> dict[str, Fields]:
    entries: dict[str, Fields] = {
        redis_key(CONFIG_DB, "DEVICE_METADATA", "localhost"): {
            "hostname": seed.hostname,
            "hwsku": "vsonic",
            "buffer_model": "dynamic",
        },
        redis_key(CONFIG_DB, "BUFFER_POOL", EGRESS_POOL): {
            "mode": "dynamic",
            "type": "egress",
            "size": str(seed.egress_pool_bytes),
        },
    }
    for group in ENABLED_COUNTER_GROUPS:
        entries[redis_key(CONFIG_DB, "FLEX_COUNTER_TABLE", group)] = {
            "FLEX_COUNTER_STATUS": "enable"
        }
    for i, port in enumerate(seed.ports):
        entries[redis_key(CONFIG_DB, "PORT", port.name)] = {
            "alias": f"etp{i + 1}",
            "lanes": ",".join(str(4 * i + lane) for lane in range(4)),
            "speed": str(port.speed_gbps * 1000),  # CONFIG_DB PORT speed is in Mb/s
            "mtu": "9100",
            "admin_status": "up",
        }
    return entries


def _counters_entries(seed: SwitchSeed) -> dict[str, Fields]:
    port_names: Fields = {}
    queue_names: Fields = {}
    queue_ports: Fields = {}
    queue_indexes: Fields = {}
    queue_types: Fields = {}
    entries: dict[str, Fields] = {}
    for i, port in enumerate(seed.ports):
        poid = port_oid(i)
        port_names[port.name] = poid
        entries[redis_key(COUNTERS_DB, "COUNTERS", poid)] = dict.fromkeys(PORT_STATS, "0")
        for q in range(seed.queues_per_port):
            qoid = queue_oid(i, q, seed.queues_per_port)
            queue_names[f"{port.name}:{q}"] = qoid
            queue_ports[qoid] = poid
            queue_indexes[qoid] = str(q)
            queue_types[qoid] = "SAI_QUEUE_TYPE_UNICAST"
            entries[redis_key(COUNTERS_DB, "COUNTERS", qoid)] = dict.fromkeys(QUEUE_STATS, "0")
    entries["COUNTERS_PORT_NAME_MAP"] = port_names
    entries["COUNTERS_QUEUE_NAME_MAP"] = queue_names
    entries["COUNTERS_QUEUE_PORT_MAP"] = queue_ports
    entries["COUNTERS_QUEUE_INDEX_MAP"] = queue_indexes
    entries["COUNTERS_QUEUE_TYPE_MAP"] = queue_types
    return entries


def _state_entries(seed: SwitchSeed) -> dict[str, Fields]:
    return {
        redis_key(STATE_DB, "PORT_TABLE", port.name): {
            "state": "ok",
            "speed": str(port.speed_gbps * 1000),
            "oper_status": "up",
        }
        for port in seed.ports
    }


def _appl_entries(seed: SwitchSeed) -> dict[str, Fields]:
    entries = {
        redis_key(APPL_DB, "PORT_TABLE", port.name): {
            "speed": str(port.speed_gbps * 1000),
            "oper_status": "up",
            "admin_status": "up",
        }
        for port in seed.ports
    }
    for index, neighbour in enumerate(seed.neighbours):
        entries[redis_key(APPL_DB, "LLDP_ENTRY_TABLE", neighbour.port)] = lldp_entry(
            neighbour, index
        )
    return entries


def lldp_entry(neighbour: Neighbour, index: int) -> Fields:
    """APPL_DB ``LLDP_ENTRY_TABLE:<port>`` as SONiC's lldp syncd writes it (sonic-net/
    sonic-dbsyncd src/lldp_syncd/daemon.py ``parse_update``: the 802.1AB remote-entry fields;
    port id subtype 5 is an interface name, chassis id subtype 4 a MAC address)."""
    return {
        "lldp_rem_index": str(index + 1),
        "lldp_rem_chassis_id_subtype": "4",
        "lldp_rem_chassis_id": f"52:54:00:00:{index // 256:02x}:{index % 256:02x}",
        "lldp_rem_sys_name": neighbour.system_name,
        "lldp_rem_sys_desc": "SONiC Software Version: vsonic",
        "lldp_rem_port_id_subtype": "5",
        "lldp_rem_port_id": neighbour.port_id,
        "lldp_rem_port_desc": neighbour.port_description,
        "lldp_rem_time_mark": "0",
        "lldp_rem_sys_cap_supported": "28 00",
        "lldp_rem_sys_cap_enabled": "28 00",
    }


def seed_entries(seed: SwitchSeed) -> dict[int, dict[str, Fields]]:
    """Every hash a booted switch holds, per database number."""
    if not seed.ports:
        raise ValueError("a switch needs at least one port")
    if len({p.name for p in seed.ports}) != len(seed.ports):
        raise ValueError("port names must be unique")
    return {
        CONFIG_DB: _config_entries(seed),
        COUNTERS_DB: _counters_entries(seed),
        STATE_DB: _state_entries(seed),
        APPL_DB: _appl_entries(seed),
    }


def seed_store(store: Store, seed: SwitchSeed) -> None:
    """Write the boot state, replacing whatever those keys held."""
    for db, entries in seed_entries(seed).items():
        store.write_atomically(db, dict(entries))


ConfigDbJson = dict[str, dict[str, dict[str, str]]]
"""A CONFIG_DB as ``config load`` reads it: table -> key -> field -> value."""

# The buffers a Force10-S6000 (Broadcom Trident2) switch gets from its ``buffers.json`` at
# ``config load``: the pools and profiles of sonic-net/sonic-buildimage
# device/dell/x86_64-dell_s6000_s1220-r0/Force10-S6000/buffers_defaults_t1.j2 (bare
# references, as SONiC 202111 and later write them). The pools are the operator's: GCU
# refuses every BUFFER_POOL patch and the first BUFFER_PROFILE (its table validators), so a
# switch sluice manages always has these from its image.
S6000_BUFFERS: ConfigDbJson = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"size": "12766208", "type": "ingress", "mode": "dynamic"},
        "egress_lossless_pool": {"size": "12766208", "type": "egress", "mode": "static"},
        "egress_lossy_pool": {"size": "7326924", "type": "egress", "mode": "dynamic"},
    },
    "BUFFER_PROFILE": {
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
        "egress_lossless_profile": {
            "pool": "egress_lossless_pool",
            "size": "0",
            "static_th": "12766208",
        },
        "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "1518", "dynamic_th": "3"},
    },
}

# The pools a lossless class's profiles draw from (its priority groups' and its queues'), as
# the image's buffer template has them: what a test seeds where a switch lacks them.
LOSSLESS_POOLS = ("ingress_lossless_pool", "egress_lossless_pool")


def lossless_pools() -> dict[str, Fields]:
    """``BUFFER_POOL`` key -> fields for each of ``LOSSLESS_POOLS``, from ``S6000_BUFFERS``."""
    return {name: dict(S6000_BUFFERS["BUFFER_POOL"][name]) for name in LOSSLESS_POOLS}


# SONiC's default QoS for a switch without per-SKU overrides, as a Trident2 SKU (Force10-S6000,
# whose qos.json.j2 includes it) renders it: sonic-net/sonic-buildimage
# files/build_templates/qos_config.j2. Priorities 3 and 4 are lossless (its LOSSLESS_TC), DSCP 3
# and 4 carry them, queues 3 and 4 hold them behind scheduler.1 and AZURE_LOSSLESS.
LOSSLESS_PRIORITIES = (3, 4)
_AZURE_DSCP = {str(dscp): "1" for dscp in range(64)} | {
    "3": "3",
    "4": "4",
    "5": "2",
    "8": "0",
    "46": "5",
    "48": "6",
}
_IDENTITY_8 = {str(i): str(i) for i in range(8)}
_LOSSLESS = ",".join(str(p) for p in LOSSLESS_PRIORITIES)


def operator_qos_config(ports: Sequence[str], cable_length: str = "5m") -> ConfigDbJson:
    """The QoS tables ``config load`` writes for ``ports`` on a Trident2 switch: the maps,
    schedulers and lossless WRED profile of qos_config.j2, every port bound to them with PFC on
    priorities 3 and 4 (``pfc_enable``) and its queues on the stock schedulers, and the queue
    and priority-group buffers of buffers_config.j2's fallback (queues 0-2 and 5-6 lossy, 3-4
    lossless; PG 0 lossy; the lossless PGs 3-4 are buffermgrd's to add from the port's speed
    and ``CABLE_LENGTH``), over ``S6000_BUFFERS``."""
    config: ConfigDbJson = {
        **{table: {k: dict(v) for k, v in rows.items()} for table, rows in S6000_BUFFERS.items()},
        "DSCP_TO_TC_MAP": {"AZURE": dict(_AZURE_DSCP)},
        "TC_TO_QUEUE_MAP": {"AZURE": dict(_IDENTITY_8)},
        "TC_TO_PRIORITY_GROUP_MAP": {
            "AZURE": {**dict.fromkeys(map(str, range(8)), "0"), "3": "3", "4": "4", "7": "7"}
        },
        "MAP_PFC_PRIORITY_TO_QUEUE": {"AZURE": dict(_IDENTITY_8)},
        "SCHEDULER": {
            "scheduler.0": {"type": "DWRR", "weight": "14"},
            "scheduler.1": {"type": "DWRR", "weight": "15"},
        },
        "WRED_PROFILE": {
            "AZURE_LOSSLESS": {
                "wred_green_enable": "true",
                "wred_yellow_enable": "true",
                "wred_red_enable": "true",
                "ecn": "ecn_all",
                "green_max_threshold": "2097152",
                "green_min_threshold": "1048576",
                "yellow_max_threshold": "2097152",
                "yellow_min_threshold": "1048576",
                "red_max_threshold": "2097152",
                "red_min_threshold": "1048576",
                "green_drop_probability": "5",
                "yellow_drop_probability": "5",
                "red_drop_probability": "5",
            }
        },
        "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": "AZURE"}},
        "QUEUE": {},
        "BUFFER_QUEUE": {},
        "BUFFER_PG": {},
        "CABLE_LENGTH": {"AZURE": {}},
    }
    for port in ports:
        config["PORT_QOS_MAP"][port] = {
            "dscp_to_tc_map": "AZURE",
            "tc_to_queue_map": "AZURE",
            "tc_to_pg_map": "AZURE",
            "pfc_to_queue_map": "AZURE",
            "pfc_enable": _LOSSLESS,
            "pfcwd_sw_enable": _LOSSLESS,
        }
        for queue in range(7):
            lossless = queue in LOSSLESS_PRIORITIES
            config["QUEUE"][f"{port}|{queue}"] = (
                {"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"}
                if lossless
                else {"scheduler": "scheduler.0"}
            )
        config["BUFFER_QUEUE"][f"{port}|0-2"] = {"profile": "egress_lossy_profile"}
        config["BUFFER_QUEUE"][f"{port}|3-4"] = {"profile": "egress_lossless_profile"}
        config["BUFFER_QUEUE"][f"{port}|5-6"] = {"profile": "egress_lossy_profile"}
        config["BUFFER_PG"][f"{port}|0"] = {"profile": "ingress_lossy_profile"}
        config["CABLE_LENGTH"]["AZURE"][port] = cable_length
    return config


# What ``pfcwd start_default`` writes per port (sonic-utilities pfcwd/main.py).
STOCK_WATCHDOG: Fields = {"action": "drop", "detection_time": "200", "restoration_time": "200"}
# What ``pfcwd interval 200`` writes (the same module): the watchdog's poll interval, whose
# PFC_WD table a port's watchdog is then added to (GCU refuses the table's first entry,
# controller/sonic/gcu.py). What a test seeds to start a switch's watchdog.
WATCHDOG_GLOBAL = "GLOBAL"
WATCHDOG_INTERVAL: Fields = {"POLL_INTERVAL": "200"}
# The lossless priority groups' profile, in the shape buffermgrd writes for a 40 Gb/s port
# with a 5 m cable (sonic-swss cfgmgr/buffermgr.cpp ``pg_lossless_<speed>_<cable>_profile``);
# the figures are illustrative, not a platform's.
LOSSLESS_PG_PROFILE = "pg_lossless_40000_5m_profile"
_LOSSLESS_PG_FIELDS: Fields = {
    "pool": "ingress_lossless_pool",
    "xon": "18432",
    "xoff": "55120",
    "size": "56368",
    "dynamic_th": "-3",
}


def roce_ready_config(ports: Sequence[str], cable_length: str = "5m") -> ConfigDbJson:
    """``operator_qos_config`` once the switch is ready for RoCE: the lossless priority groups
    3-4 of every port on a lossless profile (what buffermgrd adds when the port comes up) and
    ``pfcwd start_default``'s watchdog on every port."""
    config = operator_qos_config(ports, cable_length)
    config["BUFFER_PROFILE"][LOSSLESS_PG_PROFILE] = dict(_LOSSLESS_PG_FIELDS)
    config["PFC_WD"] = {}
    for port in ports:
        low, high = LOSSLESS_PRIORITIES[0], LOSSLESS_PRIORITIES[-1]
        config["BUFFER_PG"][f"{port}|{low}-{high}"] = {"profile": LOSSLESS_PG_PROFILE}
        config["PFC_WD"][port] = dict(STOCK_WATCHDOG)
    return config


def config_entries(config: Mapping[str, Mapping[str, Mapping[str, str]]]) -> dict[str, Fields]:
    """CONFIG_DB hashes (``TABLE|key`` -> fields) of a ``config load`` document."""
    return {
        redis_key(CONFIG_DB, table, key): dict(fields)
        for table, entries in config.items()
        for key, fields in entries.items()
    }
