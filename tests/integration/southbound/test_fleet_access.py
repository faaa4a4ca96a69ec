"""The access the worker uses reaches switches that share one fleet-mode gNMI server, picking
each by the prefix target its intent declares (``gnmi.target``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from controller.errors import SouthboundError
from controller.intent.loader import load_intent_file
from controller.intent.models import GnmiEndpoint, Intent, Switch
from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.sonic.compile import compile_switch
from controller.sonic.diff import plan_switch
from controller.southbound.gnmi import SessionPool, session_tls
from tests.support.fresh_switch import as_read_back
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
CREDS = Credentials("admin", "fleet-access-password")
NAMES = ("fleet-a", "fleet-b")


@pytest.fixture
def fleet_port(switch_tls: TlsFiles) -> Iterator[int]:
    targets = fleet_targets(list(NAMES), default_ports(2, speed_gbps=100))
    running = start_server("127.0.0.1:0", GnmiService(targets, Clock(), CREDS), switch_tls)
    try:
        yield running.port
    finally:
        running.stop(grace_s=0.5)


def _fleet_switch(intent: Intent, name: str, port: int, target: str | None) -> Switch:
    # The example's spines have Ethernet0/4 at 100 G: the ports every fleet target is seeded with.
    spine = next(s for s in intent.switches if s.role.value == "spine")
    gnmi = GnmiEndpoint(address="127.0.0.1", port=port, target=target)
    return spine.model_copy(update={"name": name, "gnmi": gnmi})


def _access(pool: SessionPool, tls: TlsFiles) -> GnmiAccess:
    def resolve(ref: str) -> SecretStr:
        return SecretStr(CREDS.password)

    options = session_tls(insecure=False, ca=tls.cert)
    return GnmiAccess(pool, resolve, username=CREDS.username, tls=options)


def test_each_fleet_switch_is_written_and_read_through_its_own_target(
    fleet_port: int, switch_tls: TlsFiles
) -> None:
    intent = load_intent_file(EXAMPLE)
    switches = [_fleet_switch(intent, name, fleet_port, target=name) for name in NAMES]
    with SessionPool() as pool:
        access = _access(pool, switch_tls)
        first = switches[0]
        desired = compile_switch(intent, first)
        result = access.apply(first, plan_switch(first.name, desired, {}))
        assert result.status == "applied_verified", result.reason
        read_first = access.read(first, OWNED_TABLES)
        read_second = access.read(switches[1], OWNED_TABLES)
    assert read_first == as_read_back(desired)
    # The second switch behind the same server was not touched by the first one's writes:
    # it holds only what it started with.
    assert read_second == as_read_back({})


def test_a_fleet_switch_without_a_target_is_refused_by_the_server(
    fleet_port: int, switch_tls: TlsFiles
) -> None:
    intent = load_intent_file(EXAMPLE)
    switch = _fleet_switch(intent, NAMES[0], fleet_port, target=None)
    with SessionPool() as pool, pytest.raises(SouthboundError) as refused:
        _access(pool, switch_tls).read(switch, OWNED_TABLES)
    assert "target" in refused.value.detail.lower()
