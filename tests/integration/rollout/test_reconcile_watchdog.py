"""Drift repair on a switch whose PFC watchdog table was deleted whole (docs/lossless.md, "A
switch's first PFC watchdog"): SONiC's config updater refuses the table's first entry, so the
reconcile loop writes the rest of the repair, leaves the watchdog unwritten with the command
that starts it in the run's error (what ``GET /api/v1/reconcile`` shows), alerts the
watchdog's drift events, and writes the watchdog back once the operator has started it. Four
vsonic switches (real gRPC, real Redis), runs and drift in PostgreSQL.

vsonic does not model GCU's table validators (it would accept the first entry), so the test
judges what the loop sent: the watchdog stays absent until it is started."""

from __future__ import annotations

import logging

import pytest

from api.schemas.reconcile import ReconcileRunsOut
from tests.support.lossless import with_lossless_storage
from vsonic.db import CONFIG_DB, redis_key
from vsonic.seed import WATCHDOG_GLOBAL, WATCHDOG_INTERVAL, lossless_pools

from .conftest import Controller, full_dump, statuses
from .test_reconcile import ALL, roll_out, service, static_wred_key

pytestmark = [pytest.mark.integration]

STARTED = {redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL): dict(WATCHDOG_INTERVAL)}


def test_drift_repair_leaves_a_deleted_watchdog_to_its_operator_and_repairs_the_rest(
    controller: Controller, caplog: pytest.LogCaptureFixture
) -> None:
    pools = {redis_key(CONFIG_DB, "BUFFER_POOL", k): v for k, v in lossless_pools().items()}
    for switch in controller.fabric.switches.values():
        switch.store.write_atomically(CONFIG_DB, pools | STARTED)
    roll_out(controller, with_lossless_storage(controller.fabric.intent))
    assert statuses(controller.rollouts.get(1)) == dict.fromkeys(ALL, "applied_verified")
    rolled = full_dump(controller.fabric)["leaf1"]
    watchdog = {k: v for k, v in rolled.items() if k.startswith("PFC_WD|Ethernet")}
    assert watchdog

    # Someone deletes leaf1's PFC_WD table whole (GLOBAL too) and moves a WRED threshold.
    redis = controller.fabric.switches["leaf1"].store.client(CONFIG_DB)
    redis.delete(*[f"PFC_WD|{WATCHDOG_GLOBAL}", *watchdog])
    wred = f"WRED_PROFILE|{static_wred_key(controller, 'leaf1')}"
    wanted = redis.hget(wred, "green_max_threshold")
    redis.hset(wred, "green_max_threshold", "999999")

    reconciler = service(controller)
    loop = reconciler.loop(controller.access())
    caplog.set_level(logging.INFO, logger="controller.reconcile.loop")
    loop.run_pass()
    loop.run_pass()

    # The threshold is repaired, the watchdog is not written.
    assert redis.hget(wred, "green_max_threshold") == wanted
    assert not redis.keys("PFC_WD|*")
    shown = {r.switch: r for r in ReconcileRunsOut.of(reconciler.last_runs()).items}
    assert {n: shown[n].status for n in ALL} == {
        "leaf1": "alerted",  # the second pass: only the watchdog is left
        "leaf2": "converged",
        "spine1": "converged",
        "spine2": "converged",
    }
    error = shown["leaf1"].error or ""
    assert error.startswith("PFC_WD not corrected: the switch runs no PFC watchdog")
    assert "`sudo pfcwd interval 200`" in error
    assert "the reconcile loop's next pass writes it back" in error
    events = reconciler.drift(limit=100, offset=0, switch="leaf1").items
    first, second = sorted({e.run_id for e in events})
    of_first = {(e.table, e.key, e.field): e.action for e in events if e.run_id == first}
    assert of_first.pop(("WRED_PROFILE", wred.split("|", 1)[1], "green_max_threshold")) == (
        "corrected"
    )
    assert {(t, k) for t, k, _ in of_first} == {("PFC_WD", k.split("|")[1]) for k in watchdog}
    assert set(of_first.values()) == {"alerted"}
    assert {e.action for e in events if e.run_id == second} == {"alerted"}
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1  # two passes, one warning
    assert said[0].startswith("reconcile leaf1 (version 1): PFC_WD not corrected")

    # The operator starts it (`sudo pfcwd interval 200`): the next pass writes the ports'.
    controller.fabric.switches["leaf1"].store.write_atomically(CONFIG_DB, dict(STARTED))
    loop.run_pass()
    last = {r.switch: r for r in reconciler.last_runs()}
    assert (last["leaf1"].status, last["leaf1"].error) == ("corrected", None)
    after = full_dump(controller.fabric)["leaf1"]
    assert {k: v for k, v in after.items() if k.startswith("PFC_WD|Ethernet")} == watchdog
