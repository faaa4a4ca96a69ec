"""Vendor deviations (controller/openconfig/deviations.py): what each platform does not take
of the openconfig-qos leaves sluice writes is rewritten and said in the plan, or refused by
name; a platform that needs nothing rewritten gets the payload every platform-less switch
gets. The example intent with its leaf2 as an OpenConfig switch of each platform."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.accept import accept_intent, compile_dialects
from controller.errors import DeviationUnsupported, IntentInvalid
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.openconfig.deviations import (
    DEVIATIONS,
    INERT_PROFILE,
    Answer,
)
from controller.openconfig.entries import entries
from controller.openconfig.qos import QosPayloads, compile_switch, platform_warnings

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
LEAF2 = 1  # its index among the example's switches

Json = dict[str, Any]


def raw_intent(platform: str | None, ecn: dict[str, str] | None = None) -> Json:
    raw: Json = yaml.safe_load(EXAMPLE.read_text())
    leaf2 = raw["switches"][LEAF2]
    leaf2["dialect"] = "openconfig"
    if platform is not None:
        leaf2["platform"] = platform
    for service_class in raw["service_classes"]:
        service_class["ecn"] = (ecn or {}).get(service_class["ecn"], service_class["ecn"])
    return raw


def leaf2(intent: Intent) -> QosPayloads:
    return compile_switch(intent, intent.switches[LEAF2])


def wred(payloads: QosPayloads) -> dict[str, Json]:
    profiles = payloads.by_kind["queue-management-profiles"]["queue-management-profile"]
    return {p["name"]: p["wred"]["uniform"]["config"] for p in profiles}


def test_cisco_8000_ramps_step_marking_and_leaves_out_the_drop_and_weight_leaves() -> None:
    plain = wred(leaf2(parse_intent(raw_intent(None))))
    intent = parse_intent(raw_intent("cisco_8000"))
    cisco = leaf2(intent)
    assert set(cisco.by_kind) == set(leaf2(parse_intent(raw_intent(None))).by_kind)
    assert set(wred(cisco)) == set(plain)
    for name, config in wred(cisco).items():
        before = plain[name]
        assert before["min-threshold"] == before["max-threshold"]  # sluice's step marking
        assert config["min-threshold"] == before["min-threshold"]
        # featureprofiles' qos_ecn_config_test: Cisco's min 8005632, max 8011776.
        assert int(config["max-threshold"]) == int(before["min-threshold"]) + 6144
        assert "drop" not in config
        assert "weight" not in config
        assert config["enable-ecn"] == before["enable-ecn"]
    named = [w.reason.split(" ")[1].strip("(,") for w in platform_warnings(intent)]
    assert named == [
        "ecn_same_min_max_threshold_unsupported",
        "qos_set_weight_config_unsupported",
        "drop_weight_leaves_unsupported",
    ]
    assert {w.path for w in platform_warnings(intent)} == {f"switches[{LEAF2}].platform"}


def test_cisco_8000_refuses_dynaqs_drop_only_queues_by_name() -> None:
    with pytest.raises(DeviationUnsupported) as refused:
        accept_intent(raw_intent("cisco_8000", {"mqecn": "dynaq"}))
    assert isinstance(refused.value, IntentInvalid)  # a 422 at the API, naming the field
    assert refused.value.problems[0].path == f"switches[{LEAF2}].platform"
    assert refused.value.deviation == "drop_weight_leaves_unsupported"
    assert "SLUICE_WRED_100G_2000000B_Q3" in refused.value.problems[0].reason
    # The same intent on a platform that takes the drop leaf compiles.
    accept_intent(raw_intent("arista_ceos", {"mqecn": "dynaq"}))


def test_arista_ceos_names_ports_by_interface_id_alone() -> None:
    intent = parse_intent(raw_intent("arista_ceos"))
    interfaces = leaf2(intent).by_kind["interfaces"]["interface"]
    assert interfaces
    assert all("interface-ref" not in i for i in interfaces)
    assert all(i["interface-id"] == i["config"]["interface-id"] for i in interfaces)
    fields = next(iter(v for (t, _), v in entries(leaf2(intent)).items() if "interfaces" in t))
    assert not any(path.startswith("interface-ref") for path in fields)
    warned = platform_warnings(intent)
    assert [w.reason.split(" ")[1].strip("(,") for w in warned] == [
        "interface_ref_config_unsupported"
    ]


def test_juniper_defines_an_inert_profile_only_where_the_intent_marks_nothing() -> None:
    marking = parse_intent(raw_intent("juniper"))
    assert leaf2(marking).by_kind == leaf2(parse_intent(raw_intent(None))).by_kind
    assert platform_warnings(marking) == []
    off = dict.fromkeys(("standard", "mqecn", "per-queue-minimum"), "off")
    silent = parse_intent(raw_intent("juniper", off))
    assert wred(leaf2(silent)) == {INERT_PROFILE: {"enable-ecn": False, "drop": False}}
    assert wred(leaf2(parse_intent(raw_intent(None, off)))) == {}
    interfaces = leaf2(silent).by_kind["interfaces"]["interface"]
    named = [
        q["config"].get("queue-management-profile")
        for i in interfaces
        for q in i["output"]["queues"]["queue"]
    ]
    assert INERT_PROFILE not in named  # no queue uses it
    assert [w.path for w in platform_warnings(silent)] == [f"switches[{LEAF2}].platform"]


def test_nokia_srl_needs_nothing_rewritten_and_the_desired_entries_are_unchanged() -> None:
    nokia = parse_intent(raw_intent("nokia_srl"))
    plain = parse_intent(raw_intent(None))
    assert compile_dialects(nokia) == compile_dialects(plain)
    assert platform_warnings(nokia) == []


def test_a_satisfied_deviation_still_refuses_a_payload_that_broke_it() -> None:
    by_kind = copy.deepcopy(leaf2(parse_intent(raw_intent(None))).by_kind)
    del by_kind["queues"]["queue"][0]["config"]["queue-id"]
    check = next(d for d in DEVIATIONS if d.name == "qos_queue_requires_id").check
    assert check is not None
    assert "SLUICE_Q" in (check(by_kind) or "")


def test_every_deviation_has_an_answer_and_platforms() -> None:
    for deviation in DEVIATIONS:
        assert deviation.platforms
        assert deviation.answer in Answer
        if deviation.answer is Answer.APPROXIMATED:
            assert deviation.adapt is not None
        else:
            assert deviation.check is not None


def test_a_platform_on_a_sonic_switch_is_refused() -> None:
    raw = raw_intent(None)
    raw["switches"][0]["platform"] = "arista_ceos"
    with pytest.raises(IntentInvalid) as refused:
        accept_intent(raw)
    assert [p.path for p in refused.value.problems] == ["switches[0].platform"]
