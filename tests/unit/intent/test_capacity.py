"""Numbers that must fit the hardware: QJUMP levels, ECN thresholds, DWRR weights.

Expected values are worked out by hand in the comments.
"""

from __future__ import annotations

from controller.intent.loader import parse_intent
from controller.intent.validate import intent_problems

from .helpers import assert_has_problem, assert_only_problem, problems_of
from .intents import intent_data

# ---------------------------------------------------------------------------------------------
# QJUMP


def test_qjump_level_just_below_line_rate_is_accepted() -> None:
    # n = 8, P = 256 B, R = 25 Gb/s (slowest NIC), eps = 4 us:
    # epoch = 2 x 8 x 256 x 8 bit / 25e9 + 4e-6 = 1.31072 us + 4 us = 5.31072 us.
    # f = 64: 64 x 2048 bit / 5.31072 us = 24.68 Gb/s <= 25 Gb/s.
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {7: 64.0}
    assert intent_problems(parse_intent(data)) == []


def test_qjump_level_above_line_rate() -> None:
    # Same epoch; f = 65: 65 x 2048 / 5.31072e-6 = 25.07 Gb/s > 25 Gb/s.
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {7: 65.0}
    problems = problems_of(data)
    assert_only_problem(problems, "fabric.qjump.factors.7", "25.07 Gb/s, above the slowest")
    assert "5.31 us" in problems[0].reason


def test_qjump_rate_uses_the_slowest_nic() -> None:
    # A 10 Gb/s host makes R = 10e9: epoch = 2 x 8 x 2048 / 10e9 + 4 us = 3.2768 + 4 = 7.2768 us
    # and f = 40 sends 40 x 2048 / 7.2768 us = 11.26 Gb/s > 10 Gb/s. (At 25 Gb/s it would fit.)
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {7: 40.0}
    data["hosts"][1]["nic_gbps"] = 10
    assert_only_problem(problems_of(data), "fabric.qjump.factors.7", "11.26 Gb/s")


def test_qjump_level_without_fabric_parameters() -> None:
    data = intent_data()
    del data["fabric"]["qjump"]
    assert_only_problem(problems_of(data), "service_classes[0].qjump_level", "needs fabric.qjump")


def test_qjump_level_without_a_factor() -> None:
    data = intent_data()
    data["service_classes"][0]["qjump_level"] = 6
    assert_only_problem(
        problems_of(data), "service_classes[0].qjump_level", "level 6 has no throughput factor"
    )


def test_qjump_level_needs_hosts() -> None:
    data = intent_data()
    data["hosts"] = []
    assert_only_problem(
        problems_of(data), "service_classes[0].qjump_level", "needs at least one host"
    )


def test_qjump_level_used_by_two_classes() -> None:
    data = intent_data()
    data["service_classes"][1]["qjump_level"] = 7
    assert_only_problem(
        problems_of(data), "service_classes[1].qjump_level", "QJUMP level 7 is already used"
    )


def test_qjump_n_smaller_than_the_declared_hosts() -> None:
    data = intent_data()
    data["fabric"]["qjump"]["hosts"] = 1
    assert_only_problem(problems_of(data), "fabric.qjump.hosts", "n = 1 is less than the 2 hosts")


def test_qjump_packet_larger_than_mtu() -> None:
    data = intent_data()
    data["fabric"]["qjump"]["packet_bytes"] = 1600
    # f = 1 at P = 1600: far below line rate, so only the MTU rule speaks.
    assert_only_problem(
        problems_of(data), "fabric.qjump.packet_bytes", "larger than the fabric MTU (1500 B)"
    )


# ---------------------------------------------------------------------------------------------
# ECN thresholds and buffers


def test_threshold_above_a_ports_own_buffer() -> None:
    # 100 Gb/s x 40 us x 1 = 12.5e9 B/s x 40e-6 s = 500 000 B, not below 400 000 B.
    data = intent_data()
    data["switches"][1]["ports"][1]["buffer_bytes"] = 400_000
    problems = problems_of(data)
    assert_only_problem(problems, "switches[1].ports[1].buffer_bytes", "= 500000 B is not below")
    assert "leaf2 Ethernet4" in problems[0].reason


def test_threshold_equal_to_the_default_buffer_is_reported_once_per_speed() -> None:
    # K at 100 Gb/s = 500 000 B (above) equals the default buffer: "below" fails. Both switches
    # have a 100 Gb/s port on the default; 25 Gb/s ports (K = 125 000 B) fit.
    data = intent_data()
    data["fabric"]["port_buffer_bytes"] = 500_000
    problems = problems_of(data)
    assert_only_problem(problems, "fabric.port_buffer_bytes", "leaf1 Ethernet4, leaf2 Ethernet4")
    assert "100 Gb/s" in problems[0].reason


def test_threshold_just_below_the_buffer_is_accepted() -> None:
    data = intent_data()
    data["fabric"]["port_buffer_bytes"] = 500_001
    assert intent_problems(parse_intent(data)) == []


def test_threshold_below_one_mtu() -> None:
    # 1 Gb/s x 40 us = 125e6 B/s x 40e-6 s = 5 000 B < 9000 B MTU.
    data = intent_data()
    data["fabric"]["mtu_bytes"] = 9000
    data["switches"][0]["ports"][0]["speed_gbps"] = 1
    problems = problems_of(data)
    assert_only_problem(problems, "fabric.base_rtt_us", "5000 B is below one MTU (9000 B)")
    assert "leaf1 Ethernet0" in problems[0].reason


def _ecn_class_index(data: dict[str, object]) -> int:
    classes = data["service_classes"]
    assert isinstance(classes, list)
    marking = [i for i, c in enumerate(classes) if c.get("ecn", "standard") not in ("off", "dynaq")]
    return marking[0]


def test_a_class_lambda_whose_k_fills_the_buffer() -> None:
    # The fabric's lambda 1 fits (500 000 B at 100 Gb/s < 2 000 000 B); a class's own lambda 4:
    # 12.5e9 B/s x 40e-6 s x 4 = 2 000 000 B, not below the 2 000 000 B default buffer.
    data = intent_data()
    data["fabric"]["port_buffer_bytes"] = 2_000_000
    i = _ecn_class_index(data)
    data["service_classes"][i]["ecn_lambda"] = 4.0
    assert_only_problem(
        problems_of(data), f"service_classes[{i}].ecn_lambda", "= 2000000 B is not below a"
    )
    data["service_classes"][i]["ecn_lambda"] = 3.9  # 1 950 000 B: fits
    assert intent_problems(parse_intent(data)) == []


def test_a_class_lambda_whose_k_is_below_one_mtu() -> None:
    # 25 Gb/s x 40 us x 0.001 = 3.125e9 B/s x 40e-6 s x 0.001 = 125 B < 1500 B.
    data = intent_data()
    i = _ecn_class_index(data)
    data["service_classes"][i]["ecn_lambda"] = 0.001
    assert_only_problem(
        problems_of(data), f"service_classes[{i}].ecn_lambda", "= 125 B is below one MTU"
    )


def test_thresholds_are_not_checked_when_no_queue_uses_ecn() -> None:
    data = intent_data()
    for service_class in data["service_classes"]:
        service_class["ecn"] = "off"
    data["fabric"]["port_buffer_bytes"] = 100_000  # below K at both speeds
    assert intent_problems(parse_intent(data)) == []


# ---------------------------------------------------------------------------------------------
# DWRR weights


def test_weights_on_any_scale_within_1_to_100_ratio_are_accepted() -> None:
    # 60 000 : 600 is exactly 100 : 1, the widest ratio 1..100 can hold.
    data = intent_data()
    data["service_classes"][2]["scheduling"]["weight"] = 60_000
    data["service_classes"][3]["scheduling"]["weight"] = 600
    assert intent_problems(parse_intent(data)) == []


def test_weight_ratio_beyond_100() -> None:
    # 60 000 : 500 = 120 : 1. Scaled so the largest is 100, the small one is 100 x 500 / 60 000
    # = 0.83, which rounds to 1: the queue would get 1/100 instead of 1/120.
    data = intent_data()
    data["service_classes"][2]["scheduling"]["weight"] = 60_000
    data["service_classes"][3]["scheduling"]["weight"] = 500
    problems = problems_of(data)
    assert_only_problem(problems, "service_classes[3].scheduling.weight", "1/120 of the largest")
    assert_has_problem(problems, "service_classes[3].scheduling.weight", "become 1:100")


def test_qjump_higher_level_with_larger_factor_is_refused() -> None:
    # Level 7 is served first; giving it f = 8 while level 5 has f = 4 would let the most
    # latency-sensitive level send more than a lower one (QJUMP, NSDI 2015 §3.2).
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {5: 4.0, 7: 8.0}
    assert_only_problem(problems_of(data), "fabric.qjump.factors.7", "exceeds 4 at lower level 5")


def test_qjump_factors_falling_with_level_are_accepted() -> None:
    data = intent_data()
    data["fabric"]["qjump"]["factors"] = {0: 16.0, 5: 4.0, 7: 1.0}
    assert intent_problems(parse_intent(data)) == []


def test_qjump_p_below_the_smallest_tcp_packet_is_refused_by_name() -> None:
    # A QJUMP class carrying TCP: the MSS clamp cannot hold packets below 14 + 40 + 20 + 48 B.
    data = intent_data()
    data["fabric"]["qjump"]["packet_bytes"] = 121
    for service_class in data["service_classes"]:
        if service_class.get("qjump_level") is not None:
            service_class["hosts_match"] = {"protocol": "tcp", "dports": [7000]}
    assert_has_problem(problems_of(data), "fabric.qjump.packet_bytes", "QjumpPacketTooSmall")
    data["fabric"]["qjump"]["packet_bytes"] = 122
    problems = intent_problems(parse_intent(data))
    assert not [p for p in problems if "QjumpPacketTooSmall" in p.reason]


def test_a_sliding_window_refuses_a_level_too_small_to_hold_it_by_name() -> None:
    # every packet is charged as P: f = 1 is one packet per epoch, f = 0.5 could send nothing.
    data = intent_data()
    data["fabric"]["qjump"]["window"] = "sliding"
    data["fabric"]["qjump"]["factors"] = {7: 0.5}
    assert_has_problem(problems_of(data), "fabric.qjump.factors.7", "QjumpWindowTooSmall")
    data["fabric"]["qjump"]["factors"] = {7: 1.0}
    assert intent_problems(parse_intent(data)) == []
    data["fabric"]["qjump"]["window"] = "aligned"
    data["fabric"]["qjump"]["factors"] = {7: 1.0}
    assert intent_problems(parse_intent(data)) == []
