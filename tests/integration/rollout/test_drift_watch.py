"""Drift detection by ON_CHANGE (controller/reconcile/watch.py) against real vsonic switches
over TLS (real Redis, real gRPC) and a real PostgreSQL: drift written straight into a
switch's Redis, behind sluice's back, is reported by the watcher and corrected by the loop
with no periodic pass in between (the audit is a day away).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from controller.reconcile.watch import (
    AuditPolicy,
    DriftInbox,
    WatchedReconcile,
    WatcherThread,
    WatchPolicy,
    WatchState,
)
from controller.services.reconcile import SqlReconcileStore

from .conftest import Controller, wait_for
from .test_reconcile import ALL, roll_out, service, static_wred_key, with_reconcile
from .test_worker import worker_process

DAY_S = 86_400.0
INTERVAL_S = 600.0  # the intent's reconcile interval: the fallback's period


@dataclass
class Reports:
    """Every (switch, table) the watcher reported, then handed to the worker's inbox."""

    inbox: DriftInbox = field(default_factory=DriftInbox)
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, switch: str, table: str | None) -> None:
        with self.lock:
            self.seen.append((switch, table))
        self.inbox.on_drift(switch, table)

    def of(self, switch: str) -> list[str | None]:
        with self.lock:
            return [table for name, table in self.seen if name == switch]


@contextmanager
def watching(controller: Controller) -> Iterator[tuple[WatchedReconcile, WatcherThread, Reports]]:
    """The intent rolled out, the watcher on every switch, the first (full) pass done."""
    roll_out(controller, with_reconcile(controller.fabric.intent, interval_s=INTERVAL_S))
    reports = Reports()
    # Quick retries: some tests stop a switch on purpose.
    policy = WatchPolicy(debounce_s=0.02)
    watcher = WatcherThread(reports, policy, rand=random.Random(3).random)
    try:
        watched = WatchedReconcile(
            service(controller).loop(controller.access()),
            watcher,
            reports.inbox,
            targets=controller.fabric.targets,
            policy=SqlReconcileStore(controller.sessions).policy,
            rand=random.Random(5).random,
            audit=AuditPolicy(audit_s=DAY_S, refresh_s=DAY_S),
        )
        first = watched.tick(0.0)
        assert {r.switch: r.status for r in first} == dict.fromkeys(ALL, "converged")
        yield watched, watcher, reports
    finally:
        watcher.close()


def covered(watcher: WatcherThread, name: str, state: WatchState = WatchState.WATCHING) -> bool:
    return watcher.states().get(name) is state


def test_drift_behind_sluices_back_is_reported_and_corrected_without_a_pass(
    controller: Controller,
) -> None:
    with watching(controller) as (watched, watcher, reports):
        wait_for("every switch watched", lambda: all(covered(watcher, n) for n in ALL))
        key = static_wred_key(controller, "leaf1")
        redis = controller.fabric.switches["leaf1"].store.client(4)
        wanted = redis.hget(f"WRED_PROFILE|{key}", "green_max_threshold")
        # A threshold the agent moves (not drift), then a stray entry on the same stream: once
        # the stray is reported, the agent's move would have been too, had it counted.
        redis.hset("WRED_PROFILE|SLUICE_Q_Ethernet0_3", "green_min_threshold", "40000")
        redis.hset("SCHEDULER|SLUICE_SCHED_STRAY", mapping={"type": "DWRR", "weight": "5"})
        wait_for("the stray reported", lambda: "SCHEDULER" in reports.of("leaf1"))
        assert reports.of("leaf1") == ["SCHEDULER"]
        redis.hset(f"WRED_PROFILE|{key}", "green_max_threshold", "999999")
        wait_for("the threshold reported", lambda: "WRED_PROFILE" in reports.of("leaf1"))
        assert all(not reports.of(name) for name in ("leaf2", "spine1", "spine2"))

        runs = watched.tick(1.0)  # the audit is a day away: only what drifted is read
        assert [(r.switch, r.status) for r in runs] == [("leaf1", "corrected")]
        assert {(d.table, d.key) for d in runs[0].drift} == {
            ("WRED_PROFILE", key),
            ("SCHEDULER", "SLUICE_SCHED_STRAY"),
        }
        assert redis.hget(f"WRED_PROFILE|{key}", "green_max_threshold") == wanted
        assert not redis.exists("SCHEDULER|SLUICE_SCHED_STRAY")
        # The agent's threshold is left where the agent put it.
        assert redis.hget("WRED_PROFILE|SLUICE_Q_Ethernet0_3", "green_min_threshold") == "40000"
        assert watched.audit_at is not None
        assert watched.audit_at > DAY_S / 2


def test_a_restarted_switch_is_resubscribed_and_what_changed_while_down_is_reconciled(
    controller: Controller,
) -> None:
    with watching(controller) as (watched, watcher, reports):
        wait_for("every switch watched", lambda: all(covered(watcher, n) for n in ALL))
        leaf2 = controller.fabric.switches["leaf2"]
        leaf2.stop()
        wait_for("the stream seen down", lambda: not covered(watcher, "leaf2"))
        redis = leaf2.store.client(4)
        redis.hset("SCHEDULER|SLUICE_SCHED_STRAY", mapping={"type": "DWRR", "weight": "5"})
        leaf2.start()  # same port, a fresh gNMI server

        wait_for("leaf2 watched again", lambda: covered(watcher, "leaf2"))
        wait_for("the resubscription reported", lambda: None in reports.of("leaf2"))
        runs = watched.tick(1.0)
        assert [(r.switch, r.status) for r in runs] == [("leaf2", "corrected")]
        assert not redis.exists("SCHEDULER|SLUICE_SCHED_STRAY")


def test_a_switch_without_on_change_falls_back_to_the_periodic_pass(
    controller: Controller,
) -> None:
    spine1 = controller.fabric.switches["spine1"]
    assert spine1.model is not None
    spine1.model.on_change = False  # its gNMI server only samples
    with watching(controller) as (watched, watcher, reports):
        wait_for(
            "spine1 seen without ON_CHANGE",
            lambda: covered(watcher, "spine1", WatchState.UNSUPPORTED),
        )
        wait_for(
            "the others watched",
            lambda: all(covered(watcher, n) for n in ALL if n != "spine1"),
        )
        redis = spine1.store.client(4)
        redis.hset("SCHEDULER|SLUICE_SCHED_STRAY", mapping={"type": "DWRR", "weight": "5"})

        assert watched.fallback_at is not None
        assert watched.tick(watched.fallback_at - 1.0) == []  # not reported, not due
        assert reports.of("spine1") == []
        runs = watched.tick(watched.fallback_at)  # its interval is due: it alone is read
        assert [(r.switch, r.status) for r in runs] == [("spine1", "corrected")]
        assert not redis.exists("SCHEDULER|SLUICE_SCHED_STRAY")
        assert watched.fallback_at >= INTERVAL_S  # the next one an interval (± jitter) later


def test_the_worker_process_corrects_a_drift_through_its_watcher(
    controller: Controller, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m controller.worker`` with its defaults (watch on): the reconcile interval
    and the audit are a day away, so only the watcher can bring leaf1 back."""
    roll_out(controller, with_reconcile(controller.fabric.intent, interval_s=DAY_S))
    monkeypatch.setenv("SLUICE_WORKER_AUDIT_S", str(DAY_S))
    reconciler = service(controller)
    key = static_wred_key(controller, "leaf1")
    redis = controller.fabric.switches["leaf1"].store.client(4)
    wanted = redis.hget(f"WRED_PROFILE|{key}", "green_max_threshold")
    tls = controller.fabric.tls
    assert tls is not None
    assert tls.root_cert is not None
    with worker_process(db_url, controller.fabric.password, tmp_path / "worker.log", tls.root_cert):
        wait_for("the first full pass", lambda: len(reconciler.last_runs()) == len(ALL))
        first = {r.switch: r.id for r in reconciler.last_runs()}

        writes = iter(str(value) for value in range(900_000, 1_000_000))

        def drifted_and_corrected() -> bool:
            # Written again (a new value) every 2 s until corrected: a write before the
            # worker's stream synced is not seen (the first subscription reports nothing).
            if reconciler.drift(limit=5, offset=0, switch="leaf1").items:
                return redis.hget(f"WRED_PROFILE|{key}", "green_max_threshold") == wanted
            redis.hset(f"WRED_PROFILE|{key}", "green_max_threshold", next(writes))
            time.sleep(2.0)
            return False

        wait_for("the drift corrected by the worker", drifted_and_corrected)
    events = reconciler.drift(limit=10, offset=0).items
    assert events
    assert {(e.switch, e.key, e.field, e.expected, e.action) for e in events} == {
        ("leaf1", key, "green_max_threshold", wanted, "corrected")
    }
    later = {r.switch: r.id for r in reconciler.last_runs()}
    assert all(later[name] == first[name] for name in ALL if name != "leaf1")
