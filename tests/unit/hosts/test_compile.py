"""Rendering intent into the Ansible inventory and host variables of docs/hosts.md."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from controller.errors import IntentInvalid
from controller.hosts.compile import compile_hosts
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.qos.pias import load_workload
from tests.unit.intent.helpers import assert_has_problem, problems_of
from tests.unit.intent.intents import intent_data
from tests.unit.intent.test_lossless_intent import lossless_data

CONTROL_MATCH = {"protocol": "udp", "dports": [5405]}
RPC_MATCH = {"protocol": "tcp", "dports": [443, "8000-8100"], "uid": 1001}


def marked_data() -> dict[str, Any]:
    """intent_data() with host matches on the QJUMP class (control) and the PIAS class (rpc)."""
    data = intent_data()
    data["service_classes"][0]["hosts_match"] = CONTROL_MATCH
    data["service_classes"][1]["hosts_match"] = RPC_MATCH
    return data


def render(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    hosts: dict[str, dict[str, Any]] = compile_hosts(parse_intent(data)).inventory["all"]["hosts"]
    return hosts


def test_every_host_names_its_interpreter_and_how_to_log_in() -> None:
    data = marked_data()
    data["hosts"][1]["ssh"] = {
        "user": "deploy",
        "port": 2222,
        "key_ref": "file:/etc/sluice/id_ed25519",
        "become": True,
    }
    data["hosts"][1]["python"] = "/opt/py/bin/python3"
    hosts = render(data)
    assert hosts["host1"]["ansible_host"] == "10.0.0.1"
    assert hosts["host1"]["ansible_user"] == "root"
    assert hosts["host1"]["ansible_port"] == 22
    assert hosts["host1"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert "ansible_ssh_private_key_file" not in hosts["host1"]
    assert "ansible_become" not in hosts["host1"]
    assert hosts["host2"]["ansible_user"] == "deploy"
    assert hosts["host2"]["ansible_port"] == 2222
    assert hosts["host2"]["ansible_ssh_private_key_file"] == "/etc/sluice/id_ed25519"
    assert hosts["host2"]["ansible_become"] is True
    assert hosts["host2"]["ansible_python_interpreter"] == "/opt/py/bin/python3"


def test_group_vars_are_the_control_nodes_and_the_yaml_round_trips() -> None:
    rendered = compile_hosts(
        parse_intent(marked_data()), group_vars={"ansible_ssh_common_args": "-o X=1"}
    )
    assert rendered.inventory["all"]["vars"] == {"ansible_ssh_common_args": "-o X=1"}
    assert yaml.safe_load(rendered.yaml()) == rendered.inventory
    assert rendered.hosts == ["host1", "host2"]


def test_qjump_levels_follow_the_epoch_of_the_slowest_nic() -> None:
    data = marked_data()
    data["hosts"][0]["nic_gbps"] = 10
    hosts = render(data)
    # n = 8, P = 256 B, R = 10 Gb/s (the slowest NIC), eps = 4 us:
    # epoch = 2 x 8 x 2048 bit / 10e9 + 4e-6 = 3.2768 us + 4 us = 7.2768 us;
    # level 7, f = 1: 2048 bit / 7.2768 us = 281 442 392.2 bit/s, floored.
    for name, line_rate in (("host1", 10 * 10**9), ("host2", 25 * 10**9)):
        qjump = hosts[name]["sluice_qjump"]
        assert qjump["device"] == "eth0"
        assert qjump["line_rate_bps"] == line_rate
        assert qjump["default_level"] == 0
        level0, level7 = qjump["levels"]
        assert level7 == {"level": 7, "rate_bps": 281_442_392, "burst_bytes": 256}
        # Level 0 has no factor: unmarked traffic at the host's line rate, with tc's default
        # burst rate / HZ + MTU = line / 8 / 1000 + 1500 B.
        assert level0 == {
            "level": 0,
            "rate_bps": line_rate,
            "burst_bytes": line_rate // 8000 + 1500,
        }


def test_a_declared_level_zero_keeps_its_factor() -> None:
    data = marked_data()
    data["fabric"]["qjump"]["factors"] = {0: 8.0, 7: 1.0}
    levels = render(data)["host1"]["sluice_qjump"]["levels"]
    # R = 25 Gb/s: epoch = 32768 bit / 25e9 + 4e-6 = 1.31072 us + 4 us = 5.31072 us;
    # level 0, f = 8: 8 x 2048 bit / 5.31072 us = 3 085 080 742.3 bit/s; f x P = 2048 B.
    assert levels[0] == {"level": 0, "rate_bps": 3_085_080_742, "burst_bytes": 2048}
    assert [level["level"] for level in levels] == [0, 7]


def sliding_level7(**qjump: Any) -> dict[str, Any]:
    """Level 7 (f = 4, beside level 0 at f = 8) as host1 gets it under the sliding window."""
    data = marked_data()
    data["fabric"]["qjump"].update(factors={0: 8.0, 7: 4.0}, window="sliding", **qjump)
    level7: dict[str, Any] = render(data)["host1"]["sluice_qjump"]["levels"][1]
    return level7


def test_a_sliding_window_renders_a_one_packet_bucket_and_an_epoch_of_queue() -> None:
    # epoch 5.31072 us (above); level 7, f = 4: k = 4 packets of P = 256 B, 1024 B; margin
    # ceil(1024 x 1.024e-6 / 5.31072e-6) + 1 = ceil(197.45) + 1 = 199 B; r x E = 825 B ->
    # 825 x 8 / 5.31072 us = 1 242 769 342.01 bit/s; queue r x 0.999 x E / 8 = 824.17 B =
    # 3.22 packets -> a queue of 3 packets; every packet charged as P (tbf mpu).
    assert sliding_level7() == {
        "level": 7,
        "rate_bps": 1_242_769_342,
        "burst_bytes": 256,
        "queue_packets": 3,
        "mpu_bytes": 256,
    }


def test_a_sliding_window_refills_over_the_epoch_plus_the_release_jitter() -> None:
    # as above, r x (E + J) = 825 B over 5.31072 + 1 us: 825 x 8 / 6.31072 us =
    # 1 045 839 460.5 bit/s; queue 1 045 839 460 x 0.999 x 5.31072 us / 8 = 693.6 B = 2.71
    # packets -> 2.
    assert sliding_level7(release_jitter_us=1.0) == {
        "level": 7,
        "rate_bps": 1_045_839_460,
        "burst_bytes": 256,
        "queue_packets": 2,
        "mpu_bytes": 256,
    }


def test_no_qjump_in_the_fabric_leaves_the_qdiscs_alone() -> None:
    data = marked_data()
    del data["fabric"]["qjump"]
    del data["service_classes"][0]["qjump_level"]
    assert "sluice_qjump" not in render(data)["host1"]


def test_dscp_marks_only_classes_with_a_match_in_intent_order() -> None:
    dscp = render(marked_data())["host1"]["sluice_dscp"]
    # control: DSCP 48, QJUMP level 7 -> skb->priority 0x10010 + 7 = 0x10017 = 65559.
    assert dscp == [
        {
            "name": "control",
            "dscp": 48,
            "priority": 65559,
            "max_packet_bytes": 256,
            "match": CONTROL_MATCH,
        },
        {"name": "rpc", "dscp": 46, "match": RPC_MATCH},
    ]


def test_no_match_anywhere_renders_empty_lists_so_the_tables_are_removed() -> None:
    hosts = render(intent_data())
    assert hosts["host1"]["sluice_dscp"] == []
    assert hosts["host1"]["sluice_pias"] == []


def test_pias_thresholds_split_the_load_evenly_between_the_stages() -> None:
    (pias,) = render(marked_data())["host2"]["sluice_pias"]
    assert pias["name"] == "rpc"
    assert pias["dscp"] == [46, 34]  # the class's first DSCP, then the demotion stage's
    assert pias["match"] == RPC_MATCH
    (threshold,) = pias["thresholds_bytes"]
    # Two queues at load 0.6: sigma_1 = 1 - (1 - 0.6)^(1/2) = 1 - 0.632456 = 0.367544, so the
    # threshold is where an average flow has sent sigma_1 / rho = 0.61257 of its bytes.
    cdf = load_workload("websearch")
    assert cdf.truncated_mean(threshold) / cdf.mean_bytes() == pytest.approx(0.61257, abs=1e-4)


def test_pias_thresholds_given_in_the_intent_are_the_ones_the_hosts_run() -> None:
    data = marked_data()
    rpc = next(c for c in data["service_classes"] if c["name"] == "rpc")
    rpc["pias"]["thresholds_bytes"] = [610_575]  # what the tuner writes on drift
    (pias,) = render(data)["host2"]["sluice_pias"]
    assert pias["thresholds_bytes"] == [610_575]


def test_pias_thresholds_must_fit_the_stages_and_increase() -> None:
    data = intent_data()
    rpc = next(c for c in data["service_classes"] if c["name"] == "rpc")
    rpc["pias"]["demotions"].append({"dscp": 26, "queue": 4})
    for given, why in (([5_000], "one per demotion"), ([9_000, 9_000], "must increase")):
        rpc["pias"]["thresholds_bytes"] = given
        with pytest.raises(IntentInvalid, match=why):
            parse_intent(data)


def test_tcp_ecn_asks_for_ecn_only_when_a_class_marks_it() -> None:
    assert render(marked_data())["host1"]["sluice_ecn"] == {"tcp_ecn": 1}
    data = marked_data()
    for service_class in data["service_classes"]:
        service_class["ecn"] = "off"
    assert render(data)["host1"]["sluice_ecn"] == {"tcp_ecn": 2}
    data["fabric"]["host_transport"] = {"tcp_ecn": 0, "congestion_control": "cubic"}
    assert render(data)["host1"]["sluice_ecn"] == {"tcp_ecn": 0, "congestion_control": "cubic"}


def _unvalidated(data: dict[str, Any]) -> Intent:
    """Field-level checks only: the cross-object rules have not run on this object."""
    return Intent.model_validate(data)


def test_a_level_above_line_rate_is_refused_before_anything_is_rendered() -> None:
    data = marked_data()
    # f = 200 at n = 8: 200 x 2048 bit / 5.31072 us = 77 Gb/s, above the 25 Gb/s NICs.
    data["fabric"]["qjump"]["factors"] = {7: 200.0}
    with pytest.raises(IntentInvalid) as caught:
        compile_hosts(_unvalidated(data))
    assert_has_problem(
        caught.value.problems, "fabric.qjump.factors.7", "above the slowest host NIC"
    )


def test_a_dscp_clash_is_refused_before_anything_is_rendered() -> None:
    data = marked_data()
    data["service_classes"][2]["dscp"] = [46]  # rpc already uses 46
    with pytest.raises(IntentInvalid) as caught:
        compile_hosts(_unvalidated(data))
    assert_has_problem(caught.value.problems, "service_classes[2].dscp[0]", "already used")


@pytest.mark.parametrize(
    ("change", "path", "fragment"),
    [
        (lambda d: d["hosts"][0].update(ssh={"user": "deploy"}), "hosts[0].ssh.become", "root"),
        (lambda d: d["hosts"][0].update(name="runs"), "hosts[0].name", "reserved"),
        (lambda d: d["hosts"][1].update(name="all"), "hosts[1].name", "every host"),
        (
            lambda d: d["service_classes"][2].update(hosts_match=CONTROL_MATCH),
            "service_classes[2].hosts_match",
            "first class wins",
        ),
        (
            lambda d: d["service_classes"][2].update(hosts_match={"dports": [80]}),
            "service_classes[2].hosts_match.dports",
            "need a protocol",
        ),
        (
            lambda d: d["service_classes"][2].update(
                hosts_match={"protocol": "tcp", "dports": ["90-80"]}
            ),
            "service_classes[2].hosts_match.dports",
            "low < high",
        ),
        (
            lambda d: d["service_classes"][2].update(hosts_match={"cgroup": "a/../b"}),
            "service_classes[2].hosts_match.cgroup",
            "..",
        ),
        (
            lambda d: d["hosts"][0].update(ssh={"key_ref": "-----BEGIN OPENSSH PRIVATE KEY"}),
            "hosts[0].ssh.key_ref",
            "file:/",
        ),
        (lambda d: d["hosts"][0].update(device="eth0; reboot"), "hosts[0].device", "pattern"),
        (lambda d: d["hosts"][0].update(python="python3"), "hosts[0].python", "pattern"),
    ],
)
def test_host_fields_are_validated(change: Any, path: str, fragment: str) -> None:
    data = marked_data()
    change(data)
    assert_has_problem(problems_of(data), path, fragment)


def test_a_refused_key_reference_is_not_repeated_in_the_problem() -> None:
    data = marked_data()
    data["hosts"][0]["ssh"] = {"key_ref": "AAAAC3NzaC1lZDI1NTE5secretmaterial"}
    problems = problems_of(data)
    assert all("secretmaterial" not in str(problem) for problem in problems)


def test_hdcq_class_renders_one_threshold_two_stages_and_the_ack_dscp() -> None:
    data = intent_data()
    data["service_classes"].append(
        {
            "name": "web",
            "dscp": [20],
            "queue": 4,
            "scheduling": {"type": "STRICT"},
            "ecn": "standard",
            "hdcq": {
                "flow_type_thresh_bytes": 100_000,
                "ack": {"dscp": 44, "queue": 5},
                "long": {"dscp": 14, "queue": 2},
            },
            "hosts_match": {"protocol": "tcp", "dports": [8080]},
        }
    )
    for service_class in data["service_classes"]:
        if service_class["name"] == "rpc":  # frees queue 5 and keeps the order ack > q > long
            service_class["pias"]["demotions"] = [{"dscp": 34, "queue": 0}]
    rendered = compile_hosts(parse_intent(data))
    pias = rendered.host_vars["host1"]["sluice_pias"]
    assert {
        "name": "web",
        "thresholds_bytes": [100_000],
        "dscp": [20, 14],
        "ack_dscp": 44,
        "match": {"protocol": "tcp", "dports": [8080]},
    } in pias


def test_a_lossless_class_gives_each_host_its_dscp_priority_and_dcqcn() -> None:
    data = lossless_data()
    data["hosts"][1]["device"] = "ens1f0"
    hosts = render(data)
    for name, device in (("host1", "eth0"), ("host2", "ens1f0")):
        assert hosts[name]["sluice_lossless"] == {
            "device": device,
            "trust": "dscp",
            "classes": [{"name": "storage", "dscp": [10, 12], "pfc_priority": 3, "dcqcn": True}],
        }


def test_the_fabrics_cnp_priority_goes_to_the_hosts() -> None:
    data = lossless_data()
    data["fabric"]["lossless"]["cnp"] = {}  # RoCE's usual: DSCP 48 (control's), priority 6
    assert render(data)["host1"]["sluice_lossless"]["cnp"] == {"dscp": 48, "priority": 6}
    assert "cnp" not in render(lossless_data())["host1"]["sluice_lossless"]


def test_a_lossless_class_that_marks_no_ecn_gets_no_dcqcn_on_the_hosts() -> None:
    data = lossless_data()
    data["service_classes"][2]["ecn"] = "off"
    (entry,) = render(data)["host1"]["sluice_lossless"]["classes"]
    assert (entry["pfc_priority"], entry["dcqcn"]) == (3, False)


def test_without_a_lossless_class_the_hosts_get_an_empty_list_that_gives_back() -> None:
    # rendered all the same, so a class dropped from the intent is taken back on the hosts
    assert render(marked_data())["host1"]["sluice_lossless"] == {
        "device": "eth0",
        "trust": "dscp",
        "classes": [],
    }
