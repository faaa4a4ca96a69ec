"""A switch's dialect from its gNMI Capabilities, over real gRPC: vsonic answers as each
target would (sonic-gnmi's ``sonic-db``; an OpenConfig target's openconfig-qos without it),
the session names the dialect, discovery of an OpenConfig switch reads no SONiC database and
writes its dialect into the inventory, and an inventory entry silent about it (so ``sonic``)
is named as wrong before anything is planned on it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from controller.intent.loader import parse_intent
from controller.intent.models import Dialect, GnmiEndpoint, Intent
from controller.reconcile.access import GnmiAccess
from controller.sonic.discovery import inventory_problems
from controller.sonic.topology import inventory, topology
from controller.southbound.credentials import secret_resolver
from controller.southbound.gnmi import SessionPool
from vsonic.db import MemoryStore
from vsonic.gnmi_server import Clock, Credentials, GnmiService, RunningServer, start_server
from vsonic.seed import PortSeed, SwitchSeed, seed_store
from vsonic.switch import Switch, Targets

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PASSWORD = secrets.token_hex(12)


@dataclass
class Servers:
    ports: dict[str, int]  # switch name -> gNMI port


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    running: list[RunningServer] = []
    models: dict[str, Switch] = {}
    try:
        for name, dialect in (("sonic1", "sonic"), ("oc1", "openconfig")):
            store = MemoryStore()
            seed_store(store, SwitchSeed(name, (PortSeed("Ethernet0", 100),)))
            models[name] = Switch(name, store, dialect=dialect)
            service = GnmiService(
                Targets([models[name]], fleet=False), Clock(), Credentials("admin", PASSWORD)
            )
            running.append(start_server("127.0.0.1:0", service))
        yield Servers({n: r.port for n, r in zip(models, running, strict=True)})
    finally:
        for server in running:
            server.stop(grace_s=0.2)


@pytest.fixture
def access() -> Iterator[GnmiAccess]:
    with SessionPool() as pool:
        yield GnmiAccess(pool, secret_resolver({"PW": PASSWORD}), tls=None)


def _intent(servers: Servers, oc_dialect: str | None) -> Intent:
    oc1: dict[str, object] = {
        "name": "oc1", "role": "leaf", "credential_ref": "env:PW",
        "gnmi": {"address": "127.0.0.1", "port": servers.ports["oc1"]},
        "ports": [{"name": "Ethernet0", "speed_gbps": 100}],
    }  # fmt: skip
    if oc_dialect is not None:
        oc1["dialect"] = oc_dialect
    return parse_intent({
        "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
        "switches": [oc1],
        "service_classes": [{"name": "bulk", "dscp": [10], "queue": 1,
                             "scheduling": {"type": "DWRR", "weight": 10}, "ecn": "off"}],
    })  # fmt: skip


def test_each_switch_is_found_speaking_its_dialect(servers: Servers, access: GnmiAccess) -> None:
    found = {
        name: access.discover(name, GnmiEndpoint(address="127.0.0.1", port=port), "env:PW")
        for name, port in servers.ports.items()
    }
    assert found["sonic1"].dialect is Dialect.SONIC
    assert [p.name for p in found["sonic1"].ports] == ["Ethernet0"]  # its databases read
    assert found["oc1"].dialect is Dialect.OPENCONFIG
    assert (found["oc1"].ports, found["oc1"].qos, found["oc1"].gets) == ((), {}, 0)
    endpoints = {n: {"gnmi": {"address": "127.0.0.1", "port": p}} for n, p in servers.ports.items()}
    discoveries = list(found.values())
    document = inventory(discoveries, topology(discoveries), endpoints, None)
    dialects = {s["name"]: s.get("dialect") for s in document["switches"]}
    assert dialects == {"sonic1": None, "oc1": "openconfig"}  # sonic is the default


def test_an_entry_silent_or_wrong_about_an_openconfig_switch_is_named(
    servers: Servers, access: GnmiAccess
) -> None:
    endpoint = GnmiEndpoint(address="127.0.0.1", port=servers.ports["oc1"])
    found = access.discover("oc1", endpoint, "env:PW")
    silent = _intent(servers, None).switches[0]
    (problem,) = inventory_problems(silent, found)
    assert problem.path == "switches.oc1.dialect"
    assert problem.reason.startswith("not declared, so sonic;")
    assert "openconfig-qos and not sonic-db" in problem.reason
    (wrong,) = inventory_problems(_intent(servers, "sonic").switches[0], found)
    assert wrong.reason.startswith("declared sonic;")
    # Said right: no problem, and no port is missed although none was read.
    assert inventory_problems(_intent(servers, "openconfig").switches[0], found) == []
