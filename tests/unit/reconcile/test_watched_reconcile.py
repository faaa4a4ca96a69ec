"""The worker's turn with a drift watch (``WatchedReconcile``): a switch the turn wrote to is
handed back to the watch, which then reads it for the owned tables it lacked (a fresh
switch's tables appear with the first write) instead of waiting for its next probe. The
reconcile loop and the watcher are fakes here: the turn's bookkeeping is what is tested;
tests/realsonic/test_streams.py runs the watch against SONiC's own server."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from controller.intent.models import Reconcile, ReconcileMode
from controller.reconcile.loop import RunStatus, SwitchRun
from controller.reconcile.watch import DriftInbox, WatchedReconcile, WatchState
from controller.southbound.gnmi import GnmiTarget

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _run(switch: str, status: RunStatus) -> SwitchRun:
    return SwitchRun(switch, 1, ReconcileMode.CORRECT, status, (), NOW, NOW)


class FakeLoop:
    """Answers each reconcile with the status ``statuses`` gives the switch."""

    def __init__(self, statuses: Mapping[str, RunStatus]) -> None:
        self._statuses = statuses

    def run_pass(self) -> list[SwitchRun]:
        return [_run(name, status) for name, status in self._statuses.items()]

    def reconcile_now(self, *switch_names: str) -> list[SwitchRun]:
        return [_run(name, self._statuses[name]) for name in switch_names]


class FakeWatcher:
    """Records what the turn hands the watch."""

    def __init__(self) -> None:
        self.rechecked: list[list[str]] = []

    def sync(self, targets: Mapping[str, GnmiTarget]) -> None:
        pass

    def states(self) -> dict[str, WatchState]:
        return {}

    def recheck(self, names: Iterable[str]) -> None:
        self.rechecked.append(sorted(names))


def test_the_switches_a_turn_wrote_to_are_rechecked_by_the_watch() -> None:
    statuses: dict[str, RunStatus] = {
        "leaf1": "corrected",
        "leaf2": "converged",
        "spine1": "unreachable",
    }
    watcher, inbox = FakeWatcher(), DriftInbox()
    turn = WatchedReconcile(
        FakeLoop(statuses),
        watcher,
        inbox,
        targets=dict,
        policy=lambda: Reconcile(),
        rand=lambda: 0.5,
    )
    turn.tick(0.0)  # the first turn is a full pass
    assert watcher.rechecked == [["leaf1"]]
    inbox.on_drift("leaf2", "SCHEDULER")
    turn.tick(1.0)  # converged: nothing was written, nothing to read for
    assert watcher.rechecked[-1] == []


def test_the_real_watcher_streams_an_openconfig_switch_with_its_own_watch() -> None:
    # An OpenConfig switch gets a stream of its configuration containers (OpenConfigWatch);
    # until it syncs it is uncovered, which the turn's fallback pass reconciles.
    import asyncio
    import random

    from pydantic import SecretStr

    from controller.intent.models import Dialect
    from controller.reconcile.watch import DriftWatcher, OpenConfigWatch, uncovered

    def target(name: str, dialect: Dialect) -> GnmiTarget:
        return GnmiTarget(name, "127.0.0.1", 9, "admin", SecretStr("x"), dialect=dialect)

    async def scenario() -> None:
        watcher = DriftWatcher(lambda *_: None, rand=random.Random(0).random)
        targets = {"oc": target("oc", Dialect.OPENCONFIG), "sonic": target("sonic", Dialect.SONIC)}
        watcher.sync(targets)
        assert isinstance(watcher.watch_of("oc"), OpenConfigWatch)
        assert not isinstance(watcher.watch_of("sonic"), OpenConfigWatch)
        assert uncovered(watcher.states()) == ["oc", "sonic"]  # nothing synced: port 9
        watcher.sync({})
        assert watcher.states() == {}
        await watcher.close()

    asyncio.run(scenario())
