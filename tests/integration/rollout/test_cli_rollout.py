"""``sluice rollout|drift|reconcile`` against the real API served on 127.0.0.1, with a
rollout runner and reconcile-request answerer in a background thread standing in for the
worker, and real switches."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from api.main import create_app
from controller.cli import CliDeps, app
from controller.cli.exit_codes import ExitCode
from controller.services.reconcile import ReconcileService
from controller.services.tokens import AccessRole
from controller.settings import Settings
from tests.integration.conftest import StepClock, issue_token
from tests.integration.served import served

from .conftest import Controller


@pytest.fixture
def live_api_url(db_url: str, controller: Controller) -> Iterator[str]:
    """The app served on 127.0.0.1 (it records; the test's runner reaches the switches)."""
    settings = Settings.for_database(db_url)
    with served(create_app(settings, clock=StepClock())) as url:
        yield url


@pytest.fixture
def sluice(
    controller: Controller, live_api_url: str, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> CliRunnerFor:
    monkeypatch.setenv("SLUICE_GNMI_PASSWORD", controller.fabric.password)
    return CliRunnerFor(live_api_url, issue_token(db_url, AccessRole.OPERATOR, "cli-operator"))


class CliRunnerFor:
    def __init__(self, url: str, token: str) -> None:
        self.env = {"SLUICE_API_URL": url, "SLUICE_API_TOKEN": token, "COLUMNS": "250"}

    def __call__(self, *args: str) -> tuple[int, str]:
        result = CliRunner().invoke(
            app, list(args), env=self.env, obj=CliDeps(), catch_exceptions=False
        )
        return result.exit_code, result.stdout + result.stderr


class BackgroundRunner:
    """Steps rollouts and answers reconcile-now requests until stopped, as the worker would."""

    def __init__(self, controller: Controller) -> None:
        self._runner = controller.runner()
        self._reconciler = ReconcileService(controller.sessions, clock=controller.clock)
        self._loop = self._reconciler.loop(controller.access())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            steps = self._runner.run_until_idle() + self._reconciler.answer_requests(self._loop)
            if not steps:
                self._stop.wait(0.05)

    def __enter__(self) -> BackgroundRunner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def test_start_watch_drift_reconcile_rollback_from_the_command_line(
    sluice: CliRunnerFor, controller: Controller
) -> None:
    controller.store_intent(controller.fabric.intent)
    with BackgroundRunner(controller):
        code, out = sluice("rollout", "start", "--canary", "leaf1", "--batch-size", "2")
        # The first rollout takes every port down and up once: refused, naming them.
        assert code == ExitCode.CONFLICT, out
        assert "would take 12 port(s) on 4 switch(es) admin down and up" in out
        assert "--allow-port-flaps" in out
        code, out = sluice(
            "rollout", "start", "--canary", "leaf1", "--batch-size", "2", "--watch",
            "--interval", "0.1", "--allow-port-flaps",
        )  # fmt: skip
        assert code == ExitCode.OK, out
        assert "Started rollout 1" in out
        for name in ("leaf1", "leaf2", "spine1", "spine2"):
            assert f"{name} (batch " in out
            assert "applied_verified" in out
        assert out.rstrip().endswith("completed; 4/4 verified")

        code, out = sluice("rollout", "list")
        assert code == 0
        assert "0 -> 1" in out  # from version 0 (nothing rolled out before) to 1

        redis = controller.fabric.switches["spine2"].store.client(4)
        redis.hset("SCHEDULER|SLUICE_SCHED_2", "weight", "77")
        code, out = sluice("reconcile", "run", "-o", "json")
        assert code == 0
        runs = {r["switch"]: r for r in json.loads(out)}
        assert runs["spine2"]["status"] == "corrected"
        code, out = sluice("drift", "--switch", "spine2", "-o", "json")
        events = json.loads(out)
        assert [(e["key"], e["field"], e["observed"]) for e in events] == [
            ("SLUICE_SCHED_2", "weight", "77")
        ]
        code, out = sluice("reconcile", "status")
        assert code == 0
        assert "corrected" in out

        code, out = sluice("rollout", "rollback", "1")
        assert code == 0
        assert "rolling_back" in out
        code, out = sluice("rollout", "watch", "1", "--interval", "0.1")
        assert code == ExitCode.ROLLOUT_NOT_CLEAN, out
        assert "rolled_back" in out

    # The rollback rejected version 1 and there is no earlier version to return to: a plain
    # start refuses the rejected head; named, it is pushed anyway.
    code, out = sluice("rollout", "start", "--allow-port-flaps")
    assert code == ExitCode.CONFLICT
    assert "intent version 1 was rejected (rollout 1 rolled back)" in out
    # No runner now: a new rollout stays pending, so pausing it is certain to land. The
    # switches were rolled back to nothing: bringing them back takes their ports down.
    code, out = sluice("rollout", "start", "--to-version", "1", "--allow-port-flaps")
    assert code == 0
    assert sluice("rollout", "pause", "2")[0] == 0
    code, out = sluice("rollout", "watch", "2")
    assert code == ExitCode.ROLLOUT_PAUSED
    code, out = sluice("rollout", "pause", "2")
    assert code == ExitCode.CONFLICT
    assert "paused" in out
