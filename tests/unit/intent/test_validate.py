"""Cross-object rules: names, DSCP values, queues, and what each feature needs of scheduling."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from controller.errors import IntentInvalid
from controller.intent.loader import parse_intent
from controller.intent.models import Dialect, Intent
from controller.intent.validate import intent_problems, validate_intent

from .helpers import assert_has_problem, assert_only_problem, problems_of
from .intents import intent_data, switch_data


def test_the_base_intent_has_no_problems() -> None:
    # Every other test breaks this intent in one place; it must start out sound.
    assert intent_problems(parse_intent(intent_data())) == []


def test_validate_intent_raises_with_all_problems_and_passes_good_intents() -> None:
    good = parse_intent(intent_data())
    assert validate_intent(good) is good
    data = intent_data()
    data["service_classes"][3]["dscp"] = [46]
    data["hosts"][1]["name"] = "host1"
    unchecked = Intent.model_validate(data)  # the shape is fine; only the rules object
    with pytest.raises(IntentInvalid) as caught:
        validate_intent(unchecked)
    assert {p.path for p in caught.value.problems} == {
        "hosts[1].name",
        "service_classes[3].dscp[0]",
    }


def test_duplicate_switch_name() -> None:
    data = intent_data()
    data["switches"][1]["name"] = "leaf1"
    assert_only_problem(problems_of(data), "switches[1].name", "duplicate name 'leaf1'")


def test_duplicate_class_name_points_at_the_first_use() -> None:
    data = intent_data()
    data["service_classes"][3]["name"] = "rpc"
    assert_only_problem(
        problems_of(data), "service_classes[3].name", "first used at service_classes[1].name"
    )


def test_duplicate_port_within_a_switch_but_not_across_switches() -> None:
    data = intent_data()
    # Both switches already have Ethernet0 and Ethernet4: that is fine across switches.
    data["switches"][0]["ports"][1]["name"] = "Ethernet0"
    assert_only_problem(problems_of(data), "switches[0].ports[1].name", "duplicate name")


def test_gnmi_endpoint_shared_by_two_switches() -> None:
    data = intent_data()
    data["switches"].append(switch_data("spine1", 50051))
    data["switches"][2]["gnmi"]["address"] = "127.0.0.1"
    assert_only_problem(
        problems_of(data), "switches[2].gnmi", "127.0.0.1:50051 already used at switches[0].gnmi"
    )


def test_a_fleet_endpoint_is_shared_by_switches_with_their_own_targets() -> None:
    data = intent_data()
    data["switches"].append(switch_data("spine1", 50051))
    data["switches"][2]["gnmi"]["address"] = "127.0.0.1"
    data["switches"][0]["gnmi"]["target"] = "leaf1"
    data["switches"][2]["gnmi"]["target"] = "spine1"
    assert len(parse_intent(data).switches) == 3
    data["switches"][2]["gnmi"]["target"] = "leaf1"
    assert_only_problem(
        problems_of(data),
        "switches[2].gnmi",
        "127.0.0.1:50051 target leaf1 already used at switches[0].gnmi",
    )


# Issue 25 ("Inputs"): endpoints are compared as the machines they reach. On main, each of
# these pairs was accepted, and one switch's rollout would write the other's config.
SAME_MACHINE = {
    "ipv4-mapped": ("::ffff:127.0.0.1", "127.0.0.1"),
    "ipv6-spellings": ("0:0:0:0:0:0:0:1", "::1"),
    "ipv6-case": ("FE80::1", "fe80::1"),
    "dns-case": ("Leaf1.Fabric.Example", "leaf1.fabric.example"),
}


@pytest.mark.parametrize("pair", SAME_MACHINE.values(), ids=SAME_MACHINE.keys())
def test_one_gnmi_endpoint_spelled_two_ways_is_refused_naming_both_switches(
    pair: tuple[str, str],
) -> None:
    data = intent_data()
    data["switches"][0]["gnmi"]["address"], data["switches"][1]["gnmi"]["address"] = pair
    data["switches"][1]["gnmi"]["port"] = 50051
    problems = problems_of(data)
    assert_only_problem(problems, "switches[1].gnmi", "already used at switches[0].gnmi")
    reason = problems[0].reason
    for named in ("leaf1", "leaf2", *pair):
        assert named in reason, reason


def table_resolver(table: dict[str, list[str]]) -> Callable[[Sequence[str]], dict[str, list[str]]]:
    """A resolver answering from ``table``, recording what it was asked."""
    asked: list[str] = []

    def resolve(names: Sequence[str]) -> dict[str, list[str]]:
        asked.extend(names)
        return {name: table[name] for name in names if name in table}

    resolve.asked = asked  # type: ignore[attr-defined]
    return resolve


def test_names_that_resolve_to_one_address_are_one_endpoint() -> None:
    data = intent_data()
    data["switches"][0]["gnmi"]["address"] = "leaf1.lab"
    data["switches"][1]["gnmi"] = {"address": "::ffff:10.9.0.1", "port": 50051}
    data["switches"][0]["gnmi"]["port"] = 50051
    resolve = table_resolver({"leaf1.lab": ["10.9.0.1"]})
    with pytest.raises(IntentInvalid) as caught:
        parse_intent(data, resolve)
    assert_only_problem(caught.value.problems, "switches[1].gnmi", "leaf1 and leaf2")
    assert "leaf1.lab and ::ffff:10.9.0.1 are one" in caught.value.problems[0].reason
    assert resolve.asked == ["leaf1.lab"]  # type: ignore[attr-defined]
    # Without the resolver's answer the name is compared by its spelling, and accepted.
    assert len(parse_intent(data).switches) == 2
    # Two names for one address, on different ports, are two endpoints.
    data["switches"][1]["gnmi"]["port"] = 50052
    assert len(parse_intent(data, resolve).switches) == 2


def test_hosts_at_one_address_spelled_two_ways_are_refused() -> None:
    data = intent_data()
    data["hosts"][1]["address"] = "::ffff:10.0.0.1"
    assert_only_problem(
        problems_of(data), "hosts[1].address", "already used at hosts[0].address (host1 and host2"
    )


def test_duplicate_host_address() -> None:
    data = intent_data()
    data["hosts"][1]["address"] = "10.0.0.1"
    assert_only_problem(problems_of(data), "hosts[1].address", "already used at hosts[0].address")


def test_unknown_port_speed() -> None:
    data = intent_data()
    data["switches"][1]["ports"][1]["speed_gbps"] = 30
    assert_only_problem(problems_of(data), "switches[1].ports[1].speed_gbps", "30 Gb/s is not")


def test_dscp_used_by_two_classes() -> None:
    data = intent_data()
    data["service_classes"][3]["dscp"] = [8, 12]
    assert_only_problem(
        problems_of(data),
        "service_classes[3].dscp[1]",
        "DSCP 12 is already used at service_classes[2].dscp[1]",
    )


def test_dscp_of_a_pias_stage_counts_too() -> None:
    data = intent_data()
    data["service_classes"][2]["dscp"] = [34]
    assert_only_problem(
        problems_of(data),
        "service_classes[2].dscp[0]",
        "already used at service_classes[1].pias.demotions[0].dscp",
    )


def test_dscp_repeated_within_one_class() -> None:
    data = intent_data()
    data["service_classes"][2]["dscp"] = [10, 10]
    assert_only_problem(problems_of(data), "service_classes[2].dscp[1]", "DSCP 10")


def test_two_classes_on_one_queue() -> None:
    data = intent_data()
    data["service_classes"][3]["queue"] = 3
    assert_only_problem(
        problems_of(data),
        "service_classes[3].queue",
        "queue 3 is already used at service_classes[2].queue",
    )


def test_pias_stage_queue_taken_by_another_class() -> None:
    data = intent_data()
    data["service_classes"][3]["queue"] = 5
    assert_only_problem(
        problems_of(data),
        "service_classes[3].queue",
        "already used at service_classes[1].pias.demotions[0].queue",
    )


def test_pias_stages_need_distinct_queues() -> None:
    data = intent_data()
    data["service_classes"][1]["pias"]["demotions"].append({"dscp": 26, "queue": 5})
    assert_only_problem(
        problems_of(data), "service_classes[1].pias.demotions[1].queue", "queue 5 is already used"
    )


def test_dwrr_without_weight() -> None:
    data = intent_data()
    del data["service_classes"][2]["scheduling"]["weight"]
    assert_only_problem(
        problems_of(data), "service_classes[2].scheduling.weight", "DWRR needs a weight"
    )


def test_strict_with_weight() -> None:
    data = intent_data()
    data["service_classes"][0]["scheduling"]["weight"] = 10
    assert_only_problem(
        problems_of(data),
        "service_classes[0].scheduling.weight",
        "STRICT scheduling takes no weight",
    )


def test_pias_class_must_be_strict() -> None:
    data = intent_data()
    data["service_classes"][1]["scheduling"] = {"type": "DWRR", "weight": 10}
    assert_only_problem(
        problems_of(data), "service_classes[1].scheduling.type", "a PIAS class must be STRICT"
    )


def test_qjump_class_must_be_strict() -> None:
    data = intent_data()
    data["service_classes"][0]["scheduling"] = {"type": "DWRR", "weight": 10}
    assert_only_problem(
        problems_of(data), "service_classes[0].scheduling.type", "a QJUMP class must be STRICT"
    )


def test_mqecn_on_a_strict_queue() -> None:
    data = intent_data()
    data["service_classes"][1]["ecn"] = "mqecn"
    assert_only_problem(problems_of(data), "service_classes[1].ecn", "mqecn needs DWRR")


def test_per_queue_minimum_on_a_strict_queue() -> None:
    data = intent_data()
    data["service_classes"][0]["ecn"] = "per-queue-minimum"
    assert_only_problem(problems_of(data), "service_classes[0].ecn", "per-queue-minimum needs DWRR")


def test_two_dynamic_algorithms_in_one_fabric() -> None:
    data = intent_data()
    data["service_classes"][3]["ecn"] = "dynaq"
    assert_only_problem(
        problems_of(data),
        "service_classes[3].ecn",
        "dynaq conflicts with mqecn at service_classes[2].ecn",
    )


def test_one_dynamic_algorithm_on_several_queues_is_fine() -> None:
    data = intent_data()
    for service_class in data["service_classes"][2:]:
        service_class["ecn"] = "dynaq"
    assert intent_problems(parse_intent(data)) == []


def test_problems_from_several_rules_arrive_together() -> None:
    data = intent_data()
    data["service_classes"][3]["queue"] = 3
    data["service_classes"][3]["dscp"] = [10]
    data["switches"][1]["name"] = "leaf1"
    problems = problems_of(data)
    assert_has_problem(problems, "service_classes[3].queue", "queue 3")
    assert_has_problem(problems, "service_classes[3].dscp[0]", "DSCP 10")
    assert_has_problem(problems, "switches[1].name", "duplicate name")
    assert len(problems) == 3


@pytest.mark.parametrize(
    ("address", "accepted"),
    [
        ("10.0.0.1", True),
        ("fd00::1", True),
        ("leaf1.dc1.example.net", True),
        ("https://leaf1", False),
        ("leaf1:8080", False),
        ("-leaf1", False),
        ("leaf_1.example", False),
    ],
)
def test_gnmi_address_is_an_ip_or_dns_name(address: str, accepted: bool) -> None:
    data = intent_data()
    data["switches"][0]["gnmi"]["address"] = address
    data["switches"][1]["gnmi"]["address"] = "10.9.9.9"  # keep endpoints distinct
    problems = intent_problems(parse_intent_unchecked(data))
    if accepted:
        assert problems == []
    else:
        assert_only_problem(problems, "switches[0].gnmi.address", "not an IP address or a DNS name")


def test_host_address_that_is_not_an_address() -> None:
    data = intent_data()
    data["hosts"][0]["address"] = "10.0.0.1/24"
    assert_only_problem(problems_of(data), "hosts[0].address", "'10.0.0.1/24' is not an IP")


def test_agent_stale_after_must_exceed_its_interval() -> None:
    data = intent_data()
    data["fabric"]["agent"] = {"interval_ms": 100, "stale_after_ms": 100}
    assert_only_problem(
        problems_of(data), "fabric.agent.stale_after_ms", "greater than fabric.agent.interval_ms"
    )


def parse_intent_unchecked(data: object) -> Intent:
    return Intent.model_validate(data)


def test_agent_interval_below_the_platforms_queue_counter_floor_is_refused() -> None:
    # The base intent runs MQ-ECN, so the agent reads queue counters polled at its interval.
    data = intent_data()
    data["fabric"]["agent"] = {"interval_ms": 10}
    assert_only_problem(
        problems_of(data), "fabric.agent.interval_ms", "(fabric.counters.queue_floor_ms = 100 ms)"
    )


def test_a_platform_with_a_lower_floor_accepts_a_faster_agent() -> None:
    data = intent_data()
    data["fabric"]["agent"] = {"interval_ms": 10}
    data["fabric"]["counters"] = {"queue_floor_ms": 1}
    assert parse_intent(data).fabric.agent.interval_ms == 10


def test_watermarks_below_their_floor_are_refused() -> None:
    data = intent_data()
    data["fabric"]["counters"] = {"watermark_interval_ms": 500}
    assert_only_problem(
        problems_of(data), "fabric.counters.watermark_interval_ms", "500 ms is shorter"
    )


def test_a_switch_speaks_sonic_unless_it_says_otherwise() -> None:
    data = intent_data()
    data["switches"][1]["dialect"] = "sonic"
    intent = parse_intent(data)
    assert [s.dialect for s in intent.switches] == [Dialect.SONIC, Dialect.SONIC]
    assert "dialect" not in intent_data()["switches"][0]  # the first said nothing


def test_an_unknown_dialect_is_refused() -> None:
    data = intent_data()
    data["switches"][0]["dialect"] = "junos"
    assert_only_problem(problems_of(data), "switches[0].dialect", "sonic")


def test_an_openconfig_switch_is_accepted_beside_a_sonic_one() -> None:
    data = intent_data()
    data["switches"][1]["dialect"] = "openconfig"
    intent = parse_intent(data)
    assert [s.dialect for s in intent.switches] == [Dialect.SONIC, Dialect.OPENCONFIG]


def test_an_openconfig_switch_refuses_lossless_classes_by_name() -> None:
    data = intent_data()
    data["switches"][1]["dialect"] = "openconfig"
    data["fabric"]["lossless"] = {
        "cell_bytes": 144,
        "pipeline_latency_bytes": 18432,
        "mac_phy_delay_bytes": 819.2,
    }
    data["service_classes"][2]["ecn"] = "standard"
    data["service_classes"][2]["lossless"] = {"pfc_priority": 3}
    assert_only_problem(problems_of(data), "switches[1].dialect", "lossless classes storage")
