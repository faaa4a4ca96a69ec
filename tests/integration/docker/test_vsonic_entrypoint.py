"""docker/vsonic-entrypoint.sh run for real (no container engine here, the script does not
need one): it starts a virtual switch, stays in the foreground, and on TERM takes the switch
down; a state file left by a previous run of the container does not stop it from starting."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from vsonic.tether import start_tethered

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "docker" / "vsonic-entrypoint.sh"

pytestmark = pytest.mark.integration


def clean_up_vsonic(process: subprocess.Popen[str], state_dir: Path, env: dict[str, str]) -> None:
    """After a failed test: kill the entry point if it still runs, and let `vsonic down` stop
    whatever it had started (its switches outlive a killed parent)."""
    if process.poll() is None:
        process.kill()
        process.wait(timeout=30)
        vsonic = str(Path(sys.executable).parent / "vsonic")
        subprocess.run([vsonic, "down", "--state-dir", str(state_dir)], check=False, env=env)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.timeout(180)
def test_entrypoint_runs_vsonic_in_the_foreground_and_stops_it_on_term(tmp_path: Path):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    # What a container killed without `vsonic down` leaves behind: a state file naming
    # processes of the previous run. `vsonic up` alone refuses to start over it.
    (state_dir / "state.json").write_text(
        json.dumps({"fleet": False, "gnmi": [], "redis_ports": []})
    )
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "VSONIC_STATE_DIR": str(state_dir),
        "VSONIC_PASSWORD": "lab-password",
    }
    process = start_tethered(
        ["sh", str(ENTRYPOINT), "--switches", "1", "--base-port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:  # `vsonic up` prints its last line once the switch answers
            lines.append(line)
            if "answering" in line:
                break
        assert any("answering" in line for line in lines), "".join(lines)
        assert process.poll() is None, "the entrypoint must stay in the foreground"
        assert accepts(port)
        assert (state_dir / "inventory.yaml").is_file()

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        rest = process.stdout.read()
        assert "stopped 1 gNMI server(s)" in rest, rest
        assert not accepts(port)
        assert not (state_dir / "state.json").exists()
    finally:
        clean_up_vsonic(process, state_dir, env)
