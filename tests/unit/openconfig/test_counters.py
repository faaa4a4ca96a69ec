"""openconfig-qos queue state read as counters (controller/openconfig/counters.py): a leaf
per update (as a target streams them), the state container, or the queue entry; and every
leaf read has its SAI name in the collector (controller/telemetry/ingest.py)."""

from __future__ import annotations

from controller.openconfig.counters import COUNTER_LEAVES, queue_counters
from controller.telemetry.ingest import STATE_LEAVES

HEAD = ("qos", "interfaces", "interface[interface-id=Ethernet1/1]", "output", "queues")


def test_leaves_the_state_container_and_the_entry_give_one_hash_per_sluice_queue() -> None:
    changes = [
        ((*HEAD, "queue[name=SLUICE_Q3]", "state", "transmit-pkts"), 40),
        ((*HEAD, "queue[name=SLUICE_Q3]", "openconfig-qos:state", "transmit-octets"), "4000"),
        ((*HEAD, "queue[name=SLUICE_Q5]", "state"), {"dropped-pkts": "7", "max-queue-len": "9"}),
        ((*HEAD, "queue[name=SLUICE_Q6]"), {"name": "SLUICE_Q6", "state": {"transmit-pkts": 1}}),
        # Arista's name for output queue 2 (interface_output_queue_non_standard_name).
        ((*HEAD, "queue[name=Ethernet1/1-2]", "state", "dropped-octets"), "12"),
    ]
    assert queue_counters(changes) == {
        ("Ethernet1/1", "3"): {"transmit-pkts": "40", "transmit-octets": "4000"},
        ("Ethernet1/1", "5"): {"dropped-pkts": "7"},
        ("Ethernet1/1", "6"): {"transmit-pkts": "1"},
        ("Ethernet1/1", "2"): {"dropped-octets": "12"},
    }


def test_every_leaf_read_has_a_sai_name_and_each_its_own() -> None:
    assert set(STATE_LEAVES) == COUNTER_LEAVES
    assert len(set(STATE_LEAVES.values())) == len(STATE_LEAVES)


def test_an_operators_queue_a_delete_other_paths_and_non_counters_are_left_out() -> None:
    changes = [
        ((*HEAD, "queue[name=BE]", "state", "transmit-pkts"), 40),  # not sluice's: no index
        ((*HEAD, "queue[name=Ethernet0-2]", "state", "transmit-pkts"), 40),  # another port's
        ((*HEAD, "queue[name=SLUICE_Q3]", "state", "transmit-pkts"), None),  # a delete
        ((*HEAD, "queue[name=SLUICE_Q3]", "state", "transmit-pkts"), "-1"),
        ((*HEAD, "queue[name=SLUICE_Q3]", "state", "transmit-pkts"), True),
        (("qos", "queues", "queue[name=SLUICE_Q3]", "state", "transmit-pkts"), 4),
        (("interfaces", "interface[name=Ethernet0]", "state", "counters", "out-pkts"), 4),
    ]
    assert queue_counters(changes) == {}
