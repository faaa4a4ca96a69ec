"""libyang, vsonic's schema and the controller's give one verdict on SLUICE_AGENT entries.

Each probe is one SLUICE_AGENT or SLUICE_AGENT_QUEUE entry (good, or bad in one way) added to
a seeded switch with one WRED profile. libyang with SONiC's models plus sonic-sluice-agent.yang
is the judge; vsonic must accept exactly what it accepts. The controller's table schemas
check an entry on its own (references are checked over the whole plan elsewhere), so they are
compared on the probes that do not depend on other entries.

The shared probes are ``agents/qos-agent/yang/sonic-sluice-agent-verdicts.json``, with the
verdict and, for a refusal, the field it names written down: libyang must give that verdict,
and vsonic and the controller that verdict naming that field; qos-core's orders parser is
held to the same file (``agents/qos-core/tests/yang_contract.rs``). The probes below it are
the model's alone: the agent keeps wider sanity bounds above the model's maxima, reads a
number in any notation, never sees a key other than ``global`` and checks no reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.errors import CompiledConfigInvalid
from controller.intent.models import GnmiEndpoint, Port, Role, Switch
from controller.sonic.tables import SCHEMAS
from tests.yang.configdb_yang import yang_problem
from tests.yang.switches import seeded_config
from vsonic.db import Config
from vsonic.schema import validate_change

VERDICTS = (
    Path(__file__).resolve().parents[2] / "agents/qos-agent/yang/sonic-sluice-agent-verdicts.json"
)
SHARED = json.loads(VERDICTS.read_text())

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
AGENT: dict[str, str] = SHARED["bases"]["agent"]
MANAGED: dict[str, str] = SHARED["bases"]["managed"]
UNMANAGED: dict[str, str] = SHARED["bases"]["unmanaged"]


@dataclass(frozen=True)
class Probe:
    name: str
    table: str
    key: str
    fields: dict[str, str]
    local: bool = True  # the verdict depends on this entry only
    verdict: bool | None = None  # written down (the shared file's); None: libyang's alone
    field: str | None = None  # the field a written-down refusal names; None: the key

    def config(self) -> Config:
        return {**BASE, (self.table, self.key): self.fields}


def _shared(case: dict[str, Any]) -> Probe:
    """A case of the shared file: its base entry, ``set`` fields set, ``unset`` removed."""
    fields = {**SHARED["bases"][case["base"]], **case.get("set", {})}
    for name in case.get("unset", []):
        fields.pop(name)
    field = None if case["valid"] else case["field"]
    return Probe(case["name"], case["table"], case["key"], fields, True, case["valid"], field)


def _agent(name: str, local: bool = True, key: str = "global", **changes: str) -> Probe:
    return Probe(name, "SLUICE_AGENT", key, {**AGENT, **changes}, local)


def _queue(name: str, base: dict[str, str], key: str = "Ethernet0|3", **changes: str) -> Probe:
    return Probe(name, "SLUICE_AGENT_QUEUE", key, {**base, **changes})


SHARED_PROBES = [_shared(case) for case in SHARED["cases"]]
MODEL_ONLY = [
    _agent("interval above range", interval_ms="60001"),
    Probe("lambda above range", "SLUICE_AGENT", "global", {**AGENT, "lambda": "10.000001"}),
    _agent("seven fraction digits", rtt_us="40.1234567"),
    _agent("exponent notation", rtt_us="4e1"),
    _agent("hysteresis above range", hysteresis_pct="50.5"),
    _agent("version not hex", version="v1.2"),
    _agent("another key", key="local"),
    _queue("speed above range", UNMANAGED, speed_gbps="801"),
    _queue("threshold above stoi", MANAGED, ceiling_bytes="2147483648"),
    _queue("per-port point above range", MANAGED, port_threshold_bytes="4294967296"),
    _queue("own lambda above range", MANAGED, **{"lambda": "10.5"}),
    Probe("missing port", "SLUICE_AGENT_QUEUE", "Ethernet96|3", UNMANAGED, local=False),
    Probe("missing profile", "SLUICE_AGENT_QUEUE", "Ethernet0|3",
          {**MANAGED, "wred_profile": "SLUICE_Q_ghost"}, local=False),
]  # fmt: skip
PROBES = SHARED_PROBES + MODEL_ONLY


@pytest.mark.parametrize("probe", SHARED_PROBES, ids=lambda p: f"{p.table}: {p.name}")
def test_the_shared_verdicts_are_libyangs(probe: Probe) -> None:
    yang = yang_problem(probe.config())
    assert (yang is None) is probe.verdict, f"libyang: {yang}"


def _names(reason: str, probe: Probe) -> bool:
    """Whether a refusal's first reason is about the probe's written-down field (or key)."""
    about = f"key {probe.key!r}" if probe.field is None else f"field {probe.field!r}"
    return about in reason


@pytest.mark.parametrize("probe", SHARED_PROBES, ids=lambda p: f"{p.table}: {p.name}")
def test_vsonic_gives_the_shared_verdict_naming_its_field(probe: Probe) -> None:
    problems = validate_change(BASE, probe.config())
    assert (problems == []) is probe.verdict, problems
    assert probe.verdict or _names(problems[0], probe), problems


@pytest.mark.parametrize("probe", SHARED_PROBES, ids=lambda p: f"{p.table}: {p.name}")
def test_the_controller_gives_the_shared_verdict_naming_its_field(probe: Probe) -> None:
    problem = _controller_problem(probe)
    assert (problem is None) is probe.verdict, problem
    assert problem is None or _names(problem.split("; ")[0], probe), problem


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
