"""The compose lab's switches, reached the way the controller's containers reach them: the
vswitch service's entry point and command (docker-compose.yml) run inside a network
namespace of their own, standing for the container's, and a gNMI client in another
namespace, standing for the worker's, dials ``vswitch:<port>`` over TLS, the name resolved
as compose's DNS would (an /etc/hosts entry for that namespace) and the server checked
against the certificate from the state folder, as SLUICE_GNMI_TLS_CA does.

Nothing listens on this machine's own namespace: ``--listen 0.0.0.0`` binds the interfaces
of the switch's namespace only."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from lab import netns
from tests.integration.docker.test_vsonic_entrypoint import clean_up_vsonic
from tests.unit.test_compose import OPERATOR_VARIABLES, command_words, interpolate
from vsonic.tether import start_tethered
from vsonic.tls import certificate_dns_names

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "docker" / "vsonic-entrypoint.sh"
PASSWORD = "lab-password"

pytestmark = pytest.mark.integration

# Dialled from the client's namespace: a Capabilities call by name, over TLS.
CLIENT = """
import sys
import grpc
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc
target, ca, password = sys.argv[1], sys.argv[2], sys.argv[3]
trust = grpc.ssl_channel_credentials(root_certificates=open(ca, "rb").read())
with grpc.secure_channel(target, trust) as channel:
    answer = gnmi_pb2_grpc.gNMIStub(channel).Capabilities(
        gnmi_pb2.CapabilityRequest(),
        metadata=[("username", "admin"), ("password", password)],
        timeout=10,
    )
print(answer.gNMI_version)
"""


def vswitch_command() -> list[str]:
    """The vswitch service's command with one switch instead of four."""
    text = (ROOT / "docker-compose.yml").read_text()
    compose = yaml.safe_load(interpolate(text, dict(OPERATOR_VARIABLES)))
    words = command_words(compose["services"]["vswitch"]["command"])
    words[words.index("--switches") + 1] = "1"
    return words


@pytest.fixture
def two_namespaces() -> Iterator[netns.Fabric]:
    """A namespace for the switch (the fabric's one host) and one for the client (its control
    namespace), on one bridge; the client resolves ``vswitch`` to the switch's address."""
    if os.geteuid() != 0:
        pytest.fail("needs root for network namespaces", pytrace=False)
    with netns.running(1, names=["vswitch"]) as fabric:
        # `ip netns exec NS` bind-mounts /etc/netns/NS/* over /etc/* (ip-netns(8)).
        etc = Path("/etc/netns") / fabric.layout.control_netns
        etc.mkdir(parents=True)
        try:
            (etc / "hosts").write_text(f"{fabric.host('vswitch').address} vswitch\n")
            yield fabric
        finally:
            shutil.rmtree(etc)


@pytest.mark.timeout(180)
def test_the_lab_switch_answers_by_its_service_name_from_another_namespace(
    two_namespaces: netns.Fabric, tmp_path: Path
) -> None:
    fabric = two_namespaces
    state_dir = tmp_path / "state"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "VSONIC_STATE_DIR": str(state_dir),
        "VSONIC_PASSWORD": PASSWORD,
    }
    words = vswitch_command()
    port = words[words.index("--base-port") + 1]
    process = start_tethered(
        fabric.host_exec("vswitch", ["sh", str(ENTRYPOINT), *words]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if "answering" in line:
                break
        assert any("answering" in line for line in lines), "".join(lines)

        cert = state_dir / "tls" / "server.crt"
        assert "vswitch" in certificate_dns_names(cert)
        inventory = yaml.safe_load((state_dir / "inventory.yaml").read_text())
        assert inventory["switches"][0]["gnmi"] == {"address": "vswitch", "port": int(port)}
        dialled = subprocess.run(
            fabric.control_exec(
                [sys.executable, "-c", CLIENT, f"vswitch:{port}", str(cert), PASSWORD]
            ),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert dialled.returncode == 0, dialled.stderr[-2000:]
        assert dialled.stdout.strip(), dialled.stdout

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        clean_up_vsonic(process, state_dir, env)
