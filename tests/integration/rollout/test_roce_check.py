"""``sluice check roce`` over real gRPC: the four vsonic switches of docs/example-intent.yaml,
each ready for RoCE as an operator runs it (SONiC's stock lossless priorities 3 and 4, their
maps, lossless priority groups and watchdog on every port) and cabled by LLDP; the command
line, through the API and the real worker, reads them and judges every link. One end is
altered at a time and named; a switch that does not answer is a finding, not an error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from api.main import create_app
from controller.cli import CliDeps, app
from controller.cli.exit_codes import ExitCode
from controller.intent.loader import dump_intent
from controller.services.tokens import AccessRole
from tests.integration.conftest import StepClock, issue_token
from tests.integration.served import served
from tests.integration.southbound.conftest import Fabric

from .conftest import make_roce_ready, set_fields, worker_for


@pytest.fixture
def lossless(fabric: Fabric) -> Fabric:
    make_roce_ready(fabric)
    return fabric


@pytest.fixture
def sluice(lossless: Fabric, db_url: str, tmp_path: Path) -> Iterator[Any]:
    """``sluice`` against the app served on 127.0.0.1, the real worker beside it, the fabric's
    intent stored (nothing rolled out)."""
    with (
        worker_for(lossless, db_url) as settings,
        served(create_app(settings, clock=StepClock())) as url,
    ):
        env = {
            "SLUICE_API_URL": url,
            "SLUICE_API_TOKEN": issue_token(db_url, AccessRole.OPERATOR, "cli"),
            "COLUMNS": "250",
        }

        def run(*args: str) -> tuple[int, str]:
            if args[0] == "GET":  # the API itself, as the command line's token
                headers = {"Authorization": f"Bearer {env['SLUICE_API_TOKEN']}"}
                answer = httpx.get(f"{url}/api/v1{args[1]}", headers=headers, timeout=30)
                return answer.status_code, answer.text
            result = CliRunner().invoke(app, list(args), env=env, obj=CliDeps())
            return result.exit_code, result.stdout + result.stderr

        intent_file = tmp_path / "intent.yaml"
        intent_file.write_text(yaml.safe_dump(dump_intent(lossless.intent)))
        assert run("apply", "-f", str(intent_file))[0] == ExitCode.OK
        yield run


def findings(answer: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    found = [f for group in ("links", "ports") for item in answer[group] for f in item["findings"]]
    found += answer["unreachable"]
    return [(f["kind"], f["end"], f["field"], f["expected"], f["found"]) for f in found]


def test_check_roce_names_the_altered_end_of_each_link(lossless: Fabric, sluice: Any) -> None:
    code, shown = sluice("check", "roce", "--json")
    assert code == ExitCode.OK, shown
    answer = json.loads(shown)
    assert answer["ok"], findings(answer)
    assert len(answer["links"]) == 4
    assert {tuple(link["priorities"]) for link in answer["links"]} == {(3, 4)}
    # Every port of every switch has PFC on, each with headroom and a watchdog.
    assert len(answer["ports"]) == sum(len(s.ports) for s in lossless.intent.switches)

    # One end of three links altered: a PFC priority, a lossless DSCP's class (leaf2's map,
    # on both its uplinks), an MTU.
    set_fields(lossless, "spine1", "PORT_QOS_MAP", "Ethernet0", pfc_enable="3")
    set_fields(lossless, "leaf2", "DSCP_TO_TC_MAP", "AZURE", **{"4": "1"})
    set_fields(lossless, "spine2", "PORT", "Ethernet4", mtu="1500")
    code, shown = sluice("check", "roce", "--json")
    assert code == ExitCode.CHECK_FAILED, shown
    answer = json.loads(shown)
    by_link = {(link["a"], link["b"]): findings({**answer, "links": [link], "ports": [],
               "unreachable": []}) for link in answer["links"]}  # fmt: skip
    assert by_link == {
        ("leaf1:Ethernet48", "spine1:Ethernet0"): [
            ("pfc_priorities", "spine1:Ethernet0", "PORT_QOS_MAP|Ethernet0.pfc_enable", "3,4", "3")
        ],
        ("leaf1:Ethernet52", "spine2:Ethernet0"): [],
        ("leaf2:Ethernet48", "spine1:Ethernet4"): [
            ("dscp_to_tc", "leaf2:Ethernet48", "DSCP_TO_TC_MAP|AZURE.4", "4", "1")
        ],
        ("leaf2:Ethernet52", "spine2:Ethernet4"): [
            ("dscp_to_tc", "leaf2:Ethernet52", "DSCP_TO_TC_MAP|AZURE.4", "4", "1"),
            ("mtu", "spine2:Ethernet4", "PORT|Ethernet4.mtu", "9100", "1500"),
        ],
    }
    assert all(port["ok"] for port in answer["ports"])
    # The discovery stays recorded: the API judges it again, alike.
    status, again = sluice("GET", f"/checks/roce/{answer['discovery_id']}")
    assert status == 200, again
    assert json.loads(again) == answer
    assert sluice("GET", "/checks/roce/999999")[0] == 404

    # The table names the same ends; a switch that does not answer is named as one.
    lossless.switches["spine2"].stop()
    code, shown = sluice("check", "roce")
    assert code == ExitCode.CHECK_FAILED, shown
    assert "spine1:Ethernet0: PFC priorities 3 here, 3,4 at leaf1:Ethernet48" in shown, shown
    assert "unreachable" in shown
    assert any(line.startswith("spine2: ") for line in shown.splitlines()), shown
    assert "2 links, " in shown  # spine2's two links cannot be compared
