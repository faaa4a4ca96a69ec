"""Small intents for the sonic tests, built in code."""

from __future__ import annotations

from controller.intent.models import (
    EcnMode,
    Fabric,
    GnmiEndpoint,
    Intent,
    Pias,
    PiasStage,
    Port,
    Role,
    Scheduling,
    SchedulingType,
    ServiceClass,
    Switch,
    Workload,
)
from controller.intent.validate import validate_intent

# K = C x RTT x lambda: 10 Gb/s = 1.25e9 B/s; x 10 us = 12 500 B; x lambda 1 = 12 500 B.
FABRIC = Fabric(base_rtt_us=10, ecn_lambda=1.0, mtu_bytes=1500, port_buffer_bytes=1_000_000)


def switch(
    name: str = "leaf1",
    ports: tuple[tuple[str, int], ...] = (("Ethernet0", 10),),
    gnmi_port: int = 50051,
) -> Switch:
    return Switch(
        name=name,
        role=Role.LEAF,
        gnmi=GnmiEndpoint(address="127.0.0.1", port=gnmi_port),
        credential_ref="env:SLUICE_GNMI_PASSWORD",
        ports=tuple(Port(name=p, speed_gbps=s) for p, s in ports),
    )


def dwrr(name: str, queue: int, weight: int, ecn: EcnMode, dscp: tuple[int, ...]) -> ServiceClass:
    return ServiceClass(
        name=name,
        dscp=dscp,
        queue=queue,
        scheduling=Scheduling(type=SchedulingType.DWRR, weight=weight),
        ecn=ecn,
    )


def strict(
    name: str, queue: int, ecn: EcnMode, dscp: tuple[int, ...], pias: Pias | None = None
) -> ServiceClass:
    return ServiceClass(
        name=name,
        dscp=dscp,
        queue=queue,
        scheduling=Scheduling(type=SchedulingType.STRICT),
        ecn=ecn,
        pias=pias,
    )


VOICE = strict("voice", 5, EcnMode.STANDARD, (46,))
BULK = dwrr("bulk", 1, 3, EcnMode.PER_QUEUE_MINIMUM, (10, 12))
WEB = dwrr("web", 3, 1, EcnMode.OFF, (18,))
STORAGE_MQECN = dwrr("storage", 3, 1, EcnMode.MQECN, (18,))
RPC_PIAS = strict(
    "rpc",
    6,
    EcnMode.STANDARD,
    (34,),
    pias=Pias(workload=Workload.WEBSEARCH, load=0.6, demotions=(PiasStage(dscp=36, queue=4),)),
)


def intent(
    *classes: ServiceClass, switches: tuple[Switch, ...] | None = None, fabric: Fabric = FABRIC
) -> Intent:
    return validate_intent(
        Intent(fabric=fabric, switches=switches or (switch(),), service_classes=tuple(classes))
    )
