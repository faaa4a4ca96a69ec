"""Operators' playbooks with the sluice.fabric modules, run by ansible-playbook against the live
API, PostgreSQL and the vsonic switches: check mode, a first run, a second run, and a rollout
with one switch stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from ..rollout.conftest import Controller
from .conftest import Operator, WorkerThread, intent_file

APPLY = "Apply the intent"
ROLL_OUT = "Roll it out, leaf1 first"


def staged_rollout(intent: Path) -> list[dict[str, Any]]:
    """The operator's playbook: apply the intent, roll it out in stages."""
    return [
        {
            "name": "Roll sluice out across the fabric",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": APPLY,
                    "sluice.fabric.intent": {"src": str(intent), "reason": "from a playbook"},
                },
                {
                    "name": ROLL_OUT,
                    "sluice.fabric.rollout": {
                        "canary": ["leaf1"],
                        "batch_size": 2,
                        "failure_budget": 0,
                        # The switches are fresh: their first rollout takes each port down.
                        "allow_port_flaps": True,
                        "poll_interval": 0.1,
                        "wait_timeout": 120,
                    },
                },
            ],
        }
    ]


def versions(controller: Controller) -> int:
    with controller.engine.connect() as connection:
        return int(connection.execute(text("select count(*) from intent_versions")).scalar_one())


def rollouts(controller: Controller) -> list[tuple[int, str]]:
    with controller.engine.connect() as connection:
        rows = connection.execute(text("select to_version, state from rollouts order by id"))
        return [(int(r[0]), str(r[1])) for r in rows]


def drop_probability(controller: Controller, switch: str) -> set[str]:
    """The drop probability of every WRED profile sluice wrote on ``switch``, from Redis."""
    config = controller.fabric.switches[switch].config_db()
    return {
        fields["green_drop_probability"]
        for key, fields in config.items()
        if key.startswith("WRED_PROFILE|SLUICE") and "green_drop_probability" in fields
    }


def test_first_run_verifies_second_changes_nothing_check_mode_writes_nothing(
    operator: Operator, controller: Controller
) -> None:
    play = staged_rollout(intent_file(operator, controller))
    with WorkerThread(controller):
        first = operator.playbook(play)
        assert first.returncode == 0, first.output()
        assert first.task(APPLY)["status"] == "changed"
        assert first.task(ROLL_OUT)["status"] == "changed"
        assert rollouts(controller) == [(1, "completed")]
        assert drop_probability(controller, "spine2") == {"100"}

        second = operator.playbook(play)
        assert second.returncode == 0, second.output()
        assert second.task(APPLY)["status"] == "ok"
        assert second.task(ROLL_OUT)["status"] == "ok"
        assert versions(controller) == 1
        assert rollouts(controller) == [(1, "completed")]

        changed = staged_rollout(intent_file(operator, controller, wred_drop_probability_pct=40))
        before = {name: s.config_db() for name, s in controller.fabric.switches.items()}
        check = operator.playbook(changed, "--check", "--diff")
        assert check.returncode == 0, check.output()
        planned = check.task(APPLY)
        assert planned["status"] == "changed"
        assert "wred_drop_probability_pct: 100" in planned["diff"]["before"]
        assert "wred_drop_probability_pct: 40" in planned["diff"]["after"]
        assert "wred_drop_probability_pct: 40" in check.stdout  # --diff shows it
        assert versions(controller) == 1
        assert rollouts(controller) == [(1, "completed")]
        assert {name: s.config_db() for name, s in controller.fabric.switches.items()} == before

        applied = operator.playbook(changed)
        assert applied.returncode == 0, applied.output()
        assert applied.task(APPLY)["status"] == "changed"
        assert applied.task(ROLL_OUT)["status"] == "changed"
        assert versions(controller) == 2
        assert rollouts(controller) == [(1, "completed"), (2, "completed")]
        assert all(drop_probability(controller, s) == {"40"} for s in controller.fabric.switches)


def test_a_stopped_switch_fails_the_task_by_name_and_a_later_run_completes(
    operator: Operator, controller: Controller
) -> None:
    play = staged_rollout(intent_file(operator, controller))
    controller.fabric.switches["leaf2"].stop()
    with WorkerThread(controller):
        failed = operator.playbook(play)
        assert failed.returncode != 0
        assert failed.task(APPLY)["status"] == "changed"
        task = failed.task(ROLL_OUT)
        assert task["status"] == "failed"
        assert "leaf2 (unreachable" in task["msg"], task["msg"]
        assert "leaf1" not in task["msg"]  # verified switches are not named
        assert rollouts(controller) == [(1, "halted")]
        assert drop_probability(controller, "leaf2") == set()

        controller.fabric.switches["leaf2"].start()  # the switch is back; the worker goes on
        again = operator.playbook(play)
        assert again.returncode == 0, again.output()
        assert again.task(APPLY)["status"] == "ok"
        assert again.task(ROLL_OUT)["status"] == "changed"  # resumed, not a new rollout
        assert rollouts(controller) == [(1, "completed")]
        assert all(drop_probability(controller, s) == {"100"} for s in controller.fabric.switches)


def test_info_modules_report_the_fabric_and_rollout_control_rolls_back_once(
    operator: Operator, controller: Controller
) -> None:
    read_and_roll_back = [
        {
            "name": "Read the fabric, then take the rollout back",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {"name": "Health", "sluice.fabric.health_info": {}, "register": "health"},
                {"name": "Switches", "sluice.fabric.switch_info": {}, "register": "fabric"},
                {"name": "Last rollout", "sluice.fabric.rollout_info": {}, "register": "last"},
                {"name": "Drift", "sluice.fabric.drift_info": {}, "register": "drift"},
                {
                    "name": "Discover",
                    "sluice.fabric.discover": {"switches": ["leaf1"], "check": True},
                    "register": "found",
                },
                {
                    "name": "What was read",
                    "ansible.builtin.assert": {
                        "that": [
                            # No Prometheus behind this API: the fallback, from what it knows.
                            "not health.telemetry",
                            "health.state == 'unknown'",
                            "health.healthy",
                            "health.health.telemetry_problem.status == 503",
                            "fabric.switches | map(attribute='name') | sort"
                            " == ['leaf1', 'leaf2', 'spine1', 'spine2']",
                            "last.rollout.state == 'completed'",
                            "last.batches | map(attribute='switches') | list"
                            " == [['leaf1'], ['leaf2', 'spine1'], ['spine2']]",
                            "last.failed_switches == []",
                            "drift.events == []",
                            "found.switches | map(attribute='switch') | list == ['leaf1']",
                            "found.switches[0].gets == 3",
                            "found.problems == []",
                            "not found.changed",
                        ]
                    },
                },
                {
                    "name": "Roll back",
                    "sluice.fabric.rollout_control": {
                        "state": "rolled_back",
                        "wait": True,
                        "poll_interval": 0.1,
                        "wait_timeout": 120,
                    },
                },
            ],
        }
    ]
    with WorkerThread(controller):
        rolled = operator.playbook(staged_rollout(intent_file(operator, controller)))
        assert rolled.returncode == 0, rolled.output()
        assert drop_probability(controller, "leaf1") == {"100"}

        first = operator.playbook(read_and_roll_back)
        assert first.returncode == 0, first.output()
        assert first.task("What was read")["status"] == "ok"
        assert first.task("Roll back")["status"] == "changed"
        assert rollouts(controller) == [(1, "rolled_back")]
        # Back to version 0: nothing of sluice's is left on the switches.
        assert all(drop_probability(controller, s) == set() for s in controller.fabric.switches)

        # Rolled back already: asking again changes nothing (only the rollback task runs: the
        # reads above would now see a rolled-back rollout).
        again = operator.playbook(read_and_roll_back, "--start-at-task", "Roll back")
        assert again.returncode == 0, again.output()
        assert again.task("Roll back")["status"] == "ok"
