"""Every openconfig-qos payload sluice compiles validates against the published models.

One test per object kind on the example intent's leaf1 (and the whole document on every
switch), and per kind a payload broken the way a compiler bug would break it, which the
models refuse: proof that the check can fail. The models are the pyangbind bindings of
openconfig-qos shipped by the pinned ``oc-config-validate`` (``tests/yang/openconfig_models``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.intent.loader import load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.openconfig.qos import KINDS, QOS, QosPayloads, compile_switch
from tests.yang.openconfig_models import entrywise_qos_check, model_versions, qos_problem

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "example-intent.yaml"

Json = dict[str, Any]


@pytest.fixture(scope="module")
def intent() -> Intent:
    return load_intent_file(EXAMPLE)


@pytest.fixture(scope="module")
def leaf1(intent: Intent) -> QosPayloads:
    return compile_switch(intent, next(s for s in intent.switches if s.name == "leaf1"))


def test_the_models_are_openconfig_qos_with_its_imports() -> None:
    versions = model_versions()
    for module in ("openconfig-qos", "openconfig-types", "openconfig-yang-types"):
        assert module in versions, module
    assert versions["openconfig-qos"] >= "2023-09-06"  # queue-id, WRED weight in the model


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_the_example_validates(leaf1: QosPayloads, kind: str) -> None:
    body = leaf1.by_kind[kind]
    (entries,) = body.values()
    assert entries, f"{kind}: nothing compiled"
    assert qos_problem(leaf1.document((kind,))) is None


def test_a_switch_of_another_shape_validates_whole(intent: Intent, leaf1: QosPayloads) -> None:
    # leaf1's kinds are checked one by one above; a spine (100G ports, a deeper buffer) has
    # other profiles. One switch per shape: the bindings take seconds per document.
    spine = next(s for s in intent.switches if s.role == "spine")
    payloads = compile_switch(intent, spine)
    assert set(payloads.by_kind) == set(KINDS)
    assert payloads.by_kind != leaf1.by_kind
    assert qos_problem(payloads.document()) is None


def _first(body: Json) -> Json:
    (entries,) = body.values()
    first: Json = entries[0]
    return first


def _queue_id_past_uint8(body: Json) -> None:
    _first(body)["config"]["queue-id"] = 256


def _queue_leaf_on_a_forwarding_group(body: Json) -> None:
    _first(body)["config"]["queue-id"] = 3  # a queue's leaf, not a forwarding group's


def _dscp_past_six_bits(body: Json) -> None:
    _first(body)["terms"]["term"][0]["conditions"]["ipv4"]["config"]["dscp-set"].append(64)


def _sonic_scheduler_type_as_priority(body: Json) -> None:
    scheduler = _first(body)["schedulers"]["scheduler"][0]
    scheduler["config"]["priority"] = "DWRR"  # SONiC's word; the model knows only STRICT


def _probability_past_100(body: Json) -> None:
    _first(body)["wred"]["uniform"]["config"]["max-drop-probability-percent"] = 101


def _unknown_buffer_limit_identity(body: Json) -> None:
    queue = _first(body)["queues"]["queue"][0]
    queue["config"]["shared-buffer-limit-type"] = "openconfig-qos:DYNAMIC"


def _ethernet_classifier_on_an_interface(body: Json) -> None:
    # A classifier may be of type ETHERNET; an interface binds only IPV4/IPV6/MPLS/multicast.
    binding = _first(body)["input"]["classifiers"]["classifier"][0]
    binding["type"] = binding["config"]["type"] = "ETHERNET"


# kind -> (how it is broken, the node the models' refusal names)
BREAKAGES: dict[str, tuple[Callable[[Json], None], str]] = {
    "queues": (_queue_id_past_uint8, "queue_id"),
    "forwarding-groups": (_queue_leaf_on_a_forwarding_group, "queue-id"),
    "classifiers": (_dscp_past_six_bits, "dscp_set"),
    "scheduler-policies": (_sonic_scheduler_type_as_priority, "priority"),
    "queue-management-profiles": (_probability_past_100, "max_drop_probability_percent"),
    "buffer-allocation-profiles": (_unknown_buffer_limit_identity, "shared_buffer_limit_type"),
    "interfaces": (_ethernet_classifier_on_an_interface, "type"),
}


def test_every_kind_has_a_breakage() -> None:
    assert set(BREAKAGES) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_the_models_refuse_a_broken_payload_of_each_kind(leaf1: QosPayloads, kind: str) -> None:
    body = copy.deepcopy(leaf1.by_kind[kind])
    breakage, node = BREAKAGES[kind]
    breakage(body)
    problem = qos_problem({QOS: {kind: body}})
    # The unbroken payload passes (test_each_kind_of_the_example_validates), and the
    # refusal names the broken node.
    assert problem is not None, f"{kind}: the broken payload passed"
    assert node in problem, problem


@pytest.fixture(scope="module")
def entrywise() -> Callable[[Json], str | None]:
    """One check for every kind: what it accepted once it does not check again."""
    return entrywise_qos_check()


@pytest.mark.parametrize("kind", KINDS)
def test_the_entrywise_check_refuses_what_the_whole_check_refuses(
    leaf1: QosPayloads, entrywise: Callable[[Json], str | None], kind: str
) -> None:
    # What the OpenConfig vsonic of the integration tests checks every Set with: the same
    # bindings entry by entry, each accepted entry not checked again.
    check = entrywise
    assert check(leaf1.document()) is None
    body = copy.deepcopy(leaf1.by_kind[kind])
    breakage, node = BREAKAGES[kind]
    breakage(body)
    broken = leaf1.document()
    broken[QOS][kind] = body
    problem = check(broken)
    assert problem is not None, f"{kind}: the broken payload passed"
    assert node in problem, problem
    assert check(leaf1.document()) is None


@pytest.mark.parametrize(
    ("platform", "ecn_off"),
    [("arista_ceos", False), ("cisco_8000", False), ("juniper", True)],
)
def test_each_platforms_payload_validates(
    platform: str, ecn_off: bool, entrywise: Callable[[Json], str | None]
) -> None:
    """What each platform's deviations rewrite (controller/openconfig/deviations.py) stays
    inside the models: leaves left out, a max threshold moved, an inert profile added
    (Juniper's, where the intent marks nothing). Nokia's are all satisfied: its payload is
    the platform-less one (tests/unit/openconfig/test_deviations.py). Checked entry by entry
    (``entrywise``, which refuses what the whole check refuses: the test below), so an entry
    the platform left as it was costs nothing again."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["switches"][1].update(dialect="openconfig", platform=platform)
    if ecn_off:
        for service_class in raw["service_classes"]:
            service_class["ecn"] = "off"
    intent = parse_intent(raw)
    payloads = compile_switch(intent, intent.switches[1])
    assert payloads.approximated  # the platform rewrote something: that is what is checked
    assert entrywise(payloads.document()) is None
