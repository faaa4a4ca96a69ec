"""Intent -> netsim run description, worked by hand on the example intent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.hosts.compile import pias_vars
from controller.intent.loader import load_intent_file
from controller.intent.models import (
    EcnMode,
    Hdcq,
    HostsMatch,
    Intent,
    PiasStage,
    Scheduling,
    SchedulingType,
)
from controller.qos.qjump import QjumpWindow
from controller.twin.results import compare, per_class, per_hop
from controller.twin.translate import Request, TwinInputInvalid, translate

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


@pytest.fixture(scope="module")
def intent() -> Intent:
    return load_intent_file(EXAMPLE)


def _with(intent: Intent, **fabric: Any) -> Intent:
    return intent.model_copy(update={"fabric": intent.fabric.model_copy(update=fabric)})


def _mqecn_as(intent: Intent, mode: EcnMode) -> Intent:
    """The example with its MQ-ECN classes on ``mode`` instead."""
    classes = tuple(
        c.model_copy(update={"ecn": mode}) if c.ecn is EcnMode.MQECN else c
        for c in intent.service_classes
    )
    return intent.model_copy(update={"service_classes": classes})


def test_fabric_shape_speeds_and_delays(intent: Intent) -> None:
    topo = translate(intent, Request()).config["topology"]
    # 2 leaves, 2 spines, 4 hosts -> 2 per leaf; hosts 25 Gb/s, spine ports 100 Gb/s; the
    # 40 us base RTT over 8 link crossings -> 5 us per link.
    assert (topo["leaves"], topo["spines"], topo["hosts_per_leaf"]) == (2, 2, 2)
    assert (topo["host_link_bps"], topo["fabric_link_bps"]) == (25e9, 100e9)
    assert topo["host_link_delay_ns"] == topo["fabric_link_delay_ns"] == 5_000.0


def test_queues_weights_and_thresholds_are_the_compiled_ones(intent: Intent) -> None:
    qos = translate(intent, Request(per_packet=True)).config["qos"]
    sched = [q["sched"] for q in qos["queues"]]
    # control 7, rpc 6 and its PIAS stage 5 strict; storage 3, analytics 2, best-effort 1 by
    # weight 50:30:20 (already on SONiC's 1..100 scale); queues 0 and 4 carry nothing.
    assert sched[7] == sched[6] == sched[5] == "strict"
    assert [sched[3], sched[2], sched[1]] == [{"dwrr": 50}, {"dwrr": 30}, {"dwrr": 20}]
    # K = C x RTT x lambda: 25 Gb/s x 40 us / 8 = 125 000 B at the host ports, 500 000 B at
    # 100 Gb/s. best-effort is per-queue-minimum: 20/100 of K. control is ECN off.
    down, up, spine = (qos["ports"][k] for k in ("leaf_down", "leaf_up", "spine"))
    assert down["ecn_k_bytes"][6] == 125_000
    assert up["ecn_k_bytes"][6] == 500_000
    assert down["ecn_k_bytes"][1] == 25_000
    assert spine["ecn_k_bytes"][1] == 100_000
    assert down["ecn_k_bytes"][7] is None
    assert (down["port_buffer_bytes"], up["port_buffer_bytes"]) == (2_000_000, 2_000_000)
    assert spine["port_buffer_bytes"] == 4_000_000  # the spines' own buffer_bytes
    # storage and analytics are MQ-ECN: the port runs MQ-ECN with each kind's K.
    assert qos["aqm"] == {"mqecn": {"k_std_bytes": 125_000.0}}
    assert down["k_std_bytes"] == 125_000.0
    assert spine["k_std_bytes"] == 500_000.0


def test_marking_follows_the_dscp_map_and_pias(intent: Intent) -> None:
    tagging = translate(intent, Request()).config["qos"]["tagging"]["dscp"]
    assert dict(map(tuple, tagging["dscp_to_queue"])) == {
        0: 1,
        10: 3,
        12: 3,
        18: 2,
        20: 2,
        34: 5,
        46: 6,
        48: 7,
        56: 7,
    }
    control, rpc, storage = tagging["classes"][:3]
    assert (control["dscp"], control["pias"]) == (48, None)
    assert storage == {"dscp": 10, "pias": None}
    # rpc's PIAS stages: the thresholds the hosts get, stage 1 on DSCP 34.
    (hosts_pias,) = pias_vars(intent)
    assert rpc == {
        "dscp": 46,
        "pias": {"thresholds_bytes": hosts_pias["thresholds_bytes"], "dscp": [34]},
    }


def test_traffic_splits_the_load_and_flows_by_class(intent: Intent) -> None:
    parts = translate(intent, Request(load=0.6, flows=400)).config["traffic"]
    assert [(p["class"], p["flows"]) for p in parts] == [(c, 80) for c in range(5)]
    assert all(p["load"] == pytest.approx(0.12) for p in parts)
    mixed = translate(intent, Request(flows=400, mix=(("rpc", 3.0), ("storage", 1.0))))
    parts = mixed.config["traffic"]
    assert [(p["class"], p["flows"], p["load"]) for p in parts] == [
        (1, 300, pytest.approx(0.45)),
        (2, 100, pytest.approx(0.15)),
    ]


def test_what_netsim_cannot_run_is_named(intent: Intent) -> None:
    notes = " | ".join(translate(intent, Request(per_packet=True)).not_modelled)
    assert "QJUMP token buckets shape" in notes
    assert "P = 256 B" in notes
    assert "mqecn is per port" in notes
    assert "per-queue-minimum" in notes
    assert "MTU 9100" in notes
    assert "cubic" in notes
    hdcq = _mqecn_as(intent, EcnMode.HDCQ)
    # HDCQ reads the WRED/ECN queue counters, which the example's platform does not publish:
    # a switch's agent refuses the orders and holds the queues at their fallback, and so
    # does the twin. Where the platform publishes them, the agent runs.
    twin = translate(hdcq, Request())
    assert twin.config["qos"]["aqm"] == "per_queue"
    assert twin.config["qos"]["agent"]["global"]["algorithm"] == "static"
    assert any("WRED_ECN_QUEUE" in n and "refuses" in n for n in twin.not_modelled)
    counters = hdcq.fabric.counters.model_copy(update={"wred_ecn_queue": True})
    twin = translate(_with(hdcq, counters=counters), Request())
    assert twin.config["qos"]["agent"]["global"]["algorithm"] == "hdcq"
    assert any("hdcq runs as the deployed qos-agent's loop" in n for n in twin.not_modelled)
    # Per packet, HDCQ's Algorithm 2 needs a class with HDCQ's three queues; without one the
    # twin holds them at the static start value and says so.
    twin = translate(hdcq, Request(per_packet=True))
    assert twin.config["qos"]["aqm"] == "per_queue"
    assert any("no class has HDCQ's queues" in n for n in twin.not_modelled)


def test_a_class_lambda_scales_its_queues_mqecn_threshold(intent: Intent) -> None:
    queues = translate(intent, Request()).config["qos"]["queues"]
    assert not any("ecn_lambda_scale" in q for q in queues)
    mqecn = next(c for c in intent.service_classes if c.ecn is EcnMode.MQECN)
    own = intent.model_copy(
        update={
            "service_classes": tuple(
                c.model_copy(update={"ecn_lambda": 0.5}) if c.name == mqecn.name else c
                for c in intent.service_classes
            )
        }
    )
    twin = translate(own, Request())
    scaled = {
        i: q["ecn_lambda_scale"]
        for i, q in enumerate(twin.config["qos"]["queues"])
        if "ecn_lambda_scale" in q
    }
    # the class's queue only, at its lambda over the fabric's
    assert scaled == {mqecn.queue: 0.5 / intent.fabric.ecn_lambda}
    assert not any("ecn_lambda" in n for n in twin.not_modelled)


def test_hosts_get_the_qjump_buckets_the_host_compiler_plans(intent: Intent) -> None:
    # Example intent: n = 16, P = 256 B, eps = 4 us, f_7 = 1, hosts at 25 Gb/s. Epoch
    # 2 x 16 x 256 x 8 / 25e9 + 4e-6 = 6.62144 us, so level 7 may send 256 B per epoch:
    # floor(2048 / 6.62144e-6) = 309 298 279 bit/s. Level 0 has no factor: the unbounded
    # level at the line rate, burst rate / HZ + MTU = 3 125 000 + 9100 B.
    # Level 7 is bounded: tbf mtu P and, window aligned, a queue of max(burst, P) = 256 B;
    # level 0 is HTB alone.
    qjump = translate(intent, Request()).config["qos"]["qjump"]
    assert qjump["levels"] == [
        {"level": 0, "rate_bps": 25e9, "burst_bytes": 3_134_100},
        {
            "level": 7,
            "rate_bps": 309_298_279.0,
            "burst_bytes": 256,
            "mtu_bytes": 256,
            "limit_bytes": 256,
        },
    ]
    # control is marked by the hosts at level 7; the rest ride the default level 0.
    assert qjump["class_levels"] == [7, None, None, None, None]
    assert translate(_with(intent, qjump=None), Request()).config["qos"]["qjump"] is None


def test_a_sliding_window_level_gets_its_sliding_bucket_and_queue(intent: Intent) -> None:
    # f_7 = 4, window sliding (docs/algorithms.md §5.1): k = 4 packets of P = 256 B, 1024 B;
    # margin ceil(1024 x 1.024 / 6.62144) + 1 = 160 B, r x E = 864 B, so r = floor(864 x 8 /
    # 6.62144e-6) = 1 043 881 693 bit/s and the queue floor(r x 0.999 x E / 8 / P) = 3
    # packets = 768 B. netsim charges a packet its length: the mpu is named not modelled.
    assert intent.fabric.qjump is not None
    sliding = intent.fabric.qjump.model_copy(
        update={"factors": {7: 4.0}, "window": QjumpWindow.SLIDING}
    )
    qjump = translate(_with(intent, qjump=sliding), Request()).config["qos"]["qjump"]
    assert qjump["levels"][1] == {
        "level": 7,
        "rate_bps": 1_043_881_693.0,
        "burst_bytes": 256,
        "mtu_bytes": 256,
        "limit_bytes": 768,
    }
    notes = translate(_with(intent, qjump=sliding), Request()).not_modelled
    assert any("mpu" in note for note in notes)


def test_dctcp_hosts_run_dctcp(intent: Intent) -> None:
    transport = intent.fabric.host_transport.model_copy(update={"congestion_control": "dctcp"})
    twin = translate(_with(intent, host_transport=transport), Request())
    assert twin.config["tcp"] == {"cc": "dctcp"}
    assert not any("cubic" in n for n in twin.not_modelled)


@pytest.mark.parametrize(
    "request_",
    [
        Request(workload="video"),
        Request(load=1.0),
        Request(flows=0),
        Request(mix=(("nosuch", 1.0),)),
    ],
)
def test_bad_requests_are_refused(intent: Intent, request_: Request) -> None:
    with pytest.raises(TwinInputInvalid):
        translate(intent, request_)


def test_results_name_classes_and_compare_signs() -> None:
    stats = {
        "flows": 2,
        "mean_us": 100.0,
        "p99_us": 300.0,
        "mean_slowdown": 2.0,
        "p99_slowdown": 4.0,
    }
    summary = {"classes": [{"name": "class 1", **stats}], "buckets": []}
    (row,) = per_class(summary, ("control", "rpc"))
    assert row["name"] == "rpc"
    faster = {"classes": [{**row, "mean_us": 75.0}], "buckets": []}
    (delta,) = compare({"classes": [row], "buckets": []}, faster)["classes"]
    assert (delta["mean_us"], delta["mean_us_pct"]) == (-25.0, -25.0)


def test_per_hop_rows_name_their_class() -> None:
    figures = {"packets": 10, "mean_us": 1.5, "p99_us": 4.0, "max_us": 4.2}
    summary = {
        "hops": {
            "by_hop": [{"hop": "leaf_down", **figures}],
            "by_class": [{"hop": "leaf_down", "class": 1, **figures}],
            "by_port": [{"hop": "leaf_down", "switch": 0, "port": 2, **figures}],
        }
    }
    queueing = per_hop(summary, ("control", "rpc"))
    assert queueing["positions"] == [{"hop": "leaf_down", **figures}]
    assert queueing["classes"] == [{"name": "rpc", "hop": "leaf_down", **figures}]
    assert per_hop({}, ("control",)) == {"positions": [], "classes": []}


def test_the_agent_runs_on_the_orders_the_controller_compiles(intent: Intent) -> None:
    # What a switch runs is the twin's default; the papers' per-packet models on request.
    qos = translate(intent, Request()).config["qos"]
    agent = qos["agent"]
    # SLUICE_AGENT|global as compiled: MQ-ECN on storage (3) and analytics (2), every
    # 100 ms, K from the 40 us base RTT; the twin stamps its own version.
    assert agent["global"]["algorithm"] == "mqecn"
    assert agent["global"]["queues"] == "2,3"
    assert agent["global"]["interval_ms"] == str(intent.fabric.agent.interval_ms)
    assert agent["global"]["version"] == "twin"
    assert agent["write"] == "ecn_step"
    # Host ports (25 Gb/s): K = 125 000 B; storage's floor and fallback 50/100 of it, its
    # ceiling K; best-effort (1) and the strict queues take part unmanaged.
    down = {e["queue"]: e["fields"] for e in agent["leaf_down"]}
    assert down[3]["managed"] == "true"
    assert (down[3]["floor_bytes"], down[3]["ceiling_bytes"]) == ("62500", "125000")
    assert down[3]["wred_profile"] == "SLUICE_Q_Ethernet0_3"
    assert down[1] == {
        "managed": "false",
        "weight": "20",
        "speed_gbps": "25",
        "buffer_bytes": "2000000",
    }
    assert {e["queue"] for e in agent["spine"]} == set(down)
    # The ports keep their compiled profiles; the agent rewrites the dynamic ones.
    assert qos["aqm"] == "per_queue"
    notes = translate(intent, Request()).not_modelled
    assert any("every 100 ms of simulated time" in n for n in notes)
    assert translate(intent, Request(per_packet=True)).config["qos"]["agent"] is None


def test_no_agent_where_nothing_is_dynamic(intent: Intent) -> None:
    static = _mqecn_as(intent, EcnMode.PER_QUEUE_MINIMUM)
    assert translate(static, Request()).config["qos"]["agent"] is None


def _hdcq_intent(intent: Intent) -> Intent:
    """The example with best-effort (queue 1) turned into an HDCQ class: ACKs in queue 4,
    a flow's first 100 KiB in queue 1, the rest in queue 0; storage and analytics static,
    since the agent runs one algorithm; a platform publishing WRED/ECN queue counters."""
    hdcq = Hdcq(
        flow_type_thresh_bytes=102_400,
        ack=PiasStage(dscp=40, queue=4),
        long=PiasStage(dscp=2, queue=0),
        wrr_weight=5,
    )
    classes = []
    for c in intent.service_classes:
        if c.name == "best-effort":
            c = c.model_copy(
                update={
                    "ecn": EcnMode.HDCQ,
                    "scheduling": Scheduling(type=SchedulingType.STRICT),
                    "hdcq": hdcq,
                    "hosts_match": HostsMatch(protocol="tcp"),
                }
            )
        elif c.ecn is EcnMode.MQECN:
            c = c.model_copy(update={"ecn": EcnMode.PER_QUEUE_MINIMUM})
        classes.append(c)
    counters = intent.fabric.counters.model_copy(update={"wred_ecn_queue": True})
    return _with(intent.model_copy(update={"service_classes": tuple(classes)}), counters=counters)


def test_an_hdcq_class_is_tagged_as_its_hosts_tag_it(intent: Intent) -> None:
    qos = translate(_hdcq_intent(intent), Request()).config["qos"]
    # hosts.compile.hdcq_entry: the class's DSCP (0) up to 100 KiB, then long's (2); pure
    # ACKs in the ack queue.
    best_effort = qos["tagging"]["dscp"]["classes"][4]
    assert best_effort == {"dscp": 0, "pias": {"thresholds_bytes": [102_400], "dscp": [2]}}
    assert qos["ack_queue"] == 4
    assert qos["agent"]["global"]["algorithm"] == "hdcq"
    # Per packet: HDCQ's Algorithm 2 on those queues, Eq. (1)'s period one base RTT (40 us).
    per_packet = translate(_hdcq_intent(intent), Request(per_packet=True)).config["qos"]
    assert per_packet["aqm"] == {
        "hdcq": {
            "q1": 4,
            "q2": 1,
            "q3": 0,
            "port_threshold_pct": 60.0,
            "k": 0.06,
            "period_ns": 40_000.0,
        }
    }
    assert per_packet["agent"] is None


def test_dynaq_polled_faster_than_the_watermarks_runs_static_as_the_agent_does(
    intent: Intent,
) -> None:
    # DynaQ reads the queue watermarks, which SONiC polls every 1 s at the fastest: at the
    # example's 100 ms a switch's agent refuses its orders; at 1 s it runs.
    dynaq = _mqecn_as(intent, EcnMode.DYNAQ)
    twin = translate(dynaq, Request())
    assert twin.config["qos"]["agent"]["global"]["algorithm"] == "static"
    assert any("QUEUE_WATERMARK, polled every 1000 ms" in n for n in twin.not_modelled)
    slower = dynaq.fabric.agent.model_copy(update={"interval_ms": 1000, "stale_after_ms": 3000})
    twin = translate(_with(dynaq, agent=slower), Request())
    assert twin.config["qos"]["agent"]["global"]["algorithm"] == "dynaq"
    assert twin.config["qos"]["agent"]["global"]["interval_ms"] == "1000"


def test_the_agent_reads_the_marks_where_the_platform_publishes_them(intent: Intent) -> None:
    assert "readout" not in translate(intent, Request()).config["qos"]["agent"]
    counters = intent.fabric.counters.model_copy(update={"wred_ecn_queue": True})
    agent = translate(_with(intent, counters=counters), Request()).config["qos"]["agent"]
    assert agent["readout"] == "published_with_ecn"
