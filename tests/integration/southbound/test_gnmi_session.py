"""The gNMI adapter itself over real gRPC: capabilities, typed errors, retries, redaction,
fleet mode through the prefix target, the in-flight limit, TLS."""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from controller.errors import SouthboundRejected, SouthboundSetUnconfirmed, SouthboundUnreachable
from controller.reconcile.apply import apply_fleet
from controller.sonic.diff import plan_switch
from controller.sonic.model import Op
from controller.southbound.gnmi import (
    CallPolicy,
    GnmiTarget,
    SessionPool,
    TlsOptions,
    session_tls,
)
from controller.southbound.retry import RetryPolicy
from tests.integration.tls_certs import SERVER_NAME, self_signed_tls
from vsonic.db import MemoryStore
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.redis_process import free_port
from vsonic.seed import SwitchSeed, default_ports, seed_store
from vsonic.switch import Switch, Targets

from .conftest import Fabric

SCHED = Op("add", "SCHEDULER", "SLUICE_SCHED_9", {"type": "DWRR", "weight": "40"}, {})


class FakeClock:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def test_capabilities_offer_json_ietf_and_sonic_db(fabric: Fabric) -> None:
    with SessionPool() as pool:
        caps = pool.session(fabric.targets()["leaf1"]).capabilities()
    assert caps.supports_json_ietf
    assert "sonic-db" in caps.models


def test_set_goes_out_as_json_ietf_and_a_missing_table_reads_empty(fabric: Fabric) -> None:
    # vsonic, like sonic-gnmi, refuses any value that is not json_ietf_val (sonic-gnmi
    # sonic_data_client/mixed_db_client.go).
    with SessionPool() as pool:
        session = pool.session(fabric.targets()["leaf1"])
        assert session.get_tables(["SCHEDULER"]) == {}
        session.set([SCHED])
        assert session.get_tables(["SCHEDULER", "WRED_PROFILE"]) == {
            ("SCHEDULER", "SLUICE_SCHED_9"): {"type": "DWRR", "weight": "40"}
        }
        assert session.rpc_counts == {"Get": 2, "Set": 1}
    assert fabric.switches["leaf1"].config_db()["SCHEDULER|SLUICE_SCHED_9"] == SCHED.fields


def test_nobody_listening_is_unreachable_after_jittered_retries_without_the_password() -> None:
    password = secrets.token_hex(8)
    target = GnmiTarget("ghost", "127.0.0.1", free_port(), "admin", SecretStr(password))
    clock = FakeClock()
    retry = RetryPolicy(attempts=4, base_delay_s=0.2, max_delay_s=1.0)
    with SessionPool(
        policy=CallPolicy(deadline_s=2.0, retry=retry),
        sleep=clock.sleep,
        rand=random.Random(42).random,
    ) as pool:
        session = pool.session(target)
        with pytest.raises(SouthboundUnreachable) as raised:
            session.get_tables(["SCHEDULER"])
    assert session.rpc_counts == {"Get": 4}
    draws = random.Random(42)
    # steps 0.2, 0.4, 0.8 (below the 1.0 cap); delay = step/2 + step/2 * u
    assert clock.sleeps == pytest.approx([s / 2 + s / 2 * draws.random() for s in (0.2, 0.4, 0.8)])
    message = str(raised.value)
    assert "ghost" in message
    assert "UNAVAILABLE" in message
    assert password not in message
    assert password not in repr(session)


def test_a_set_without_an_answer_is_sent_once_and_reported_unconfirmed() -> None:
    # A switch may still be running a Set the client gave up on (GCU carries on): the
    # session never resends it; the caller reads back first.
    target = GnmiTarget("ghost", "127.0.0.1", free_port(), "admin", SecretStr("x"))
    clock = FakeClock()
    with SessionPool(sleep=clock.sleep) as pool:
        session = pool.session(target)
        with pytest.raises(SouthboundSetUnconfirmed, match="UNAVAILABLE"):
            session.set([SCHED])
    assert session.rpc_counts == {"Set": 1}
    assert clock.sleeps == []


def test_a_wrong_password_is_refused_once_not_retried(fabric: Fabric) -> None:
    good = fabric.targets()["spine1"]
    wrong = secrets.token_hex(8)
    target = GnmiTarget(
        good.name, good.address, good.port, good.username, SecretStr(wrong), tls=good.tls
    )
    clock = FakeClock()
    with SessionPool(sleep=clock.sleep) as pool:
        session = pool.session(target)
        with pytest.raises(SouthboundRejected) as raised:
            session.capabilities()
    assert raised.value.code == "UNAUTHENTICATED"
    assert session.rpc_counts == {"Capabilities": 1}
    assert clock.sleeps == []
    assert wrong not in str(raised.value)
    assert fabric.password not in str(raised.value)


def test_a_rejected_set_carries_the_switch_message_naming_the_field(fabric: Fabric) -> None:
    bad = Op("add", "SCHEDULER", "SLUICE_BAD", {"type": "DWRR", "weight": "0"}, {})
    with SessionPool() as pool:
        session = pool.session(fabric.targets()["leaf2"])
        with pytest.raises(SouthboundRejected) as raised:
            session.set([SCHED, bad])
    assert raised.value.code == "UNKNOWN"  # what sonic-gnmi answers a refused Set with
    assert "SCHEDULER|SLUICE_BAD" in raised.value.message
    assert "weight" in raised.value.message
    # All or nothing: the good op of the same request was not written either.
    assert "SCHEDULER|SLUICE_SCHED_9" not in fabric.switches["leaf2"].config_db()


class ConcurrencyProbe:
    """Highest number of Set RPCs the server was serving at the same moment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current = 0
        self.highest = 0

    def enter(self) -> None:
        with self._lock:
            self.current += 1
            self.highest = max(self.highest, self.current)

    def leave(self) -> None:
        with self._lock:
            self.current -= 1


class ProbedGnmiService(GnmiService):
    """vsonic's real gNMI service, recording how many Sets overlap."""

    def __init__(self, *args: Any, probe: ConcurrencyProbe, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._probe = probe

    def Set(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._probe.enter()
        try:
            return super().Set(request, context)
        finally:
            self._probe.leave()


@pytest.fixture
def fleet_server(
    switch_tls: TlsFiles,
) -> Iterator[tuple[int, dict[str, MemoryStore], ConcurrencyProbe, str]]:
    """One vsonic process serving six switch targets from memory (fleet mode), over TLS."""
    password = secrets.token_hex(8)
    stores = {f"rack{i}": MemoryStore() for i in range(6)}
    for name, store in stores.items():
        seed_store(store, SwitchSeed(hostname=name, ports=default_ports(2)))
    probe = ConcurrencyProbe()
    service = ProbedGnmiService(
        Targets([Switch(n, s) for n, s in stores.items()], fleet=True),
        Clock(),
        Credentials("admin", password),
        probe=probe,
    )
    running = start_server("127.0.0.1:0", service, switch_tls)
    try:
        yield running.port, stores, probe, password
    finally:
        running.stop(grace_s=0.2)


def test_fleet_targets_share_one_channel_and_stay_apart(fleet_server, switch_tls: TlsFiles) -> None:
    port, stores, probe, password = fleet_server
    tls = session_tls(insecure=False, ca=switch_tls.cert)
    secret = SecretStr(password)
    targets = [
        GnmiTarget(name, "127.0.0.1", port, "admin", secret, tls=tls, prefix_target=name)
        for name in stores
    ]
    # Each target gets its own scheduler weight, so a write that reached the wrong target
    # would show up in the read-back of the right one.
    desired = {
        t.name: {("SCHEDULER", "SLUICE_SCHED_1"): {"type": "DWRR", "weight": str(10 + i)}}
        for i, t in enumerate(targets)
    }
    plans = {name: plan_switch(name, config, {}) for name, config in desired.items()}
    with SessionPool(max_in_flight=1) as pool:
        sessions = pool.sessions(targets)
        assert pool.channel_count == 1
        results = apply_fleet(plans, sessions, max_parallel=6)
        assert {r.status for r in results.values()} == {"applied_verified"}
        for name, session in sessions.items():
            assert session.get_tables(["SCHEDULER"]) == desired[name]
    for name, store in stores.items():
        assert (
            store.read_hash(4, "SCHEDULER|SLUICE_SCHED_1")
            == desired[name][("SCHEDULER", "SLUICE_SCHED_1")]
        )
    # Six switches applied by six workers, but one in-flight slot: never two Sets at once.
    assert probe.highest == 1


def test_tls_with_the_switch_certificate_works_and_plaintext_does_not(tmp_path: Path) -> None:
    tls = self_signed_tls(tmp_path)
    password = secrets.token_hex(8)
    store = MemoryStore()
    seed_store(store, SwitchSeed(hostname="tls1", ports=default_ports(1)))
    service = GnmiService(
        Targets([Switch("tls1", store)], fleet=False), Clock(), Credentials("admin", password)
    )
    running = start_server("127.0.0.1:0", service, tls=tls)
    secret = SecretStr(password)
    quick = CallPolicy(deadline_s=2.0, retry=RetryPolicy(attempts=1))
    try:
        options = TlsOptions(root_cert=tls.cert, server_name=SERVER_NAME)
        with SessionPool(policy=quick) as pool:
            secure = GnmiTarget("tls1", "127.0.0.1", running.port, "admin", secret, tls=options)
            assert pool.session(secure).capabilities().supports_json_ietf
            plain = GnmiTarget("tls1-plain", "127.0.0.1", running.port, "admin", secret)
            with pytest.raises(SouthboundUnreachable):
                pool.session(plain).capabilities()
            assert pool.channel_count == 2
    finally:
        running.stop(grace_s=0.2)
