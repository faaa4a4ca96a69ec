"""Loading intent: YAML and dicts in, field problems with operator-readable paths out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.errors import IntentInvalid
from controller.intent.loader import (
    dump_intent,
    load_intent_file,
    load_intent_yaml,
    parse_intent,
    render_path,
)
from controller.intent.models import EcnMode, Intent

from .helpers import assert_has_problem, assert_only_problem, problems_of, yaml_problems_of
from .intents import intent_data

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


def test_valid_data_parses_to_the_declared_objects() -> None:
    intent = parse_intent(intent_data())
    assert [s.name for s in intent.switches] == ["leaf1", "leaf2"]
    assert intent.service_classes[2].dscp == (10, 12)
    assert intent.fabric.qjump is not None
    assert intent.fabric.qjump.factors == {7: 1.0}


def test_unknown_top_level_key_suggests_the_close_name() -> None:
    data = intent_data()
    data["fabrik"] = data.pop("fabric")
    problems = problems_of(data)
    assert_has_problem(problems, "fabrik", "did you mean 'fabric'")
    assert_has_problem(problems, "fabric", "required field is missing")


def test_unknown_key_in_a_port_lists_the_allowed_keys() -> None:
    data = intent_data()
    data["switches"][1]["ports"][0]["speed"] = 25
    assert_only_problem(
        problems_of(data),
        "switches[1].ports[0].speed",
        "allowed: name, speed_gbps, buffer_bytes, cable_length_m, mtu_bytes)",
    )


def test_unknown_key_under_optional_qjump() -> None:
    data = intent_data()
    data["fabric"]["qjump"]["hostz"] = 3
    assert_only_problem(problems_of(data), "fabric.qjump.hostz", "did you mean 'hosts'")


def test_ewma_beta_is_no_longer_an_agent_field() -> None:
    # Dropped from the agent's orders (docs/intent.md, fabric.agent): an intent written for
    # the old model is refused with the fields that remain, not silently accepted.
    data = intent_data()
    data["fabric"]["agent"] = {"interval_ms": 10, "ewma_beta": 0.75}
    assert_only_problem(
        problems_of(data),
        "fabric.agent.ewma_beta",
        "allowed: interval_ms, hysteresis_pct, hdcq_k, stale_after_ms",
    )


def test_unknown_key_in_a_pias_demotion_stage() -> None:
    data = intent_data()
    data["service_classes"][1]["pias"]["demotions"][0]["weight"] = 2
    assert_only_problem(
        problems_of(data),
        "service_classes[1].pias.demotions[0].weight",
        "allowed: dscp, queue",
    )


def test_queue_8_is_out_of_range() -> None:
    data = intent_data()
    data["service_classes"][3]["queue"] = 8
    assert_only_problem(problems_of(data), "service_classes[3].queue", "less than or equal to 7")


def test_dscp_64_names_its_index_in_the_list() -> None:
    data = intent_data()
    data["service_classes"][2]["dscp"] = [10, 64]
    assert_only_problem(problems_of(data), "service_classes[2].dscp[1]", "less than or equal to 63")


def test_wrong_type_for_a_port_speed() -> None:
    data = intent_data()
    data["switches"][0]["ports"][1]["speed_gbps"] = "fast"
    assert_only_problem(problems_of(data), "switches[0].ports[1].speed_gbps", "valid integer")


def test_one_bad_port_does_not_also_report_an_empty_port_list() -> None:
    data = intent_data()
    data["switches"][0]["ports"] = [{"name": "eth0", "speed_gbps": 25}]
    assert_only_problem(problems_of(data), "switches[0].ports[0].name", "must match pattern")


def test_unknown_enum_value_lists_the_choices() -> None:
    data = intent_data()
    data["service_classes"][0]["ecn"] = "red"
    assert_only_problem(problems_of(data), "service_classes[0].ecn", "'per-queue-minimum'")


def test_qjump_factor_keys_are_written_after_a_dot() -> None:
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {7: 1.0, 9: 2.0, 3: -1.0}
    problems = problems_of(data)
    assert_has_problem(problems, "fabric.qjump.factors.9", "key must be less than or equal to 7")
    assert_has_problem(problems, "fabric.qjump.factors.3", "greater than 0")
    assert len(problems) == 2


# Issue 25 ("Inputs"): keys that mean one level once converted. On main {7: 1.0, '07': 2.0}
# was stored as {7: 2.0} with no error.
COLLIDING_FACTORS = {
    "int-and-zero-padded": ({7: 1.0, "07": 2.0}, "7", "'07'"),
    "json-strings": ({"7": 1.0, "07": 2.0}, "'7'", "'07'"),
    "sign-and-space": ({"+3": 1.0, " 3": 2.0}, "'+3'", "' 3'"),
}


@pytest.mark.parametrize(
    ("factors", "first", "second"), COLLIDING_FACTORS.values(), ids=COLLIDING_FACTORS.keys()
)
def test_qjump_factor_keys_that_mean_one_level_are_refused_naming_both(
    factors: dict[object, float], first: str, second: str
) -> None:
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = factors
    problems = problems_of(data)
    assert_only_problem(problems, "fabric.qjump.factors", f"keys {first} and {second} both mean")


def test_colliding_keys_in_yaml_are_refused_too() -> None:
    # YAML reads 7 as an int and '07' as a string: different keys to YAML, one level here.
    text = EXAMPLE.read_text()
    intent = load_intent_yaml(text)
    assert intent.fabric.qjump is not None
    data = dump_intent(intent)
    data["fabric"]["qjump"]["factors"] = {7: 1.0, "07": 2.0}  # type: ignore[index]
    problems = yaml_problems_of(yaml.safe_dump(data))
    assert_only_problem(problems, "fabric.qjump.factors", "keys 7 and '07' both mean 7")


def test_a_boolean_key_where_a_level_belongs_is_refused() -> None:
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {True: 1.0}
    assert_only_problem(problems_of(data), "fabric.qjump.factors", "key True is a boolean")


def test_a_credential_that_looks_like_a_secret_is_refused_without_echoing_it() -> None:
    data = intent_data()
    data["switches"][0]["credential_ref"] = "Tr0ub4dor&3"
    with pytest.raises(IntentInvalid) as caught:
        parse_intent(data)
    assert_only_problem(caught.value.problems, "switches[0].credential_ref", "env:NAME")
    assert "Tr0ub4dor" not in str(caught.value)
    assert "Tr0ub4dor" not in repr(caught.value.problems)


def test_missing_required_field() -> None:
    data = intent_data()
    del data["hosts"][1]["nic_gbps"]
    assert_only_problem(problems_of(data), "hosts[1].nic_gbps", "required field is missing")


def test_document_that_is_not_a_mapping() -> None:
    assert_only_problem(problems_of(["fabric"]), "intent", "must be a mapping")


def test_every_pydantic_error_is_reported_at_once() -> None:
    data = intent_data()
    data["service_classes"][0]["queue"] = -1
    data["hosts"][0]["nic_gbps"] = 0
    data["fabric"]["mtu_bytes"] = 100
    paths = {p.path for p in problems_of(data)}
    assert paths == {"service_classes[0].queue", "hosts[0].nic_gbps", "fabric.mtu_bytes"}


def test_render_path_tells_list_indexes_from_mapping_keys() -> None:
    data = {"a": [{"b": {"7": 1}}]}
    assert render_path(("a", 0, "b", "7"), data) == "a[0].b.7"
    assert render_path(("a", 0, "b", "x", "[key]"), data) == "a[0].b.x"
    assert render_path((), data) == "intent"


# ---------------------------------------------------------------------------------------------
# YAML


def test_yaml_syntax_error_names_line_and_column() -> None:
    text = "api_version: sluice/v1\nfabric:\n  base_rtt_us: [40\n  mtu_bytes: 1500\n"
    problems = yaml_problems_of(text)
    assert [p.path for p in problems] == ["intent"]
    # The flow sequence opened on line 3 is never closed; PyYAML notices at line 4, column 12,
    # where a mapping value turns up inside it.
    assert "line 4, column 12" in problems[0].reason


def test_yaml_duplicate_key_is_an_error_not_last_wins() -> None:
    text = "fabric:\n  base_rtt_us: 40\n  base_rtt_us: 80\n  port_buffer_bytes: 1000000\n"
    problems = yaml_problems_of(text)
    assert_only_problem(problems, "intent", "duplicate key 'base_rtt_us'")
    assert "line 3, column 3" in problems[0].reason


def test_yaml_off_is_the_ecn_mode_not_false() -> None:
    text = "fabric: {base_rtt_us: 40, port_buffer_bytes: 1000000}\n" + (
        "service_classes:\n"
        "  - {name: a, dscp: [1], queue: 1, scheduling: {type: STRICT}, ecn: off}\n"
    )
    intent = load_intent_yaml(text)
    assert intent.service_classes[0].ecn is EcnMode.OFF


def test_yaml_type_error_gets_a_field_path() -> None:
    text = "fabric: {base_rtt_us: forty, port_buffer_bytes: 1000000}\n"
    assert_only_problem(yaml_problems_of(text), "fabric.base_rtt_us", "valid number")


def test_unreadable_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(IntentInvalid) as caught:
        load_intent_file(missing)
    assert_only_problem(caught.value.problems, "intent", "cannot read")


# ---------------------------------------------------------------------------------------------
# example and round trip


def test_example_intent_is_valid_and_has_what_the_demo_needs() -> None:
    intent = load_intent_file(EXAMPLE)
    roles = sorted(s.role.value for s in intent.switches)
    assert roles == ["leaf", "leaf", "spine", "spine"]
    kinds = {c.scheduling.type.value for c in intent.service_classes}
    assert kinds == {"STRICT", "DWRR"}
    modes = {c.ecn for c in intent.service_classes}
    assert EcnMode.MQECN in modes
    assert len(modes) >= 3
    assert any(c.qjump_level is not None for c in intent.service_classes)
    assert any(c.pias is not None for c in intent.service_classes)
    assert 4 <= len(intent.service_classes) <= 6


def test_example_round_trips_through_dump() -> None:
    intent = load_intent_file(EXAMPLE)
    dumped = dump_intent(intent)
    assert parse_intent(dumped) == intent
    # JSON-ready: mapping keys are strings (QJUMP levels become "7").
    fabric = dumped["fabric"]
    assert isinstance(fabric, dict)
    assert all(isinstance(k, str) for k in fabric["qjump"]["factors"])


def test_parse_returns_the_model_type() -> None:
    assert isinstance(parse_intent(intent_data()), Intent)


def test_a_non_string_key_where_field_names_belong() -> None:
    text = "fabric: {base_rtt_us: 40, port_buffer_bytes: 1000000}\n1: x\n"
    assert_only_problem(yaml_problems_of(text), "1", "keys must be strings")


def test_a_list_where_a_mapping_belongs() -> None:
    data = intent_data()
    data["fabric"]["qjump"] = [8, 256]
    assert_only_problem(problems_of(data), "fabric.qjump", "valid dictionary")
