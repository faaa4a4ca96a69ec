"""TLS and password failures against SONiC's own gNMI server, named where an operator looks:
the collector's log (once, however often the stream retries), its metrics
(``sluice_switch_stream_fault_info``) and the worker's apply result. gRPC reports a
certificate that does not verify as UNAVAILABLE, like a closed port; the cause is in its
details. The server serves TLS with a certificate from the bundle's ``tls-gen.sh`` and
checks passwords (``-client_auth=password``, through PAM, which knows no ``admin`` in the
server's namespace: every password is refused)."""

from __future__ import annotations

import asyncio
import logging
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from controller.collector import Collector
from controller.intent.loader import parse_intent
from controller.intent.models import Intent
from controller.reconcile.access import GnmiAccess
from controller.reconcile.shard import StaticShard
from controller.sonic.compile import compile_switch
from controller.sonic.diff import plan_switch
from controller.southbound.gnmi import GnmiTarget, SessionPool, TlsOptions
from controller.southbound.subscribe import StreamPolicy
from lab.realsonic import RealSwitch, SonicBundle, SwitchParts
from tests.realsonic.streams import wait_for

from .conftest import StartSwitch

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(300)]
PASSWORD = "not-the-switchs"


@pytest.fixture(scope="module")
def pki(sonic_bundle: SonicBundle, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two test PKIs from the bundle's ``tls-gen.sh``: the switch's, and another CA's."""
    folders = {}
    for name in ("switch", "other"):
        folder = tmp_path_factory.mktemp(f"pki-{name}")
        script = sonic_bundle.gnmi / "scripts" / "tls-gen.sh"
        subprocess.run(["bash", str(script), str(folder)], check=True, capture_output=True)
        folders[name] = folder
    return folders


@pytest.fixture(scope="module")
def switch(start_switch: StartSwitch, pki: dict[str, Path]) -> RealSwitch:
    own = pki["switch"]
    flags = (
        f"-server_crt={own / 'server.crt'}",
        f"-server_key={own / 'server.key'}",
        f"-ca_crt={own / 'ca.crt'}",
        "-allow_no_client_auth",  # server-side TLS; the client proves itself by password
        "-client_auth=password",
    )
    return start_switch(SwitchParts(orchagent=False, buffermgrd=False, gcu=False, gnmi_flags=flags))


def _intent(switch: RealSwitch) -> Intent:
    return parse_intent(
        {
            "fabric": {"base_rtt_us": 40, "port_buffer_bytes": 4_000_000},
            "service_classes": [
                {
                    "name": "storage",
                    "dscp": [10],
                    "queue": 3,
                    "scheduling": {"type": "DWRR", "weight": 50},
                    "ecn": "per-queue-minimum",
                },
            ],
            "switches": [
                {
                    "name": "leaf1",
                    "role": "leaf",
                    "gnmi": {"address": "127.0.0.1", "port": switch.gnmi_port},
                    "credential_ref": "env:UNUSED",
                    "ports": [{"name": "Ethernet0", "speed_gbps": 25}],
                }
            ],
        }
    )


def _target(switch: RealSwitch, ca: Path) -> GnmiTarget:
    tls = TlsOptions(root_cert=ca)
    return GnmiTarget("leaf1", "127.0.0.1", switch.gnmi_port, "admin", SecretStr(PASSWORD), tls=tls)


def _collector_faults(intent: Intent, target: GnmiTarget) -> str:
    """Run the collector's streams until both report a fault and have retried a few times;
    its metrics then."""

    async def scenario() -> str:
        collector = Collector(StaticShard(0, 1), StreamPolicy(), window_ns=0, rand=random.random)
        collector.sync(intent, {"leaf1": target})
        try:
            await asyncio.to_thread(
                wait_for,
                "both streams' faults",
                lambda: collector.metrics.render().count(b"sluice_switch_stream_fault_info{") == 2,
            )
            await asyncio.sleep(3)  # backoff from 0.2 s: several more failures meanwhile
            return collector.metrics.render().decode()
        finally:
            await collector.close()

    return asyncio.run(scenario())


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.WARNING, logger="controller.southbound.subscribe"):
        yield caplog


def _apply(intent: Intent, tls: TlsOptions) -> tuple[str, str | None]:
    switch = intent.switches[0]
    plan = plan_switch("leaf1", compile_switch(intent, switch), {})
    with SessionPool() as pool:
        result = GnmiAccess(pool, lambda ref: SecretStr(PASSWORD), tls=tls).apply(switch, plan)
    return result.status, result.reason


def test_a_certificate_the_client_cannot_verify_is_named_not_just_unavailable(
    switch: RealSwitch, pki: dict[str, Path], warnings: pytest.LogCaptureFixture
) -> None:
    intent = _intent(switch)
    other_ca = pki["other"] / "ca.crt"
    exposition = _collector_faults(intent, _target(switch, other_ca))
    for stream in ("counters", "agent_state"):
        assert (
            f'sluice_switch_stream_fault_info{{switch="leaf1",stream="{stream}",'
            'reason="tls_certificate"} 1'
        ) in exposition
    lines = [r.getMessage() for r in warnings.records]
    assert len(lines) == 2, lines  # one per stream, however many times each retried
    counters = next(line for line in lines if "counters stream" in line)
    assert counters.startswith("leaf1: counters stream (COUNTERS_DB/localhost/{")
    assert "tls_certificate: certificate verify failed: unable to get local issuer" in counters
    status, reason = _apply(intent, TlsOptions(root_cert=other_ca))
    assert status == "unreachable"
    assert reason is not None
    assert "certificate verify failed: unable to get local issuer certificate" in reason


def test_a_refused_password_is_named(
    switch: RealSwitch, pki: dict[str, Path], warnings: pytest.LogCaptureFixture
) -> None:
    intent = _intent(switch)
    own_ca = pki["switch"] / "ca.crt"
    exposition = _collector_faults(intent, _target(switch, own_ca))
    assert (
        'sluice_switch_stream_fault_info{switch="leaf1",stream="counters",reason="auth_refused"} 1'
    ) in exposition
    lines = [r.getMessage() for r in warnings.records]
    assert len(lines) == 2, lines
    assert all("auth_refused: credentials refused (Unauthenticated)" in line for line in lines)
    assert all(PASSWORD not in line for line in lines)
    status, reason = _apply(intent, TlsOptions(root_cert=own_ca))
    assert (status, reason) == ("failed", "UNAUTHENTICATED: credentials refused (Unauthenticated)")
