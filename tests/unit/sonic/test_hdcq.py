"""HDCQ's switch side (HDCQ 2021 §3.3, §4.2.1): three queues per class, the ACK queue
strict, Priority 2 and 3 strict or SP + WRR at w : 1, and the per-port 60 % ECN point; plus
the intent rules that keep the layout in priority order."""

from __future__ import annotations

import pytest

from controller.errors import IntentInvalid
from controller.intent.models import (
    EcnMode,
    Hdcq,
    HostsMatch,
    Pias,
    PiasStage,
    Scheduling,
    SchedulingType,
    ServiceClass,
    Workload,
)
from controller.sonic.compile import compile_switch
from tests.unit.sonic import intents as t


def hdcq_class(
    *, wrr_weight: int | None = None, ack_queue: int = 6, queue: int = 5, long_queue: int = 4
) -> ServiceClass:
    return ServiceClass(
        name="web",
        dscp=(20,),
        queue=queue,
        scheduling=Scheduling(type=SchedulingType.STRICT),
        ecn=EcnMode.HDCQ,
        hdcq=Hdcq(
            flow_type_thresh_bytes=100_000,
            ack=PiasStage(dscp=46, queue=ack_queue),
            long=PiasStage(dscp=14, queue=long_queue),
            wrr_weight=wrr_weight,
        ),
        hosts_match=HostsMatch(protocol="tcp", dports=(8080,)),
    )


def test_three_queues_strict_in_priority_order() -> None:
    intent = t.intent(hdcq_class(), t.BULK)
    config = compile_switch(intent, intent.switches[0])
    dscp_map = config[("DSCP_TO_TC_MAP", "SLUICE")]
    assert (dscp_map["46"], dscp_map["20"], dscp_map["14"]) == ("6", "5", "4")
    for queue in (6, 5, 4):
        scheduler = config[("QUEUE", f"Ethernet0|{queue}")]["scheduler"]
        assert config[("SCHEDULER", scheduler)] == {"type": "STRICT"}


def test_sp_plus_wrr_gives_priority_2_w_times_priority_3() -> None:
    # w = 5 (the paper's choice, Algorithm 3): Q1 strict; Q2 : Q3 = 5 : 1 in DWRR, next to
    # BULK's weight 3 (all within SONiC's 1..100, so kept as they are).
    intent = t.intent(hdcq_class(wrr_weight=5), t.BULK)
    config = compile_switch(intent, intent.switches[0])

    def scheduler(queue: int) -> dict[str, str]:
        return config[("SCHEDULER", config[("QUEUE", f"Ethernet0|{queue}")]["scheduler"])]

    assert scheduler(6) == {"type": "STRICT"}
    assert scheduler(5) == {"type": "DWRR", "weight": "5"}
    assert scheduler(4) == {"type": "DWRR", "weight": "1"}
    assert scheduler(1) == {"type": "DWRR", "weight": "3"}


def test_every_hdcq_queue_carries_the_per_port_threshold_at_60_percent() -> None:
    # port_buffer_bytes 1 000 000 -> 600 000 B (the paper: 144 of 240 packets, 60 %)
    intent = t.intent(hdcq_class(), t.BULK)
    config = compile_switch(intent, intent.switches[0])
    for queue in (6, 5, 4):
        assert config[("SLUICE_AGENT_QUEUE", f"Ethernet0|{queue}")]["port_threshold_bytes"] == (
            "600000"
        )
    assert "port_threshold_bytes" not in config[("SLUICE_AGENT_QUEUE", "Ethernet0|1")]
    assert config[("SLUICE_AGENT", "global")]["algorithm"] == "hdcq"


@pytest.mark.parametrize(
    ("queues", "reason"),
    [((4, 5, 6), "ack.queue > queue > long.queue"), ((6, 4, 5), "ack.queue > queue > long.queue")],
)
def test_queues_out_of_priority_order_are_refused(
    queues: tuple[int, int, int], reason: str
) -> None:
    ack, queue, long = queues
    with pytest.raises(IntentInvalid) as caught:
        t.intent(hdcq_class(ack_queue=ack, queue=queue, long_queue=long))
    assert any(reason in p.reason for p in caught.value.problems)


def test_hdcq_and_pias_on_one_class_are_refused() -> None:
    both = hdcq_class().model_copy(
        update={
            "pias": Pias(
                workload=Workload.WEBSEARCH, load=0.5, demotions=(PiasStage(dscp=12, queue=2),)
            )
        }
    )
    with pytest.raises(IntentInvalid) as caught:
        t.intent(both)
    assert any("PIAS or HDCQ, not both" in p.reason for p in caught.value.problems)


def test_hdcq_dscps_are_counted_once_in_the_intent() -> None:
    clash = t.strict("voice", 2, EcnMode.STANDARD, (46,))  # 46 is the HDCQ ACK DSCP
    with pytest.raises(IntentInvalid) as caught:
        t.intent(hdcq_class(), clash)
    assert any("DSCP 46 is already used" in p.reason for p in caught.value.problems)
