"""OpenConfig payloads in the plan's entry model and back, and the gNMI Set each op becomes.

What is compared is what a switch would hold: the payloads' JSON rebuilt from the entries,
the plan from a switch holding the whole document (nothing to do), the plan from one whose
leaf was changed (that leaf's entry), and the operator's entries and leaves beside sluice's
(never read, never removed).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.accept import compile_dialects
from controller.intent.loader import load_intent_file, parse_intent
from controller.intent.models import Dialect
from controller.openconfig.entries import (
    TABLES,
    entries,
    entries_from_tree,
    op_set,
    set_request,
    text,
    unflatten,
)
from controller.openconfig.qos import QosPayloads, compile_switch
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.model import Op

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
QUEUES, _, CLASSIFIERS, _, _, _, INTERFACES = (t.table for t in TABLES)


@pytest.fixture(scope="module")
def payloads() -> QosPayloads:
    intent = load_intent_file(EXAMPLE)
    return compile_switch(intent, intent.switches[0])


def _sorted_leaf_lists(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _sorted_leaf_lists(v) for k, v in node.items()}
    if isinstance(node, list):
        items = [_sorted_leaf_lists(v) for v in node]
        return items if any(isinstance(v, dict) for v in items) else sorted(items)
    return node


def _canonical(node: Any) -> str:
    return json.dumps(_sorted_leaf_lists(node), sort_keys=True)


def test_every_entry_rebuilds_the_payloads_json(payloads: QosPayloads) -> None:
    config = entries(payloads)
    for table in TABLES:
        listed = payloads.by_kind[table.kind][table.name]
        rebuilt = [unflatten(config[(table.table, str(e[table.key]))]) for e in listed]
        assert [_canonical(e) for e in rebuilt] == [_canonical(e) for e in listed]
    assert len(config) == sum(len(payloads.by_kind[t.kind][t.name]) for t in TABLES)


def test_a_switch_holding_the_document_has_nothing_to_plan(payloads: QosPayloads) -> None:
    desired = entries(payloads)
    observed = entries_from_tree(payloads.document())
    assert observed == desired
    assert plan_switch("leaf1", desired, observed, desired).is_empty


def test_a_fresh_switch_is_written_referenced_kinds_first(payloads: QosPayloads) -> None:
    plan = plan_switch("leaf1", entries(payloads), {})
    order = list(dict.fromkeys(op.table for op in plan.ops))
    assert order == [t.table for t in TABLES]
    assert {op.kind for op in plan.ops} == {"add"}


def test_a_changed_leaf_is_drift_of_its_entry_and_the_repair_is_one_merge(
    payloads: QosPayloads,
) -> None:
    desired = entries(payloads)
    tree = copy.deepcopy(payloads.document())
    profile = tree["openconfig-qos:qos"]["queue-management-profiles"]["queue-management-profile"]
    profile[0]["wred"]["uniform"]["config"]["min-threshold"] = "1"
    plan = plan_switch("leaf1", desired, entries_from_tree(tree), desired)
    (op,) = plan.ops
    assert (op.kind, op.key) == ("change", profile[0]["name"])
    assert op.old_fields["wred/uniform/config/min-threshold"] == '"1"'
    parts = op_set(op)
    assert parts.deletes == ()
    ((path, body),) = parts.updates
    assert text(path).endswith(f"queue-management-profile[name={op.key}]")
    assert json.loads(body) == unflatten(op.fields)
    assert apply_plan(entries_from_tree(tree), plan) == desired


def test_the_operators_entries_and_leaves_are_neither_read_nor_removed(
    payloads: QosPayloads,
) -> None:
    desired = entries(payloads)
    tree = copy.deepcopy(payloads.document())
    qos = tree["openconfig-qos:qos"]
    qos["queues"]["queue"].append({"name": "BE", "config": {"name": "BE", "queue-id": 0}})
    port = qos["interfaces"]["interface"][0]
    port["output"]["queues"]["queue"].append({"name": "BE", "config": {"name": "BE"}})
    port["input"]["classifiers"]["classifier"].append(
        {"type": "MPLS", "config": {"type": "MPLS", "name": "OPERATOR_EXP"}}
    )
    qos["interfaces"]["interface"].append(
        {"interface-id": "Ethernet200", "config": {"interface-id": "Ethernet200"}}
    )
    observed = entries_from_tree(tree)
    assert observed == desired
    assert plan_switch("leaf1", desired, observed, desired).is_empty


def test_a_released_port_loses_sluices_leaves_only(payloads: QosPayloads) -> None:
    desired = entries(payloads)
    port = next(key for table, key in desired if table == INTERFACES)
    wanted = {k: v for k, v in desired.items() if k != (INTERFACES, port)}
    plan = plan_switch("leaf1", wanted, desired, desired)
    (op,) = plan.ops
    assert (op.kind, op.whole_entry) == ("delete", False)
    deleted = sorted(text(p) for p in op_set(op).deletes)
    prefix = f"/openconfig:qos/interfaces/interface[interface-id={port}]/"
    assert all(p.startswith(prefix) for p in deleted)
    shown = [p.removeprefix(prefix) for p in deleted]
    assert "output/config/buffer-allocation-profile" in shown
    assert "input/classifiers/classifier[type=IPV4]" in shown  # the binding whole
    assert not any(p.endswith("interface-id") for p in shown)  # never its key leaves


def test_a_dropped_class_removes_its_objects_and_its_classifier_term() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    intent = parse_intent(raw)
    before = entries(compile_switch(intent, intent.switches[0]))
    dropped = raw["service_classes"].pop()
    after_intent = parse_intent(raw)
    after = entries(compile_switch(after_intent, after_intent.switches[0]))
    plan = plan_switch("leaf1", after, before, before)
    queue = f"SLUICE_Q{dropped['queue']}"
    assert Op("delete", QUEUES, queue, {}, before[(QUEUES, queue)], True) in plan.ops
    term = next(op for op in plan.ops if op.table == CLASSIFIERS)
    deletes = [text(p) for p in op_set(term).deletes]
    assert any(p.endswith(f"terms/term[id=Q{dropped['queue']}]") for p in deletes)
    # Deletes come after every write: nothing is removed while something still names it.
    kinds = [op.kind for op in plan.ops]
    assert kinds.index("delete") > max(i for i, k in enumerate(kinds) if k != "delete")
    assert apply_plan(before, plan) == after


def test_one_set_carries_a_whole_fresh_switch_as_one_update_per_entry(
    payloads: QosPayloads,
) -> None:
    plan = plan_switch("leaf1", entries(payloads), {})
    request = set_request(plan.ops)
    assert request.deletes == ()
    assert len(request.updates) == len(plan.ops)


def test_each_switch_compiles_in_its_dialect() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["switches"][1]["dialect"] = "openconfig"
    intent = parse_intent(raw)
    fleet = compile_dialects(intent)
    sonic, openconfig = intent.switches[0], intent.switches[1]
    assert openconfig.dialect is Dialect.OPENCONFIG
    assert fleet[openconfig.name] == entries(compile_switch(intent, openconfig))
    assert all(not table.startswith("/") for table, _ in fleet[sonic.name])
    assert ("QUEUE", f"{sonic.ports[0].name}|3") in fleet[sonic.name]


def _covered(path: tuple[str, ...], watched: tuple[str, ...]) -> bool:
    """Whether the container ``watched`` (keys ``*``) holds the leaf at ``path``."""
    from controller.openconfig.entries import parse_segment

    if len(watched) >= len(path):
        return False
    for segment, pattern in zip(path, watched, strict=False):
        name, keys = parse_segment(segment)
        want_name, want_keys = parse_segment(pattern)
        if name != want_name or [k for k, _ in keys] != [k for k, _ in want_keys]:
            return False
    return True


@pytest.mark.parametrize("platform", [None, "arista_ceos", "cisco_8000", "juniper", "nokia_srl"])
def test_the_watched_containers_hold_every_leaf_sluice_writes(platform: str | None) -> None:
    """The drift watch's paths (WATCH_PATHS) cover every field of every entry sluice
    compiles, whatever the platform's deviations rewrote."""
    import yaml

    from controller.intent.loader import parse_intent
    from controller.openconfig.entries import (
        BY_TABLE,
        WATCH_PATHS,
        entries,
        parse_segment,
        split_path,
    )
    from controller.openconfig.qos import compile_switch

    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["switches"][1]["dialect"] = "openconfig"
    if platform is not None:
        raw["switches"][1]["platform"] = platform
    intent = parse_intent(raw)
    config = entries(compile_switch(intent, intent.switches[1]))
    assert config
    uncovered = []
    for (table_name, key), fields in config.items():
        table = BY_TABLE[table_name]
        head = (table.kind, f"{table.name}[{table.key}={key}]")
        for field_path in fields:
            leaf = (*head, *split_path(field_path))
            if leaf[-1] in dict(parse_segment(leaf[-2])[1]):
                continue  # a list's key leaf: its config holds the same value, watched
            if not any(_covered(leaf, watched) for watched in WATCH_PATHS):
                uncovered.append("/".join(leaf))
    assert uncovered == []


def test_a_change_is_drift_on_a_sluice_entry_or_a_port_not_on_the_operators() -> None:
    from controller.openconfig.entries import changed_tables

    changes = [
        (("qos", "queues", "queue[name=SLUICE_Q3]", "config"), {"queue-id": 3}),
        (("qos", "queues", "queue[name=OPERATOR]", "config"), {"queue-id": 1}),
        (("qos", "interfaces", "interface[interface-id=Ethernet0]", "output", "config"), {}),
        (("openconfig-qos:qos", "classifiers", "classifier[name=SLUICE_DSCP_IPV4]"), None),
        (("qos", "unknown", "x[name=SLUICE_A]"), {}),
        (("COUNTERS_DB", "localhost", "COUNTERS"), {}),
    ]
    assert changed_tables(changes) == {
        "/qos/queues/queue",
        "/qos/interfaces/interface",
        "/qos/classifiers/classifier",
    }
