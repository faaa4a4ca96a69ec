"""What a freshly booted virtual switch holds before anyone configures QoS.

Pure: ``seed_entries`` returns the hashes per database; ``seed_store`` writes them. The layout
follows sonic-swss portsorch.cpp: ``COUNTERS_PORT_NAME_MAP`` and
``COUNTERS_QUEUE_NAME_MAP`` map names to SAI object ids, ``COUNTERS_QUEUE_PORT_MAP``,
``_INDEX_MAP`` and ``_TYPE_MAP`` describe each queue oid, and ``COUNTERS:<oid>`` holds the
SAI-named statistics as decimal strings, all zero at boot.
"""

from __future__ import annotations

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
class SwitchSeed:
    hostname: str
    ports: tuple[PortSeed, ...]
    queues_per_port: int = 8
    # 32 MiB shared egress pool: the order of a 32x100G Tomahawk-class ASIC's packet buffer.
    egress_pool_bytes: int = 32 * 1024 * 1024


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
    return {
        redis_key(APPL_DB, "PORT_TABLE", port.name): {
            "speed": str(port.speed_gbps * 1000),
            "oper_status": "up",
            "admin_status": "up",
        }
        for port in seed.ports
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
