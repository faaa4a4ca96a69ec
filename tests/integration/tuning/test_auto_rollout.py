"""The tuner's auto mode closed into a loop (controller/services/auto_rollout.py): a due pass
writes a version and starts a health-gated rollout of it, whose pre-checks read a real
Prometheus (history.py backfilled) and are stored with it; a pass not yet due starts nothing;
an unhealthy fabric refuses the rollout and the version stays written. A change the hosts run
gets its host apply under the same gates (pre-checks stored with it) once its switch rollout
has completed, and none when that rollout rolled back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from controller.intent.models import TunerRollout
from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import PromQL
from controller.rollout.gates import Gate, GatePolicy
from controller.services.auto_rollout import AUTO_GATES, AutoTuner, auto_gates
from controller.services.common import Actor, WorkerWait
from controller.services.host_runs import HostRunService
from controller.services.intents import IntentService
from controller.services.plans import PlanService
from controller.services.rollouts import RolloutPolicy, RolloutService
from controller.services.tuning import TuningService
from controller.store.db import make_engine, make_sessions
from controller.store.repositories import intents as intents_repo
from controller.store.rollout_store import SqlRolloutStore
from controller.store.snapshots import decode_fleet
from controller.telemetry.tuning_summary import read_summary
from controller.tuning.summary import QjumpLevelSummary, TelemetrySummary
from tests.integration.tuning.history import HandClock, history_promql, tuner_intent

pytestmark = pytest.mark.integration
ACTOR = Actor("test", "req-1")
T_END = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PromQL, datetime]]:
    with history_promql(tmp_path_factory.mktemp("auto-rollout")) as made:
        yield made


def runs_version_one(sessions: sessionmaker[Session]) -> None:
    """The switches run version 1, as a verified rollout of it records: the tuner tunes a
    running fabric (its telemetry comes from it). Without it, the tuner's rollout would be
    the switches' first, which takes their ports down, and auto mode never does that."""
    plans = PlanService(sessions, clock=lambda: T_END)
    with sessions() as session:
        desired = decode_fleet(intents_repo.desired_states(session=session, version=1))
    for name, config in desired.items():
        plans.record_running_state(switch=name, config=config, source="test: version 1 runs")


def auto_tuner(
    db_url: str,
    promql: PromQL,
    end: datetime,
    clock: HandClock,
    policy: GatePolicy | None,
    rollout: dict[str, object] | None = None,
) -> tuple[Engine, AutoTuner, RolloutService, TuningService]:
    engine = make_engine(db_url, pool_size=2)
    sessions = make_sessions(engine)
    intents = IntentService(sessions, clock=clock)
    auto = tuner_intent()
    auto["fabric"]["tuning"]["mode"] = "auto"
    if rollout is not None:
        auto["fabric"]["tuning"]["rollout"] = rollout
    intents.replace(auto, expected=0, actor=ACTOR, reason="auto")
    runs_version_one(sessions)
    tuning = TuningService(
        sessions, intents, lambda _at, window: read_summary(promql, end, window), clock=clock
    )
    rollouts = RolloutService(sessions, clock=clock)
    tuner = AutoTuner(tuning, rollouts, None, promql_reader(promql), policy)
    return engine, tuner, rollouts, tuning


def test_auto_mode_starts_a_gated_rollout_of_the_version_it_wrote(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    clock = HandClock(end)
    engine, tuner, rollouts, tuning = auto_tuner(db_url, promql, end, clock, AUTO_GATES)
    try:
        assert tuner.tick() == 2  # one pass, one rollout
        proposal = tuning.list()[0]
        assert proposal.state == "approved"
        assert proposal.new_version == 2
        page = rollouts.list(limit=10, offset=0)
        assert page.total == 1
        rollout = rollouts.get(page.items[0].id)
        assert (rollout.to_version, rollout.state, rollout.created_by) == (2, "pending", "tuner")
        assert rollout.gate_policy == AUTO_GATES.to_json()
        prechecks = {e.gate: e for e in rollout.evaluations or []}
        assert set(prechecks) == {"drops", "agent_fallback"}
        assert prechecks["drops"].value is not None
        assert prechecks["agent_fallback"].value == 0.0
        clock.now = end + timedelta(seconds=599)  # window_s 600: not due yet
        assert tuner.tick() == 0
    finally:
        engine.dispose()


def test_the_auto_rollout_takes_its_batches_and_gates_from_the_intent(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    clock = HandClock(end)
    settings = {
        "batch_size": 2,
        "soak_s": 7,
        "drops_max_increase_pct": 20,
        "on_fail": "halt",
        "agent_fallback": "no_increase",
    }
    engine, tuner, rollouts, _ = auto_tuner(db_url, promql, end, clock, None, settings)
    try:
        assert tuner.tick() == 2
        rollout = rollouts.get(rollouts.list(limit=10, offset=0).items[0].id)
        assert rollout.batch_size == 2
        policy = rollout.gate_policy or {}
        assert (policy["soak_s"], policy["on_fail"]) == (7.0, "halt")
        drops = next(g for g in policy["gates"] if g["name"] == "drops")
        assert (drops["threshold"], drops["comparison"]) == (20.0, "max_increase_pct")
        fallback = next(g for g in policy["gates"] if g["name"] == "agent_fallback")
        assert (fallback["threshold"], fallback["comparison"]) == (0.0, "max_increase_pct")
    finally:
        engine.dispose()


def test_an_unhealthy_fabric_refuses_the_auto_rollout_and_keeps_the_version(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    clock = HandClock(end)
    strict = GatePolicy((Gate("drops", 0.0, "absolute", builtin="drops"),), soak_s=60.0)
    engine, tuner, rollouts, tuning = auto_tuner(db_url, promql, end, clock, strict)
    try:
        assert tuner.tick() == 1  # the pass ran; the pre-check refused the rollout
        assert tuning.list()[0].new_version == 2
        assert rollouts.list(limit=10, offset=0).total == 0
    finally:
        engine.dispose()


def _hosted_auto_tuner(
    db_url: str, promql: PromQL, end: datetime, policy: GatePolicy | None
) -> tuple[Engine, AutoTuner, RolloutService, HostRunService, sessionmaker[Session]]:
    """Auto mode over an intent with three hosts and a QJUMP level, whose telemetry (a fan-in
    of 3 at level 7, below n = 8) makes the tuner change what the hosts run: n 8 -> 6."""
    clock = HandClock(end)
    engine = make_engine(db_url, pool_size=2)
    sessions = make_sessions(engine)
    intents = IntentService(sessions, clock=clock)
    auto = tuner_intent()
    auto["fabric"]["tuning"]["mode"] = "auto"
    auto["fabric"]["tuning"]["rollout"] = {"batch_size": 2, "on_fail": "rollback_batch"}
    auto["fabric"]["qjump"] = {"hosts": 8, "factors": {7: 1}}
    auto["service_classes"].append(
        {"name": "control", "dscp": [48], "queue": 7, "scheduling": {"type": "STRICT"},
         "ecn": "off", "qjump_level": 7}
    )  # fmt: skip
    auto["hosts"] = [{"name": f"h{i}", "address": f"10.0.1.{i}", "nic_gbps": 25} for i in (1, 2, 3)]
    intents.replace(auto, expected=0, actor=ACTOR, reason="auto")
    runs_version_one(sessions)

    def fan_in(_at: datetime, window_s: float) -> TelemetrySummary:
        start = end.timestamp() - window_s
        return TelemetrySummary(
            start, end.timestamp(), qjump_levels=(QjumpLevelSummary(7, 3, 200),)
        )

    tuning = TuningService(sessions, intents, fan_in, clock=clock)
    rollouts = RolloutService(sessions, clock=clock)
    host_runs = HostRunService(sessions, clock=clock, wait=WorkerWait())
    tuner = AutoTuner(tuning, rollouts, host_runs, promql_reader(promql), policy)
    return engine, tuner, rollouts, host_runs, sessions


def _as_the_worker_would_finish(
    sessions: sessionmaker[Session], rollout_id: int, state: str
) -> None:
    """The rollout's end as the worker's runner records it (``SqlRolloutStore.transition``,
    where a rollback rejects its version); its switch work is the rollout tests'."""
    store = SqlRolloutStore(sessions, clock=lambda: T_END)
    assert store.transition(rollout_id, state, ("pending",))


def test_the_host_half_of_a_change_starts_once_its_switches_completed_under_the_same_gates(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    engine, tuner, rollouts, host_runs, sessions = _hosted_auto_tuner(db_url, promql, end, None)
    try:
        assert tuner.tick() == 2  # the pass (n 8 -> 6) and its switch rollout
        rollout = rollouts.list(limit=1, offset=0).items[0]
        assert (rollout.to_version, rollout.state) == (2, "pending")
        assert tuner.tick() == 0  # the switches are on their way: the hosts wait
        assert host_runs.runs(limit=10, offset=0).total == 0
        _as_the_worker_would_finish(sessions, rollout.id, "completed")
        assert tuner.tick() == 1  # now the host apply, under the same gates
        run = host_runs.runs(limit=10, offset=0).items[0]
        shape = (run.mode, run.state, run.intent_version, run.batch_size, run.batches_total)
        assert shape == ("apply", "pending", 2, 2, 2)
        detail = host_runs.run(run.id)
        gates = auto_gates(TunerRollout(batch_size=2, on_fail="rollback_batch"))
        assert detail.gate_policy == gates.to_json()
        readings = {(e.gate, e.stage, e.batch) for e in detail.evaluations or []}
        assert readings == {("drops", "precheck", -1), ("agent_fallback", "precheck", -1)}
        assert tuner.tick() == 0  # one host apply per change
        assert host_runs.runs(limit=10, offset=0).total == 1
    finally:
        engine.dispose()


def test_a_switch_rollout_that_rolled_back_leaves_the_hosts_alone(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    engine, tuner, rollouts, host_runs, sessions = _hosted_auto_tuner(db_url, promql, end, None)
    try:
        assert tuner.tick() == 2
        rollout = rollouts.list(limit=1, offset=0).items[0]
        _as_the_worker_would_finish(sessions, rollout.id, "rolled_back")
        assert tuner.tick() == 0
        assert host_runs.runs(limit=10, offset=0).total == 0
    finally:
        engine.dispose()


def test_no_pass_builds_on_the_head_while_its_rollout_may_still_roll_back(
    db_url: str, history: tuple[PromQL, datetime]
) -> None:
    promql, end = history
    clock = HandClock(end)
    engine, tuner, rollouts, tuning = auto_tuner(db_url, promql, end, clock, AUTO_GATES)
    sessions = make_sessions(engine)
    try:
        first = rollouts.start(RolloutPolicy(1), actor=ACTOR)  # the fabric runs version 1
        _as_the_worker_would_finish(sessions, first.id, "completed")
        assert tuner.tick() == 2  # the pass and its rollout of version 2, pending
        rollout = rollouts.list(limit=1, offset=0).items[0]
        clock.now = end + timedelta(seconds=3600)  # a pass is due again
        assert tuner.tick() == 0  # but the rollout is unfinished: no pass
        assert len(tuning.list()) == 1
        _as_the_worker_would_finish(sessions, rollout.id, "rolled_back")
        assert tuner.tick() == 1  # settled: the pass runs, on the restored head
        newest = tuning.list()[0]
        assert newest.base_version == 3  # version 2 rejected, the head back at version 1's
        # The same telemetry asks for the same change: version 2's intent, not proposed again.
        assert (newest.state, newest.new_version) == ("no_change", None)
        assert "version 2's, which was rejected" in newest.reason
    finally:
        engine.dispose()
