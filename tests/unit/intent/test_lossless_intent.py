"""A lossless class in the intent: what it needs, and its refusal when headroom does not fit
or Kmax would sit above the XOFF point (issue 27 item 1, "Done when").

The platform is a Spectrum-2-like ASIC (cell 144 B, pipeline latency 18 KB, MAC/PHY 0.8 KB,
the values sonic-buildimage's asic_table.j2 gives MELLANOX-SPECTRUM-2), with the peer's
response from IEEE 802.3's pause quanta. Worked by hand (docs/lossless.md):

* occupancy: 144 B cells > 128, so 144 / 64 = 2.25 at 100 % small packets;
* 100 Gb/s, 5 m, MTU 1500: cable 2 x 5 / 1.98e8 s x 1.25e10 B/s = 631.3 B, peer 394 x 64 =
  25 216 B, propagation 1500 + 631.3 + 819.2 + 25 216 = 28 166.5 B; xoff = 1024 + 2.25 x
  28 166.5 = 64 398.6 -> 64 512 B; xon 18 432 B; size 82 944 B. One lossless group on a
  2 000 000 B buffer leaves 1 917 056 B, and alpha 1 puts XOFF at half of it: 958 528 B.
* 25 Gb/s, same: cable 157.8 B, peer 80 x 64 = 5120 B, propagation 7597.0 B; xoff = 1024 +
  17 093.3 -> 18 432 B; size 36 864 B; XOFF point (2 000 000 - 36 864) / 2 = 981 568 B.
* 100 Gb/s with MTU 9216 on the port: propagation 35 882.5 B, xoff 81 759.6 -> 81 920 B,
  size 100 352 B, XOFF point 949 824 B.
"""

from __future__ import annotations

from typing import Any

from controller.intent.loader import parse_intent
from controller.intent.validate import intent_problems

from .helpers import assert_has_problem, assert_only_problem, problems_of
from .intents import intent_data

SPECTRUM_2 = {"cell_bytes": 144, "pipeline_latency_bytes": 18432, "mac_phy_delay_bytes": 819.2}
KMAX_PATH = "service_classes[2].lossless.kmax_bytes"


def lossless_data(**lossless: Any) -> dict[str, Any]:
    """The sample intent with its ``storage`` class (queue 3) lossless on priority 3."""
    data = intent_data()
    data["fabric"]["lossless"] = dict(SPECTRUM_2)
    storage = data["service_classes"][2]
    storage["ecn"] = "standard"
    storage["lossless"] = {"pfc_priority": 3, **lossless}
    return data


def test_a_lossless_class_with_the_papers_thresholds_is_accepted() -> None:
    intent = parse_intent(lossless_data())
    lossless = intent.service_classes[2].lossless
    assert lossless is not None
    assert (lossless.kmin_bytes, lossless.kmax_bytes, lossless.pmax_pct) == (5_000, 200_000, 1)
    assert intent_problems(intent) == []


def test_kmax_above_the_xoff_point_is_refused_naming_port_priority_and_numbers() -> None:
    # 970 000 B is above the 100 Gb/s ports' XOFF point (958 528 B) and below the 25 Gb/s
    # ports' (981 568 B): one problem, for the 100 Gb/s ports only.
    problems = problems_of(lossless_data(kmax_bytes=970_000))
    assert_only_problem(problems, KMAX_PATH, "KmaxAboveXoff: leaf1 Ethernet4, leaf2 Ethernet4")
    assert "priority 3: Kmax 970000 B is not below the XOFF point 958528 B" in problems[0].reason


def test_kmax_just_below_the_xoff_point_is_accepted() -> None:
    assert intent_problems(parse_intent(lossless_data(kmax_bytes=958_527))) == []


def test_the_ports_mtu_moves_the_xoff_point() -> None:
    # 955 000 B is below the point at MTU 1500 (958 528 B), above it at MTU 9216 (949 824 B).
    data = lossless_data(kmax_bytes=955_000)
    assert intent_problems(parse_intent(data)) == []
    data["switches"][0]["ports"][1]["mtu_bytes"] = 9216
    problems = problems_of(data)
    assert_only_problem(problems, KMAX_PATH, "leaf1 Ethernet4 priority 3")
    assert "XOFF point 949824 B" in problems[0].reason


def test_a_queue_that_does_not_mark_has_no_kmax_to_hold() -> None:
    data = lossless_data(kmax_bytes=970_000)
    data["service_classes"][2]["ecn"] = "off"
    assert intent_problems(parse_intent(data)) == []


def test_headroom_that_does_not_fit_the_port_buffer_is_refused() -> None:
    # 10 km at 100 Gb/s: 2 x 631 313 B on the cable alone, x 2.25: xoff 2 904 064 B, size
    # 2 922 496 B, past the 2 000 000 B buffer.
    data = lossless_data()
    data["switches"][0]["ports"][1]["cable_length_m"] = 10_000
    problems = problems_of(data)
    assert_only_problem(problems, "switches[0].ports[1].buffer_bytes", "HeadroomDoesNotFit")
    assert "leaf1 Ethernet4: the lossless priorities' headroom, 2922496 B" in problems[0].reason
    assert "2000000 B port buffer" in problems[0].reason


def test_the_fabric_cable_length_is_the_default() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["cable_length_m"] = 10_000
    problems = problems_of(data)
    # Every 100 Gb/s port is alike, named together. The 25 Gb/s ones fit: at 10 km, 2 x
    # 157 828 B on the cable + 7 439 B, x 2.25, + 1024 -> xoff 728 064 B, size 746 496 B, and
    # XOFF at (2 000 000 - 746 496) / 2 = 626 752 B, above Kmax 200 000 B.
    assert_only_problem(problems, "switches[0].ports[1].buffer_bytes", "HeadroomDoesNotFit")
    assert "leaf1 Ethernet4, leaf2 Ethernet4:" in problems[0].reason


def test_a_lossless_class_needs_the_platform() -> None:
    data = lossless_data()
    del data["fabric"]["lossless"]
    assert_only_problem(problems_of(data), "service_classes[2].lossless", "fabric.lossless")


def test_the_roce_cnp_convention_on_a_lossy_strict_class_is_accepted() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["cnp"] = {}  # DSCP 48, priority 6: the control class's DSCP
    intent = parse_intent(data)
    assert intent.fabric.lossless is not None
    cnp = intent.fabric.lossless.cnp
    assert cnp is not None
    assert (cnp.dscp, cnp.priority) == (48, 6)
    assert intent_problems(intent) == []


def test_a_cnp_dscp_no_class_carries_is_refused() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["cnp"] = {"dscp": 40}
    problems = problems_of(data)
    assert_only_problem(problems, "fabric.lossless.cnp.dscp", "no service class carries DSCP 40")


def test_a_cnp_on_the_lossless_class_or_its_priority_is_refused() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["cnp"] = {"dscp": 10, "priority": 3}
    problems = problems_of(data)
    assert_has_problem(problems, "fabric.lossless.cnp.dscp", "lossless class storage's")
    assert_has_problem(problems, "fabric.lossless.cnp.priority", "storage's PFC priority")
    assert len(problems) == 2


def test_two_lossless_classes_on_one_pfc_priority_are_refused() -> None:
    data = lossless_data()
    bulk = data["service_classes"][3]
    bulk["ecn"] = "standard"
    bulk["lossless"] = {"pfc_priority": 3}
    problems = problems_of(data)
    assert_only_problem(
        problems,
        "service_classes[3].lossless.pfc_priority",
        "PFC priority 3 is already used at service_classes[2].lossless.pfc_priority",
    )


def test_two_lossless_priorities_share_the_port_and_move_xoff_down() -> None:
    # Two groups: 2 000 000 - 2 x 82 944 = 1 834 112 B shared, a third each: 611 370 B at
    # 100 Gb/s. Kmax 700 000 B fits one group (958 528 B) but not two.
    data = lossless_data(kmax_bytes=700_000)
    assert intent_problems(parse_intent(data)) == []
    bulk = data["service_classes"][3]
    bulk["ecn"] = "standard"
    bulk["lossless"] = {"pfc_priority": 4}
    problems = problems_of(data)
    assert_has_problem(problems, KMAX_PATH, "XOFF point 611370 B")


def test_a_lossless_class_marks_with_dcqcn_or_not_at_all() -> None:
    data = lossless_data()
    data["service_classes"][2]["ecn"] = "mqecn"
    assert_only_problem(problems_of(data), "service_classes[2].ecn", "not mqecn")


def test_kmin_must_be_below_kmax() -> None:
    problems = problems_of(lossless_data(kmin_bytes=200_000))
    assert_only_problem(problems, "service_classes[2].lossless", "must be below kmax_bytes")
