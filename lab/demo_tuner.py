"""The demo's tuner step: the traffic on leaf1 changes, the tuner sees it through the
collector and Prometheus, proposes new DWRR weights (and whatever else its rules find) and
applies them through a health-gated rollout, in ``auto`` mode (docs/tuning.md).

It runs on the switch step's fabric (data planes, agents, worker, collector, Prometheus)
after the agent step and before the bad-config step. ``tuner_step``

1. has leaf1's data plane carry a new schedule on Ethernet0: ``storage`` backlogged (two
   DCTCP senders), ``analytics`` a light unresponsive stream (about 0.5 Gb/s, far below its
   30 % share of 25 Gb/s), ``best-effort`` idle; then waits ``WINDOW_S`` so Prometheus
   holds a whole tuning window of only that traffic;
2. writes a new intent version that turns the tuner on: ``fabric.tuning`` with ``mode:
   auto``, a ``WINDOW_S`` window and the auto rollout's batches and gates
   (``fabric.tuning.rollout``: batches of ``BATCH_SIZE`` switches, a ``SOAK_S`` soak, gates
   on drops and on agents falling back; the idle switches' agents report ``idle``, which is
   no fault, so none may fall back and the idle switches pass on 0 drops), and the DWRR
   weight ranges the tuner may move the tenants in;
3. waits for the outcome of the worker's tuning pass (it runs at once: the tuner has not run
   before): in auto mode a pass stores its proposal ``pending`` and approves it in a second
   step, so the step waits until the proposal has left ``pending`` (``wait_for_pass``), never
   judging a pass half done; an approved one has its gated rollout started by the worker, which
   the step watches to its end (``sluice rollout watch``) and whose gate readings it prints;
4. prints what changed and why: ``sluice tune explain`` (each change's rule, inputs and
   outputs; held verdicts say why the rest did not move);
5. turns the tuner off again (the head with ``fabric.tuning.mode: off``) and rolls that out
   (nothing to write on the switches), so the fabric runs a version without the tuner: the
   next steps' changes are the operator's alone, and a rollback returns the head to a version
   whose tuner does not start rollouts of its own.

What it adds to the demo: ``WINDOW_S`` of traffic, then the pass and a rollout of two
batches, each soaked ``SOAK_S`` (about 40 s in all here).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

from lab.demo_agents import LinkTo, SwitchLink, open_link, poll_counters_every, reload_traffic
from lab.demo_common import BIN, DemoError, Run, Say

WINDOW_S = 20
# Two batches of the demo's four switches: leaf1 (which carries the traffic) with leaf2, then
# the spines. An idle switch publishes no counter changes, so it has no drops reading of its
# own; its agent reports idle, and the drops gate counts an idle switch as 0 (docs/rollouts.md),
# so the spines' batch passes on 0 rather than failing on no value.
BATCH_SIZE = 2
SOAK_S = 5
PASS_WAIT_S = 60.0
TRAFFIC = (
    "storage port=Ethernet0 dscp=10 kind=dctcp flows=2 packet_bytes=9000 rtt_us=40\n"
    "analytics port=Ethernet0 dscp=18 kind=onoff rate_gbps=1 on_ms=50 off_ms=50\n"
)
# The ranges the tuner may move the tenants' weights in (the example intent gives none, and
# a class without a range never moves); the same as bench/tuning_twin.py's.
WEIGHT_RANGES = {"storage": (20, 70), "analytics": (15, 75), "best-effort": (10, 40)}
TUNING = {
    "mode": "auto",
    "window_s": WINDOW_S,
    # No agent may fall back: the idle switches' agents report idle, not a fallback.
    "rollout": {
        "batch_size": BATCH_SIZE,
        "soak_s": SOAK_S,
        "on_fail": "rollback_all",
        "agent_fallback": "none",
    },
}


def tuned_intent(intent_file: Path, out: Path) -> Path:
    """``intent_file`` with the tuner on (``TUNING``) and the tenants' weight ranges."""
    document: dict[str, Any] = yaml.safe_load(intent_file.read_text(encoding="utf-8"))
    document.setdefault("fabric", {})["tuning"] = TUNING
    for service_class in document.get("service_classes", []):
        bounds = WEIGHT_RANGES.get(service_class["name"])
        if bounds is not None:
            scheduling = service_class["scheduling"]
            scheduling["weight_min"], scheduling["weight_max"] = bounds
    out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return out


def tuner_off(document: Mapping[str, Any]) -> dict[str, Any]:
    """The intent ``document`` (as ``GET /intent`` answers it) with the tuner off."""
    found = copy.deepcopy(dict(document))
    found.setdefault("fabric", {}).setdefault("tuning", {})["mode"] = "off"
    return found


def wait_for_pass(
    read: Callable[[], list[dict[str, Any]]],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    timeout_s: float = PASS_WAIT_S,
) -> dict[str, Any]:
    """The newest tuning proposal, once the worker's pass has an outcome. In auto mode a
    pass stores its proposal ``pending`` and approves it in a second step (controller/services/
    tuning.py), so ``pending`` is the pass half done, as are ``queued`` and ``running`` (a
    searching pass the worker runs): read again until it is ``approved``, ``no_change``,
    ``stale`` or ``rejected``."""
    deadline = clock() + timeout_s
    newest: dict[str, Any] | None = None
    while clock() < deadline:
        proposals = read()
        if proposals:
            newest = max(proposals, key=lambda p: int(p["id"]))
            if newest["state"] not in ("queued", "running", "pending"):
                return newest
        sleep(0.5)
    if newest is not None:
        raise DemoError(
            f"the tuner's proposal {newest['id']} was still pending after {timeout_s:.0f} s: "
            "auto mode approves at once; see worker.log"
        )
    raise DemoError(f"the worker made no tuning pass within {timeout_s:.0f} s; see worker.log")


def tuner_rollout(rollouts: list[dict[str, Any]], version: int) -> dict[str, Any] | None:
    """The rollout the tuner started for ``version``, if it has started one."""
    found = [r for r in rollouts if r["to_version"] == version and r.get("created_by") == "tuner"]
    return max(found, key=lambda r: int(r["id"])) if found else None


def tuner_step(
    env: Mapping[str, str],
    intent_file: Path,
    state_dir: Path,
    traffic_file: Path,
    *,
    switch: str,
    run: Run,
    say: Say,
    sleep: Callable[[float], None] = time.sleep,
    link_to: LinkTo | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The step (see the module docstring) on the switch ``vsonic up`` started in
    ``state_dir`` (or the one ``link_to`` names: a real switch's stand-in ASIC); returns the
    proposal and its rollout as the API shows them. Raises ``DemoError`` when the tuner
    changes nothing or its rollout fails."""
    full = dict(env)
    api = httpx.Client(
        base_url=f"{full['SLUICE_API_URL']}/api/v1",
        headers={"Authorization": f"Bearer {full['SLUICE_API_TOKEN']}"},
        timeout=10,
    )
    try:
        link = open_link(state_dir, switch, link_to)
        return _step(full, api, intent_file, link, traffic_file, run, say, sleep)
    finally:
        api.close()


def _step(
    full: dict[str, str],
    api: httpx.Client,
    intent_file: Path,
    link: SwitchLink,
    traffic_file: Path,
    run: Run,
    say: Say,
    sleep: Callable[[float], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    sluice = str(BIN / "sluice")

    def read(path: str) -> Any:
        answer = api.get(path)
        answer.raise_for_status()
        return answer.json()

    try:
        poll_counters_every(link, 100)
        say(f"the traffic on {link.name} Ethernet0 changes: storage backlogged (2 DCTCP senders), "
            "analytics a light 0.5 Gb/s stream, best-effort idle")  # fmt: skip
        reload_traffic(link, traffic_file, TRAFFIC, time.monotonic, sleep)
    finally:
        link.close()
    say(f"{WINDOW_S} s of it for Prometheus to hold one whole tuning window")
    sleep(WINDOW_S)
    tuned = tuned_intent(intent_file, intent_file.with_name("intent-tuner.yaml"))
    say(f"the operator turns the tuner on: mode auto, a {WINDOW_S} s window, each tuned version "
        f"rolled out {BATCH_SIZE} switches a batch, soaked {SOAK_S} s and gated on drops and on "
        "no agent falling back (an idle one is not); the tenants' weights may move in storage "
        "20..70, analytics 15..75, best-effort 10..40")  # fmt: skip
    run([sluice, "apply", "-f", str(tuned), "--summary", "--reason",
         "demo: the tuner on, in auto mode"], full)  # fmt: skip
    say("the worker's tuning pass reads the window from Prometheus and proposes")
    proposal = wait_for_pass(lambda: read("/tuning/proposals"), time.monotonic, sleep)
    if proposal["state"] != "approved" or not proposal.get("new_version"):
        run([sluice, "tune", "explain", str(proposal["id"])], full)
        raise DemoError(f"the tuner's pass changed nothing (proposal {proposal['state']})")
    version = int(proposal["new_version"])
    rollout = _wait_for_rollout(lambda: read("/rollouts?limit=20")["items"], version, sleep)
    say(f"proposal {proposal['id']} was approved by the tuner (auto) as version {version}; "
        f"its gated rollout {rollout['id']} runs")  # fmt: skip
    run([sluice, "rollout", "watch", str(rollout["id"]), "--interval", "0.5"], full)
    run([sluice, "rollout", "status", str(rollout["id"])], full)
    say("what changed and why: each change's rule, inputs and outputs (the evidence)")
    run([sluice, "tune", "explain", str(proposal["id"])], full)
    done = read(f"/rollouts/{rollout['id']}")
    off = intent_file.with_name("intent-tuner-off.yaml")
    off.write_text(yaml.safe_dump(tuner_off(read("/intent")["intent"]), sort_keys=False))
    say("the operator turns the tuner off again and rolls that out (nothing changes on the "
        "switches): the next changes are the operator's")  # fmt: skip
    run([sluice, "apply", "-f", str(off), "--summary", "--reason", "demo: the tuner off"], full)
    run([sluice, "rollout", "start", "--batch-size", "4", "--watch", "--interval", "0.5"], full)
    return proposal, done


def _wait_for_rollout(
    read: Callable[[], list[dict[str, Any]]],
    version: int,
    sleep: Callable[[float], None],
    timeout_s: float = PASS_WAIT_S,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = tuner_rollout(read(), version)
        if found is not None:
            return found
        sleep(0.5)
    raise DemoError(
        f"the tuner wrote version {version} but started no rollout of it within "
        f"{timeout_s:.0f} s (a failed pre-check or another rollout; see worker.log)"
    )
