"""A switch without sonic-sluice-agent.yang refuses, as GCU does, every Set touching SLUICE_*."""

from __future__ import annotations

import re

import pytest

from vsonic.db import MemoryStore, read_config
from vsonic.errors import SchemaViolationError
from vsonic.fleet import fleet_targets
from vsonic.gcu import SCOPE_REFUSAL
from vsonic.paths import DbPath
from vsonic.seed import default_ports
from vsonic.serve import _parser as serve_parser
from vsonic.serve import _targets as serve_targets
from vsonic.setops import OpKind, SetOp
from vsonic.switch import Switch

# sonic-utilities generic_config_updater/generic_updater.py, PatchApplier.apply.
# What the gNMI client reads of GCU's "tables without YANG models" through sonic-gnmi.
GCU_TEXT = SCOPE_REFUSAL

WRED = SetOp(
    OpKind.UPDATE,
    DbPath("CONFIG_DB", "WRED_PROFILE", "SLUICE_Q_Ethernet0_3"),
    {"green_min_threshold": "1000", "green_max_threshold": "2000", "ecn": "ecn_all"},
)
AGENT_QUEUE = SetOp(
    OpKind.UPDATE,
    DbPath("CONFIG_DB", "SLUICE_AGENT_QUEUE", "Ethernet0|3"),
    {
        "managed": "true",
        "wred_profile": "SLUICE_Q_Ethernet0_3",
        "weight": "50",
        "floor_bytes": "1000",
        "ceiling_bytes": "2000",
        "static_bytes": "1500",
        "speed_gbps": "100",
        "buffer_bytes": "4000000",
    },
)


def _switch(sluice_yang: bool) -> Switch:
    targets = fleet_targets(
        ["leaf1"], default_ports(2), without_sluice_yang=() if sluice_yang else ["leaf1"]
    )
    return targets.resolve("leaf1")


def test_without_the_model_the_whole_set_is_refused_with_gcus_message() -> None:
    switch = _switch(sluice_yang=False)
    before = read_config(switch.store)
    with pytest.raises(SchemaViolationError) as refused:
        switch.apply([WRED, AGENT_QUEUE])
    assert refused.value.problems == [GCU_TEXT]
    # All or nothing: the WRED profile in the same Set was not written either.
    assert read_config(switch.store) == before


def test_without_the_model_a_delete_of_an_absent_agent_entry_is_refused_too() -> None:
    # GCU looks at the tables the patch names, not at what would change.
    switch = _switch(sluice_yang=False)
    delete = SetOp(OpKind.DELETE, DbPath("CONFIG_DB", "SLUICE_AGENT", "global"))
    with pytest.raises(SchemaViolationError, match=re.escape(GCU_TEXT)):
        switch.apply([delete])


def test_without_the_model_the_qos_tables_alone_are_accepted() -> None:
    switch = _switch(sluice_yang=False)
    switch.apply([WRED])
    assert ("WRED_PROFILE", "SLUICE_Q_Ethernet0_3") in read_config(switch.store)


def test_with_the_model_the_same_set_is_accepted() -> None:
    switch = _switch(sluice_yang=True)
    switch.apply([WRED, AGENT_QUEUE])
    assert read_config(switch.store)[("SLUICE_AGENT_QUEUE", "Ethernet0|3")]["weight"] == "50"


def test_a_switch_has_the_model_unless_told_otherwise() -> None:
    assert Switch("leaf1", MemoryStore()).gcu.yang_extension


def test_the_serve_flag_marks_only_the_switches_it_names() -> None:
    fleet = ["--address", "127.0.0.1:0", "--fleet", "--names", "leaf1", "leaf2"]
    args = serve_parser().parse_args([*fleet, "--without-sluice-yang", "leaf1"])
    targets = serve_targets(args)
    assert not targets.resolve("leaf1").gcu.yang_extension
    assert targets.resolve("leaf2").gcu.yang_extension
