"""``python -m controller.worker`` as a real process: it drives a rollout to the virtual
switches, stops cleanly on SIGTERM between batches, and a new worker process finishes what
the first left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from controller.services.rollouts import RolloutInfo, RolloutPolicy
from vsonic.tether import start_tethered

from .conftest import OPERATOR, Controller, wait_for

ALL = ("leaf1", "leaf2", "spine1", "spine2")
WAIT_S = 120.0  # an upper bound for a wait on a loaded machine, never a pass/fail measure


@contextmanager
def worker_process(
    db_url: str, password: str, log: Path, ca: Path
) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "SLUICE_GNMI_PASSWORD": password,
        "SLUICE_GNMI_TLS_CA": str(ca),  # the switches serve TLS, as every switch session is
        "SLUICE_WORKER_POLL_S": "0.1",
        "SLUICE_GNMI_DEADLINE_S": "5",
    }
    with log.open("ab") as out:
        process = start_tethered(
            [sys.executable, "-m", "controller.worker"], env=env, stdout=out, stderr=out
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=WAIT_S)


def verified(info: RolloutInfo) -> set[str]:
    return {r.switch for r in info.results if r.status == "applied_verified"}


def test_a_new_worker_process_finishes_what_a_stopped_one_left(
    controller: Controller, db_url: str, tmp_path: Path
) -> None:
    controller.store_intent(controller.fabric.intent)
    # spine1 is down: with a budget of 0 the first worker halts after spine1's batch, so
    # it is certainly stopped with the rollout unfinished (spine2 never reached).
    controller.fabric.switches["spine1"].stop()
    info = controller.rollouts.start(
        RolloutPolicy(
            None, canary=("leaf1",), batch_size=1, failure_budget=0, allow_port_flaps=True
        ),
        actor=OPERATOR,
    )
    log = tmp_path / "worker.log"
    password = controller.fabric.password
    tls = controller.fabric.tls
    assert tls is not None
    assert tls.root_cert is not None
    ca = tls.root_cert
    with worker_process(db_url, password, log, ca) as first:
        wait_for("the halt", lambda: controller.rollouts.get(info.id).state == "halted")
        assert stop(first) == 0
    halted = controller.rollouts.get(info.id)
    assert verified(halted) == {"leaf1", "leaf2"}
    assert controller.fabric.switches["spine2"].sets.count == 0
    done_before = {name: controller.fabric.switches[name].sets.count for name in ("leaf1", "leaf2")}

    controller.fabric.switches["spine1"].start()
    controller.rollouts.resume(info.id, actor=OPERATOR)
    with worker_process(db_url, password, log, ca) as second:
        wait_for("completion", lambda: controller.rollouts.get(info.id).state == "completed")
        assert stop(second) == 0
    assert verified(controller.rollouts.get(info.id)) == set(ALL)
    # Switches the first worker finished were not written again by the second.
    assert {n: controller.fabric.switches[n].sets.count for n in done_before} == done_before
    text = log.read_text()
    assert text.count("worker: started") == 2
    assert text.count("worker: stopped") == 2
    assert "SIGTERM received" in text
    assert f"rollout {info.id}: halted" in text
    assert f"rollout {info.id}: completed" in text
    assert password not in text
