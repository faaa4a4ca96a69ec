"""The demo's bad-config step: ECN thresholds far too low for leaf1's traffic are caught by a
health gate on what the traffic does, and the batch is rolled back automatically.

It runs on the switch step's fabric (data planes, agents, worker, collector, Prometheus)
after the agent step. ``bad_config_step``

1. has leaf1's data plane carry an incast into the static-ECN ``rpc`` queue of Ethernet0
   (4 x 25,000 B every 10 ms at 25 Gb/s: bursts peak near 75,000 B, below the intent's
   K = C x RTT x lambda = 125,000 B, so almost nothing is marked);
2. writes a new intent version with ``ecn_lambda`` 0.08 (K = 10,000 B: valid, K is above one
   MTU, but far too low for those bursts);
3. rolls it out leaf1 first with a PromQL gate on the ``rpc`` queue's mark fraction (absolute
   0.2, baseline read before the batch, 6 s soak): after the apply most packets are marked,
   the gate fails and the worker rolls leaf1 back;
4. prints the rolled-back rollout's gate readings (``sluice rollout status``) and the
   dashboard's address, then the intent's versions (``sluice get versions``): the rollback
   rejected the bad version and returned the head to the good one by itself
   (docs/rollouts.md, "Rejected versions"), which the step checks through the API, so the
   operator has nothing to re-apply.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from controller.intent.loader import load_intent_file
from lab.demo_agents import LinkTo, SwitchLink, open_link, poll_counters_every, reload_traffic
from lab.demo_common import BIN, DemoError, Run, Say
from lab.demo_common import run as run_command

BAD_LAMBDA = 0.08
RPC_QUEUE = 6
TRAFFIC = (
    f"rpc port=Ethernet0 queue={RPC_QUEUE} kind=incast flows=4 burst_bytes=25000 period_ms=10\n"
)
RPC_MARKS = 'max(sluice_queue_mark_fraction{switch=~"$switches",class="rpc"})'
GATE = f"rpc_marks:absolute:0.2:{RPC_MARKS}"
SOAK_S = 6
ROLLED_BACK = 11  # sluice rollout start --watch: not clean (docs/rollouts.md)


def bad_intent(intent_file: Path, out: Path) -> Path:
    """``intent_file`` with ``ecn_lambda`` far too low, written to ``out``."""
    document: dict[str, Any] = yaml.safe_load(intent_file.read_text(encoding="utf-8"))
    document.setdefault("fabric", {})["ecn_lambda"] = BAD_LAMBDA
    out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return out


def rpc_threshold(link: SwitchLink) -> int:
    """The marking threshold in force on the ``rpc`` queue (``RPC_QUEUE``) of Ethernet0: its
    WRED profile's ``green_max_threshold``, read from the switch (25 Gb/s on a virtual
    switch's host port, 40 Gb/s on libsaivs's, so K differs)."""
    profile = link.config.hget(f"QUEUE|Ethernet0|{RPC_QUEUE}", "wred_profile")
    k = link.config.hget(f"WRED_PROFILE|{profile}", "green_max_threshold") if profile else None
    if k is None:
        raise DemoError(f"{link.name} has no WRED profile on Ethernet0 queue {RPC_QUEUE}")
    return int(k)


def bad_config_step(
    env: Mapping[str, str],
    intent_file: Path,
    state_dir: Path,
    traffic_file: Path,
    *,
    switch: str,
    run: Run,
    say: Say,
    link_to: LinkTo | None = None,
) -> None:
    """The step (see the module docstring) on the switch ``vsonic up`` started in
    ``state_dir`` (or the one ``link_to`` names: a real switch's stand-in ASIC); raises
    ``DemoError`` if the gate does not fail."""
    full = dict(env)
    sluice = str(BIN / "sluice")
    link = open_link(state_dir, switch, link_to)
    try:
        poll_counters_every(link, 100)
        k = rpc_threshold(link)
        say(f"{switch} now carries an incast into the rpc queue (static ECN, K {k:,} B)")
        reload_traffic(link, traffic_file, TRAFFIC, time.monotonic, time.sleep)
    finally:
        link.close()
    time.sleep(3.0)  # a few scrapes of the traffic under the good thresholds
    bad = bad_intent(intent_file, intent_file.with_name("intent-bad-ecn.yaml"))
    bad_k = round(k * BAD_LAMBDA / load_intent_file(intent_file).fabric.ecn_lambda)
    say(f"a bad change: ecn_lambda {BAD_LAMBDA} puts K at {bad_k:,} B, far below the bursts")
    run([sluice, "apply", "-f", str(bad), "--summary", "--reason",
         "demo: ECN thresholds far too low"], full)  # fmt: skip
    say(f"rolled out {switch} first, gated on the rpc queue's mark fraction (<= 0.2)")
    try:
        run([sluice, "rollout", "start", "--canary", switch, "--batch-size", "2",
             "--gate", GATE, "--soak-s", str(SOAK_S), "--watch", "--interval", "0.5"],
            full)  # fmt: skip
    except DemoError as error:
        if f"exited with {ROLLED_BACK}" not in str(error):
            raise
    else:
        raise DemoError("the bad thresholds passed their gate: the traffic was not marked")
    listed = json.loads(
        run_command([sluice, "rollout", "list", "--output", "json"], full, capture=True)
    )
    rollout = str(max(int(item["id"]) for item in listed))
    shown = json.loads(
        run_command([sluice, "rollout", "show", rollout, "--output", "json"], full, capture=True)
    )
    soaks = [e for e in shown.get("evaluations") or [] if e["stage"] == "soak"]
    if shown["state"] != "rolled_back" or not soaks or soaks[0]["value"] is None:
        # A gate that read nothing fails too; that would not be the traffic's verdict.
        raise DemoError(f"rollout {rollout} did not fail on a measured mark fraction: {soaks}")
    say(f"the gate read a mark fraction of {soaks[0]['value']:.2f} on {switch} after the apply "
        "(> 0.2): the batch was rolled back automatically")  # fmt: skip
    run([sluice, "rollout", "status", rollout], full)
    say(f"the dashboard shows it: {full['SLUICE_API_URL']}/dashboard (rollout {rollout})")
    say("the rollback rejected the bad version and returned the head to the good one: "
        "nothing to re-apply by hand")  # fmt: skip
    run([sluice, "get", "versions"], full)
    versions = json.loads(
        run_command([sluice, "get", "versions", "--output", "json"], full, capture=True)
    )
    intent = json.loads(
        run_command([sluice, "get", "intent", "--output", "json"], full, capture=True)
    )
    check_head_restored(versions, intent, int(rollout))


def check_head_restored(
    versions: Sequence[Mapping[str, Any]], intent: Mapping[str, Any], rollout: int
) -> None:
    """The newest of ``versions`` is the rollback's of ``rollout``, the one before it is
    rejected by that rollout, and the head ``intent`` is not the bad one; ``DemoError`` else."""
    newest = max(versions, key=lambda v: int(v["number"]), default={})
    rejected = [int(v["number"]) for v in versions if v.get("rejected_by_rollout") == rollout]
    if newest.get("author") != "rollback" or f"rollout {rollout} " not in newest.get("reason", ""):
        raise DemoError(f"the head after rollout {rollout} is not the rollback's: {newest}")
    if not rejected:
        raise DemoError(f"no version is marked rejected by rollout {rollout}")
    lam = intent.get("fabric", {}).get("ecn_lambda")
    if lam == BAD_LAMBDA:
        raise DemoError(f"the head version {newest.get('number')} still has ecn_lambda {lam}")
