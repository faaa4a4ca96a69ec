"""vsonic's schema, and the controller's, give the verdict libyang gives on probe entries.

Each probe is one SLUICE_AGENT or SLUICE_AGENT_QUEUE entry (good, or bad in one way) added to
a seeded switch with one WRED profile. libyang with SONiC's models plus sonic-sluice-agent.yang
is the judge; vsonic must accept exactly what it accepts. The controller's table schemas
check an entry on its own (references are checked over the whole plan elsewhere), so they are
compared on the probes that do not depend on other entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from controller.errors import CompiledConfigInvalid
from controller.intent.models import GnmiEndpoint, Port, Role, Switch
from controller.sonic.tables import SCHEMAS
from tests.yang.configdb_yang import yang_problem
from tests.yang.switches import seeded_config
from vsonic.db import Config
from vsonic.schema import validate_change

SWITCH = Switch(
    name="leaf1",
    role=Role.LEAF,
    gnmi=GnmiEndpoint(address="127.0.0.1", port=50051),
    credential_ref="env:SLUICE_GNMI_PASSWORD",
    ports=(Port(name="Ethernet0", speed_gbps=100), Port(name="Ethernet4", speed_gbps=25)),
)
PROFILE = ("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")
BASE: Config = {
    **seeded_config(SWITCH),
    PROFILE: {"green_min_threshold": "1000", "green_max_threshold": "90000", "ecn": "ecn_all"},
}
AGENT = {
    "algorithm": "mqecn", "interval_ms": "10", "rtt_us": "40", "lambda": "1",
    "hysteresis_pct": "5", "hdcq_k": "0.06", "stale_after_ms": "1000",
    "queues": "2,3", "version": "c3430a426b9c",
}  # fmt: skip
MANAGED = {
    "managed": "true", "wred_profile": PROFILE[1], "weight": "50", "floor_bytes": "3000",
    "ceiling_bytes": "90000", "static_bytes": "12500", "speed_gbps": "100",
    "buffer_bytes": "2000000",
}  # fmt: skip
UNMANAGED = {"managed": "false", "weight": "0", "speed_gbps": "100", "buffer_bytes": "2000000"}


def _without(fields: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in fields.items() if k != name}


@dataclass(frozen=True)
class Probe:
    name: str
    table: str
    key: str
    fields: dict[str, str]
    local: bool = True  # the verdict depends on this entry only

    def config(self) -> Config:
        return {**BASE, (self.table, self.key): self.fields}


def _agent(name: str, local: bool = True, key: str = "global", **changes: str) -> Probe:
    return Probe(name, "SLUICE_AGENT", key, {**AGENT, **changes}, local)


def _queue(name: str, base: dict[str, str], key: str = "Ethernet0|3", **changes: str) -> Probe:
    return Probe(name, "SLUICE_AGENT_QUEUE", key, {**base, **changes})


PROBES = [
    _agent("good orders"),
    _agent("every algorithm: static", algorithm="static", queues=""),
    _agent("every algorithm: dynaq", algorithm="dynaq"),
    _agent("every algorithm: hdcq", algorithm="hdcq"),
    _agent("bounds at their edges", interval_ms="60000", rtt_us="100000",
           hdcq_k="0.000001", hysteresis_pct="0", stale_after_ms="1"),
    _agent("wrong enum", algorithm="red"),
    _agent("interval below range", interval_ms="0"),
    _agent("interval above range", interval_ms="60001"),
    _agent("ewma_beta, no longer a field", ewma_beta="0.75"),
    Probe("lambda above range", "SLUICE_AGENT", "global", {**AGENT, "lambda": "10.000001"}),
    _agent("seven fraction digits", rtt_us="40.1234567"),
    _agent("exponent notation", rtt_us="4e1"),
    _agent("hysteresis above range", hysteresis_pct="50.5"),
    _agent("queue index 8", queues="3,8"),
    _agent("version not hex", version="v1.2"),
    _agent("another key", key="local"),
    Probe("unknown field", "SLUICE_AGENT", "global", {**AGENT, "gain": "2"}),
    Probe("missing mandatory field", "SLUICE_AGENT", "global", _without(AGENT, "rtt_us")),
    _queue("good managed queue", MANAGED),
    _queue("managed by default", _without(MANAGED, "managed")),
    _queue("good unmanaged queue", UNMANAGED, key="Ethernet4|0"),
    _queue("weight above range", UNMANAGED, weight="101"),
    _queue("speed above range", UNMANAGED, speed_gbps="801"),
    _queue("buffer zero", UNMANAGED, buffer_bytes="0"),
    _queue("threshold above stoi", MANAGED, ceiling_bytes="2147483648"),
    _queue("static above ceiling", MANAGED, static_bytes="90001"),
    _queue("ceiling below floor", MANAGED, floor_bytes="95000", static_bytes="95000"),
    _queue("managed without floor", _without(MANAGED, "floor_bytes")),
    _queue("unmanaged with a profile", UNMANAGED, wred_profile=PROFILE[1]),
    _queue("managed with the per-port point", MANAGED, port_threshold_bytes="1200000"),
    _queue("per-port point above range", MANAGED, port_threshold_bytes="4294967296"),
    _queue("unmanaged with the per-port point", UNMANAGED, port_threshold_bytes="1200000"),
    _queue("managed with its own lambda", MANAGED, **{"lambda": "0.5"}),
    _queue("own lambda above range", MANAGED, **{"lambda": "10.5"}),
    _queue("own lambda zero", MANAGED, **{"lambda": "0"}),
    _queue("unmanaged with a lambda", UNMANAGED, **{"lambda": "0.5"}),
    _queue("managed not a boolean", UNMANAGED, managed="yes"),
    _queue("unknown field", UNMANAGED, gain="1"),
    _queue("missing weight", _without(UNMANAGED, "weight")),
    _queue("queue index 8", UNMANAGED, key="Ethernet0|8"),
    _queue("queue range", UNMANAGED, key="Ethernet0|2-3"),
    Probe("missing port", "SLUICE_AGENT_QUEUE", "Ethernet96|3", UNMANAGED, local=False),
    Probe("missing profile", "SLUICE_AGENT_QUEUE", "Ethernet0|3",
          {**MANAGED, "wred_profile": "SLUICE_Q_ghost"}, local=False),
]  # fmt: skip


def test_the_probes_have_good_and_bad_entries_of_both_tables() -> None:
    verdicts = {(p.table, yang_problem(p.config()) is None) for p in PROBES}
    assert verdicts == {(t, ok) for t in ("SLUICE_AGENT", "SLUICE_AGENT_QUEUE") for ok in (1, 0)}


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: f"{p.table}: {p.name}")
def test_vsonic_gives_libyangs_verdict(probe: Probe) -> None:
    yang = yang_problem(probe.config())
    vsonic = validate_change(BASE, probe.config())
    assert (yang is None) == (vsonic == []), f"libyang: {yang}; vsonic: {vsonic}"


def _controller_problem(probe: Probe) -> str | None:
    try:
        SCHEMAS[probe.table].check(probe.key, probe.fields)
    except CompiledConfigInvalid as refused:
        return str(refused)
    return None


@pytest.mark.parametrize(
    "probe", [p for p in PROBES if p.local], ids=lambda p: f"{p.table}: {p.name}"
)
def test_the_controllers_schema_gives_libyangs_verdict(probe: Probe) -> None:
    yang = yang_problem(probe.config())
    controller = _controller_problem(probe)
    assert (yang is None) == (controller is None), f"libyang: {yang}; controller: {controller}"
