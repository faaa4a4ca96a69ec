"""Every entry sluice compiles validates with libyang against SONiC's models plus ours.

This is the check a real switch's GCU makes on a gNMI Set (sonic-utilities
generic_config_updater: the would-be CONFIG_DB is loaded into sonic-yang-mgmt and validated).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.intent.loader import load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.sonic.compile import compile_fleet
from tests.yang.configdb_yang import modelled_elsewhere, table_models, yang_problem
from tests.yang.switches import seeded_config
from vsonic.seed import lossless_pools

# The lossless pools are the operator's, from the image's buffer template.
LOSSLESS_POOLS = {("BUFFER_POOL", name): fields for name, fields in lossless_pools().items()}

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "example-intent.yaml"
SPEEDS = (10, 25, 40, 100, 400)


def _every_switch_validates(intent: Intent) -> dict[str, int]:
    """Entries per table over the fleet; fails on the first switch libyang refuses."""
    counts: dict[str, int] = {}
    for name, config in compile_fleet(intent).items():
        switch = next(s for s in intent.switches if s.name == name)
        problem = yang_problem({**seeded_config(switch), **config})
        assert problem is None, f"{name}: {problem}"
        for table, _ in config:
            counts[table] = counts.get(table, 0) + 1
    return counts


def test_every_table_sluice_writes_has_a_model() -> None:
    compiled = compile_fleet(load_intent_file(EXAMPLE))
    tables = {table for config in compiled.values() for table, _ in config}
    assert {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"} <= set(table_models())
    assert {"SLUICE_AGENT", "SLUICE_AGENT_QUEUE"} <= tables
    # Ours, or SONiC's (the models of the tables sluice writes are stored for these tests).
    assert tables - set(table_models()) - modelled_elsewhere() == set()
    assert "SLUICE_AGENT" not in modelled_elsewhere()


def test_the_example_intent_validates_on_every_switch() -> None:
    intent = load_intent_file(EXAMPLE)
    counts = _every_switch_validates(intent)
    # The agent's orders on every switch (76 SLUICE_* entries on the four when written).
    assert counts["SLUICE_AGENT"] == len(intent.switches)
    assert counts["SLUICE_AGENT_QUEUE"] >= len(intent.switches)


def _port(index: int, speed_gbps: int) -> dict[str, Any]:
    # A 400G port needs a buffer above K = 400 Gb/s x 40 us = 2 MB; some others get one too.
    deep = speed_gbps >= 400 or index % 3 == 0
    return {
        "name": f"Ethernet{4 * index}",
        "speed_gbps": speed_gbps,
        **({"buffer_bytes": 8_000_000} if deep else {}),
    }


def _synthetic(algorithm: str, switches: int, ports: int) -> Intent:
    """The example's classes over a bigger fleet: mixed speeds and buffers, and the
    example's dynamic classes switched to ``algorithm``."""
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    template = raw["switches"][0]
    raw["switches"] = [
        {
            **template,
            "name": f"sw{i}",
            "role": "leaf" if i % 4 else "spine",
            "gnmi": {"address": "127.0.0.1", "port": 51000 + i},
            "ports": [_port(p, SPEEDS[(i + p) % len(SPEEDS)]) for p in range(ports)],
        }
        for i in range(switches)
    ]
    for service_class in raw["service_classes"]:
        if service_class.get("ecn") == "mqecn":
            service_class["ecn"] = algorithm
    return parse_intent(raw)


@pytest.mark.parametrize("algorithm", ["mqecn", "dynaq", "hdcq"])
def test_a_synthetic_fleet_validates_on_every_switch(algorithm: str) -> None:
    intent = _synthetic(algorithm, switches=6, ports=32)
    agents = [config[("SLUICE_AGENT", "global")] for config in compile_fleet(intent).values()]
    assert {orders["algorithm"] for orders in agents} == {algorithm}
    counts = _every_switch_validates(intent)
    assert counts["SLUICE_AGENT"] == 6
    assert counts["SLUICE_AGENT_QUEUE"] >= 6 * 32


def test_the_check_refuses_a_compiled_entry_broken_by_one_field() -> None:
    # The check can fail: the same compiled config with one agent field out of range.
    intent = load_intent_file(EXAMPLE)
    switch = intent.switches[0]
    config = dict(compile_fleet(intent)[switch.name])
    key = next(k for k in config if k[0] == "SLUICE_AGENT_QUEUE")
    config[key] = {**config[key], "speed_gbps": "801"}
    problem = yang_problem({**seeded_config(switch), **config})
    assert problem is not None
    assert "out of the allowed range" in problem


def _lossless_example() -> Intent:
    """The example intent with its first DWRR class lossless on its queue's priority, two
    ports with their own cable length and MTU (docs/lossless.md's Spectrum-2 figures)."""
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    raw["fabric"]["lossless"] = {
        "cell_bytes": 144,
        "pipeline_latency_bytes": 18432,
        "mac_phy_delay_bytes": 819.2,
    }
    lossless = next(c for c in raw["service_classes"] if c.get("ecn", "standard") == "standard")
    lossless["lossless"] = {"pfc_priority": lossless["queue"]}
    ports = raw["switches"][0]["ports"]
    ports[0] |= {"cable_length_m": 40, "mtu_bytes": 9100}
    return parse_intent(raw)


def test_the_lossless_tables_validate_on_every_switch() -> None:
    intent = _lossless_example()
    counts: dict[str, int] = {}
    for name, config in compile_fleet(intent).items():
        switch = next(s for s in intent.switches if s.name == name)
        problem = yang_problem({**seeded_config(switch), **LOSSLESS_POOLS, **config})
        assert problem is None, f"{name}: {problem}"
        for table, _ in config:
            counts[table] = counts.get(table, 0) + 1
    ports = sum(len(s.ports) for s in intent.switches)
    assert counts["BUFFER_PG"] == ports
    # every lossless queue on the static egress profile, one such profile per switch
    lossless = [k for c in compile_fleet(intent).values() for k in c if "egress_lossless" in k[1]]
    assert len(lossless) == len(intent.switches)
    assert counts["PFC_WD"] == ports
    assert counts["TC_TO_PRIORITY_GROUP_MAP"] == len(intent.switches)
    assert counts["MAP_PFC_PRIORITY_TO_QUEUE"] == len(intent.switches)
    # the priority group counters the class reads, enabled on every switch (sonic-flex_counter.yang
    # containers PG_DROP and PG_WATERMARK)
    groups = [k for c in compile_fleet(intent).values() for k in c if k[0] == "FLEX_COUNTER_TABLE"]
    assert sorted(k for k in groups if k[1].startswith("PG_")) == sorted(
        ("FLEX_COUNTER_TABLE", g) for g in ("PG_DROP", "PG_WATERMARK") for _ in intent.switches
    )


def test_the_check_refuses_a_lossless_entry_broken_by_one_field() -> None:
    # The check can fail: a watchdog detection time below sonic-pfcwd.yang's 100 ms.
    intent = _lossless_example()
    switch = intent.switches[0]
    config = dict(compile_fleet(intent)[switch.name])
    key = next(k for k in config if k[0] == "PFC_WD")
    config[key] = {**config[key], "detection_time": "50"}
    problem = yang_problem({**seeded_config(switch), **LOSSLESS_POOLS, **config})
    assert problem is not None
    assert '"50" is out of the allowed range' in problem
    # And without the operator's ingress pool the lossless profile's leafref has no target.
    problem = yang_problem({**seeded_config(switch), **compile_fleet(intent)[switch.name]})
    assert problem is not None
    assert 'leafref value "ingress_lossless_pool"' in problem
