"""Fleet mode: one gNMI server, many switch targets chosen by the prefix target."""

from __future__ import annotations

from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest
from pygnmi.client import gNMIclient, gNMIException  # type: ignore[import-untyped]

from tests.integration.vsonic.conftest import call_with_timeout, status_code, tls_client
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports

CFG = "/sonic-db:CONFIG_DB/localhost"
CREDS = Credentials("admin", "fleet-test-password")


@pytest.fixture
def fleet_client(switch_tls: TlsFiles) -> Iterator[gNMIclient]:
    targets = fleet_targets(["vs1", "vs2"], default_ports(2))
    running = start_server("127.0.0.1:0", GnmiService(targets, Clock(), CREDS), switch_tls)
    client = tls_client(running.port, switch_tls, CREDS)
    try:
        call_with_timeout(client.connect)
        yield client
    finally:
        client.close()
        running.stop(grace_s=0.5)


def _get(client: gNMIclient, target: str, path: str) -> object:
    reply = call_with_timeout(client.get, path=[path], target=target, encoding="json_ietf")
    return reply["notification"][0]["update"][0]["val"]


def test_two_targets_are_configured_independently(fleet_client: gNMIclient) -> None:
    profile = {"green_min_threshold": "1000", "green_max_threshold": "2000"}
    call_with_timeout(
        fleet_client.set,
        update=[(f"{CFG}/WRED_PROFILE/p", profile)],
        target="vs1",
        encoding="json_ietf",
    )
    assert _get(fleet_client, "vs1", f"{CFG}/WRED_PROFILE") == {"p": profile}
    # vs2 has no WRED_PROFILE table: a Get of it is NOT_FOUND, as sonic-gnmi answers.
    with pytest.raises(gNMIException, match="Failed to find CONFIG_DB"):
        _get(fleet_client, "vs2", f"{CFG}/WRED_PROFILE")
    # Each target was seeded with its own name.
    assert _get(fleet_client, "vs2", f"{CFG}/DEVICE_METADATA/localhost/hostname") == "vs2"


def test_validation_is_per_target(fleet_client: gNMIclient) -> None:
    profile = {"green_min_threshold": "1000"}
    call_with_timeout(
        fleet_client.set, update=[(f"{CFG}/WRED_PROFILE/p", profile)], target="vs1",
        encoding="json_ietf",
    )  # fmt: skip
    # vs2 has no profile p, so a queue there may not reference it.
    with pytest.raises(gNMIException) as caught:
        call_with_timeout(
            fleet_client.set, update=[(f"{CFG}/QUEUE/Ethernet0|3", {"wred_profile": "p"})],
            target="vs2", encoding="json_ietf",
        )  # fmt: skip
    assert "references WRED_PROFILE 'p', which does not exist" in str(caught.value)


@pytest.mark.parametrize(("target", "message"), [("vs9", "no switch named 'vs9'"),
                                                 (None, "set the gNMI prefix target")])  # fmt: skip
def test_unknown_or_missing_target_is_not_found(
    fleet_client: gNMIclient, target: str | None, message: str
) -> None:
    with pytest.raises(gNMIException) as caught:
        call_with_timeout(fleet_client.get, path=[f"{CFG}/PORT"], target=target,
                          encoding="json_ietf")  # fmt: skip
    assert status_code(caught.value) == grpc.StatusCode.NOT_FOUND
    assert message in str(caught.value)
