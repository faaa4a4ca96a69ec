"""A refused batch's reason: what the switch lacks of what the batch names, GCU's own words
shortened, and where libyang's reason is when nothing is found. The messages are the ones
SONiC's gNMI server answered with the real GCU behind it (tests/realsonic)."""

from __future__ import annotations

from controller.reconcile.refusals import OPERATOR_TABLES, explain, shortened, unmet_references
from controller.sonic.model import Op, SwitchConfig

PROFILE = Op(
    "add",
    "BUFFER_PROFILE",
    "SLUICE_BUF_1",
    {"pool": "egress_lossy_pool", "size": "9100", "dynamic_th": "1"},
    {},
)
QUEUES = [
    Op("add", "QUEUE", f"Ethernet200|{q}", {"scheduler": "SLUICE_SCHED_1"}, {}, False)
    for q in (1, 2, 3)
]
GONE = Op("delete", "QUEUE", "Ethernet300|1", {}, {"scheduler": "SLUICE_SCHED_1"}, False)
HELD: SwitchConfig = {
    ("PORT", "Ethernet0"): {"admin_status": "up"},
    ("BUFFER_POOL", "egress_lossy_pool"): {"type": "egress", "mode": "dynamic"},
}
# sonic-gnmi's answer for a leafref the patched config breaks (the patch in Python form).
YANG = (
    "Error: Validate json patch: [{'op': 'add', 'path': '/QUEUE/Ethernet200|1', 'value': "
    "{'scheduler': 'SLUICE_SCHED_1'}}, {'op': 'add', 'path': '/QUEUE/Ethernet200|2', 'value': "
    "{'scheduler': 'SLUICE_SCHED_1'}}] failed due to: Data Loading Failed"
)
SCOPES = "Error: Failed to apply patch on the following scopes:"


def test_the_operator_tables_are_the_ones_sluice_names_but_never_writes() -> None:
    assert {"BUFFER_POOL"} == OPERATOR_TABLES


def test_ports_and_pools_the_switch_lacks_are_found_and_deletes_are_not_checked() -> None:
    unmet = unmet_references([*QUEUES, PROFILE, GONE], HELD)
    assert [(u.op.key, u.field, u.table, u.name) for u in unmet] == [
        ("Ethernet200|1", None, "PORT", "Ethernet200"),
        ("Ethernet200|2", None, "PORT", "Ethernet200"),
        ("Ethernet200|3", None, "PORT", "Ethernet200"),
    ]
    no_pool = {k: v for k, v in HELD.items() if k[0] != "BUFFER_POOL"}
    [missing] = unmet_references([PROFILE], no_pool)
    assert (missing.field, missing.table, missing.name) == (
        "pool",
        "BUFFER_POOL",
        "egress_lossy_pool",
    )


def test_a_yang_refusal_names_the_missing_object_once_and_blames_its_first_entry() -> None:
    reason, blamed = explain(YANG, QUEUES, HELD)
    assert reason == (
        "Error: Validate json patch: [3 operation(s)] failed due to: Data Loading Failed — "
        "the switch has no PORT|Ethernet200 (named by the key of QUEUE|Ethernet200|1 and 2 "
        "more entries)"
    )
    assert blamed == QUEUES[0]


def test_a_pool_the_switch_lacks_is_named_with_its_field() -> None:
    reason, blamed = explain(YANG, [PROFILE], {})
    assert reason.endswith(
        "the switch has no BUFFER_POOL|egress_lossy_pool (named by the field 'pool' of "
        "BUFFER_PROFILE|SLUICE_BUF_1)"
    )
    assert blamed == PROFILE


def test_without_a_finding_the_reason_says_where_libyangs_words_are() -> None:
    reason, blamed = explain(YANG, [PROFILE], HELD)
    assert "config apply-patch --dry-run" in reason
    assert blamed is None
    # The read after the refusal failed: GCU's words, shortened, and the same hint.
    assert explain(YANG, [PROFILE], None)[0] == reason


def test_gcus_refusal_before_validation_lists_what_it_refuses() -> None:
    reason, blamed = explain(SCOPES, [PROFILE], HELD)
    assert reason.startswith(SCOPES + " — GCU refused the batch before validating it")
    assert "BUFFER_PROFILE's size or pool" in reason
    assert blamed is None


def test_other_messages_pass_unchanged_unless_the_switch_lacks_what_the_batch_names() -> None:
    said = "field 'weight': 200 is above 100"
    assert explain(said, [PROFILE], HELD) == (said, None)
    assert explain(said, QUEUES, HELD)[0].startswith(said + " — the switch has no PORT|")
    assert shortened(said, 3) == said
