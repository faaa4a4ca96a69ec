"""The ``roce_check`` module in an operator's playbook, run by ansible-playbook against the live
API and the four vsonic switches made ready for RoCE: a ready fabric passes; in check mode,
after one link end is altered, the module reports that end without failing when asked to and
fails naming it by default; the switches are only read."""

from __future__ import annotations

from typing import Any

from ..rollout.conftest import Controller, make_roce_ready, set_fields
from .conftest import Operator, WorkerThread, intent_file

CHECK = "The fabric is ready for RoCE"
REPORT = "What differs"
SEEN = "What was reported"


def roce_play(*tasks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "RoCE", "hosts": "localhost", "gather_facts": False, "tasks": list(tasks)}]


def test_roce_check_passes_a_ready_fabric_and_names_an_altered_end(
    operator: Operator, controller: Controller
) -> None:
    fabric = controller.fabric
    make_roce_ready(fabric)
    intent = intent_file(operator, controller)
    with WorkerThread(controller):
        first = operator.playbook(
            roce_play(
                {"name": "Apply", "sluice.fabric.intent": {"src": str(intent), "reason": "roce"}},
                {"name": CHECK, "sluice.fabric.roce_check": {}},
            )
        )
        assert first.returncode == 0, first.output()
        assert first.task(CHECK)["status"] == "ok"

        set_fields(fabric, "spine2", "PORT", "Ethernet4", mtu="1500")
        before = {name: switch.config_db() for name, switch in fabric.switches.items()}
        second = operator.playbook(
            roce_play(
                {
                    "name": REPORT,
                    "sluice.fabric.roce_check": {"fail_on_findings": False},
                    "register": "roce",
                },
                {
                    "name": SEEN,
                    "ansible.builtin.assert": {
                        "that": [
                            "not roce.ok",
                            "not roce.changed",
                            "roce.findings | map(attribute='end') | list == ['spine2:Ethernet4']",
                            "roce.findings[0].kind == 'mtu'",
                            "roce.findings[0].expected == '9100'",
                            "roce.findings[0].found == '1500'",
                            "roce.links | rejectattr('ok') | map(attribute='a') | list"
                            " == ['leaf2:Ethernet52']",
                        ]
                    },
                },
                {"name": CHECK, "sluice.fabric.roce_check": {}},
            ),
            "--check",
        )
        assert second.returncode != 0, second.output()
        assert second.task(SEEN)["status"] == "ok"
        assert second.task(CHECK)["status"] == "failed"
        assert (
            "spine2:Ethernet4: MTU 1500 here, 9100 at leaf2:Ethernet52" in second.task(CHECK)["msg"]
        )
        assert {name: switch.config_db() for name, switch in fabric.switches.items()} == before
