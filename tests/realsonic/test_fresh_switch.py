"""sluice's southbound against a fresh real switch: SONiC's gNMI server answers a Get of a
table it does not hold with NOT_FOUND (``Failed to find CONFIG_DB …``), which sluice must read
as an empty table, and the tables it does hold come back entry for entry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from controller.intent.models import GnmiEndpoint
from controller.intent.models import Switch as IntentSwitch
from controller.reconcile.access import OWNED_TABLES, GnmiAccess
from controller.southbound.gnmi import SessionPool
from lab.realsonic import RealSwitch

from .conftest import StartSwitch, full_switch_parts


@pytest.fixture(scope="module")
def switch(start_switch: StartSwitch) -> RealSwitch:
    return start_switch(full_switch_parts())


@pytest.fixture
def access() -> Iterator[GnmiAccess]:
    with SessionPool() as pool:
        yield GnmiAccess(pool, lambda ref: SecretStr(""), tls=None)


def intent_switch(real: RealSwitch) -> IntentSwitch:
    return IntentSwitch(
        name="leaf1",
        role="leaf",
        gnmi=GnmiEndpoint(address="127.0.0.1", port=real.gnmi_port),
        credential_ref="env:UNUSED",
        ports=[{"name": "Ethernet0", "speed_gbps": 40}],
    )


def test_owned_tables_of_a_fresh_switch_read_as_empty(
    switch: RealSwitch, access: GnmiAccess
) -> None:
    assert access.read(intent_switch(switch), OWNED_TABLES) == {}


def test_tables_the_switch_holds_read_entry_for_entry(
    switch: RealSwitch, access: GnmiAccess
) -> None:
    running = access.read(intent_switch(switch), ["PORT"])
    in_redis = {
        key.split("|", 1)[1]: switch.db("CONFIG_DB").hgetall(key)
        for key in switch.db("CONFIG_DB").scan_iter("PORT|*")
    }
    assert len(in_redis) == 32
    assert {key: fields for (table, key), fields in running.items() if table == "PORT"} == in_redis
