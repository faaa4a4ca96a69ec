"""The ``sluice`` CLI against the real API (uvicorn on 127.0.0.1, real PostgreSQL).

Each test drives the CLI the way an operator or a script would and checks what it printed and
the exit code (docs/operator-guide.md, "Exit codes"). Expected plan contents are derived from
the example intent: 2 leaves + 2 spines, so a full plan names 4 switches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from controller.cli import CliDeps
from controller.cli.client import ApiClient
from tests.integration.cli.support import (
    EXAMPLE,
    Cli,
    CliResult,
    applied,
    closed_port,
    example_data,
)

pytestmark = pytest.mark.integration

SWITCHES = {"leaf1", "leaf2", "spine1", "spine2"}


def write_intent(folder: Path, data: dict[str, Any], name: str = "intent.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def plan_switches(result: CliResult) -> set[str]:
    return {plan["switch"] for plan in json.loads(result.stdout)["plans"]}


# --- check (offline) ---------------------------------------------------------------------------


def test_check_accepts_the_example_without_any_api(cli: Cli):
    result = cli.run("--api-url", f"http://127.0.0.1:{closed_port()}", "check", "-f", str(EXAMPLE))
    assert result.code == 0, result.stderr
    assert "valid (4 switches" in result.stdout


def test_check_names_each_bad_field_and_exits_3(cli: Cli, tmp_path: Path):
    data = example_data()
    data["fabric"]["mtu_bytes"] = 100  # below the 576 floor of the model
    data["switches"][0]["colour"] = "blue"  # unknown key
    result = cli.run("check", "-f", str(write_intent(tmp_path, data)))
    assert result.code == 3
    assert "fabric.mtu_bytes" in result.stderr
    assert "switches[0].colour" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_check_of_a_missing_file_is_a_usage_error(cli: Cli, tmp_path: Path):
    assert cli.run("check", "-f", str(tmp_path / "absent.yaml")).code == 2


# --- apply ---------------------------------------------------------------------------------------


def test_dry_run_shows_the_plan_changes_nothing_and_reports_changes_with_10(cli: Cli):
    result = cli.run("apply", "-f", str(EXAMPLE), "--dry-run", "--exit-code", token="operator")
    assert result.code == 10, result.stderr
    assert "SWITCH" in result.stdout
    for switch in SWITCHES:
        assert f"{switch}: " in result.stdout  # a summary line per switch
    # The example's MQ-ECN at 100 ms is planned, with the measured warning on stderr.
    assert "warning: fabric.agent.interval_ms: mqecn at 100 ms" in result.stderr
    # Without --exit-code the same plan is a plain success.
    assert cli.run("apply", "-f", str(EXAMPLE), "--dry-run", token="operator").code == 0
    # Nothing was stored: there is still no intent.
    assert cli.run("get", "intent", token="viewer").code == 6


def test_dry_run_json_is_the_plan_for_every_switch(cli: Cli):
    result = cli.run("apply", "-f", str(EXAMPLE), "--dry-run", "-o", "json", token="viewer")
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    plans = document["plans"]
    assert {plan["switch"] for plan in plans} == SWITCHES
    assert [w["field"] for w in document["warnings"]] == ["fabric.agent.interval_ms"]
    # Nothing is recorded as running yet, so every op adds an entry.
    assert {op["kind"] for plan in plans for op in plan["ops"]} == {"add"}


def test_apply_creates_a_version_and_a_repeat_creates_none(cli: Cli, tmp_path: Path):
    path = applied(cli, tmp_path)
    again = cli.run("apply", "-f", str(path), "--reason", "again", token="operator")
    assert again.code == 0, again.stderr
    assert "Unchanged: intent version 1" in again.stderr
    versions = json.loads(cli.run("get", "versions", "-o", "json", token="viewer").stdout)
    assert [v["number"] for v in versions] == [1]
    assert versions[0]["author"] == "operator"


def test_apply_of_a_changed_file_reports_the_new_version_and_its_reason(cli: Cli, tmp_path):
    path = applied(cli, tmp_path)
    data = example_data()
    data["fabric"]["base_rtt_us"] = 50
    write_intent(tmp_path, data)
    result = cli.run("apply", "-f", str(path), "--reason", "longer RTT", token="operator")
    assert result.code == 0, result.stderr
    assert "Applied: intent version 2 (was 1)." in result.stderr
    version = json.loads(cli.run("get", "versions", "2", "-o", "json", token="viewer").stdout)
    assert version["version"]["reason"] == "longer RTT"
    assert version["intent"]["fabric"]["base_rtt_us"] == 50


def test_invalid_intent_is_refused_by_the_api_with_each_field_and_exit_3(cli: Cli, tmp_path):
    data = example_data()
    data["service_classes"][1]["dscp"] = data["service_classes"][0]["dscp"]  # DSCP used twice
    data["fabric"]["ecn_lambda"] = -1
    result = cli.run("apply", "-f", str(write_intent(tmp_path, data)), token="operator")
    assert result.code == 3
    assert "fabric.ecn_lambda" in result.stderr
    assert "Traceback" not in result.stderr
    assert cli.run("get", "intent", token="viewer").code == 6


def test_yaml_syntax_error_is_invalid_intent_with_its_line(cli: Cli, tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("fabric:\n  base_rtt_us: [40\n")
    result = cli.run("apply", "-f", str(path), token="operator")
    assert result.code == 3
    assert "line 2" in result.stderr or "line 3" in result.stderr


def test_a_concurrent_writer_makes_apply_fail_with_4_and_nothing_is_lost(cli: Cli, tmp_path):
    path = applied(cli, tmp_path)
    data = example_data()
    data["fabric"]["base_rtt_us"] = 60
    write_intent(tmp_path, data)
    rival = example_data()
    rival["fabric"]["base_rtt_us"] = 70

    def rival_writes_after_cli_reads(response: httpx.Response) -> None:
        # Between the CLI's GET /intent (ETag "1") and its PUT, another client writes.
        if response.request.method == "GET" and response.request.url.path == "/api/v1/intent":
            with httpx.Client(base_url=cli.base_url, timeout=30) as other:
                ApiClient(other, cli.tokens["admin"]).replace_intent(rival, "rival", 1)

    def racing_http(base_url: str, timeout_s: float) -> httpx.Client:
        hooks = {"response": [rival_writes_after_cli_reads]}
        return httpx.Client(base_url=base_url, timeout=timeout_s, event_hooks=hooks)

    result = cli.run("apply", "-f", str(path), token="operator", deps=CliDeps(racing_http))
    assert result.code == 4, result.stderr
    assert "precondition failed" in result.stderr
    current = json.loads(cli.run("get", "intent", "-o", "json", token="viewer").stdout)
    assert current["fabric"]["base_rtt_us"] == 70  # the winner's write stands


# --- plan and diff -------------------------------------------------------------------------------


def test_plan_of_the_current_intent_against_nothing_recorded(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    everything = cli.run("plan", "--exit-code", "-o", "json", token="viewer")
    assert everything.code == 10
    assert plan_switches(everything) == SWITCHES
    one = cli.run("plan", "--switch", "leaf1", "-o", "json", token="viewer")
    assert one.code == 0
    assert plan_switches(one) == {"leaf1"}


def test_diff_between_versions_shows_old_and_new_values(cli: Cli, tmp_path: Path):
    path = applied(cli, tmp_path)
    data = example_data()
    data["fabric"]["base_rtt_us"] = 80  # twice the RTT: every standard ECN threshold doubles
    write_intent(tmp_path, data)
    assert cli.run("apply", "-f", str(path), token="operator").code == 0

    table = cli.run("diff", "--exit-code", token="viewer")
    assert table.code == 10, table.stderr
    assert "version 1 -> 2" in table.stdout
    assert "change" in table.stdout
    assert " -> " in table.stdout
    as_json = json.loads(
        cli.run("diff", "--from", "1", "--to", "2", "-o", "json", token="viewer").stdout
    )
    changes = [op for plan in as_json["plans"] for op in plan["ops"] if op["kind"] == "change"]
    assert changes
    for op in changes:
        assert op["fields"] != op["old_fields"]

    one_switch = cli.run(
        "diff", "--from", "1", "--to", "2", "--switch", "spine1", "-o", "json", token="viewer"
    )
    assert plan_switches(one_switch) == {"spine1"}
    same = cli.run("diff", "--from", "2", "--to", "2", "--exit-code", token="viewer")
    assert same.code == 0
    assert "No changes" in same.stdout


def test_plan_summary_counts_what_the_full_plan_lists(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    full = json.loads(cli.run("plan", "--switch", "spine1", "-o", "json", token="viewer").stdout)
    ops = full["plans"][0]["ops"]
    summary = cli.run("plan", "--switch", "spine1", "--summary", token="viewer")
    assert summary.code == 0
    assert "ADD" in summary.stdout
    assert "Ethernet" not in summary.stdout  # no per-entry rows
    for table_name in {op["table"] for op in ops}:
        adds = sum(1 for op in ops if op["table"] == table_name)
        row = next(line for line in summary.stdout.splitlines() if f" {table_name} " in line)
        assert f" {adds} " in row


def test_diff_with_an_unknown_version_is_not_found(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    assert cli.run("diff", "--from", "1", "--to", "99", token="viewer").code == 6


# --- get and audit -------------------------------------------------------------------------------


def test_get_lists_every_kind_as_a_table(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    switches = cli.run("get", "switches", token="viewer")
    assert switches.code == 0
    for name in SWITCHES:
        assert name in switches.stdout
    assert "2x25G, 2x100G" in switches.stdout  # leaf1: two 25G host ports, two 100G uplinks
    for kind, expected in [
        ("hosts", "NIC_GBPS"),
        ("classes", "SCHEDULING"),
        ("fabric", "base_rtt_us"),
        ("intent", "service_classes"),
        ("versions", "AUTHOR"),
    ]:
        result = cli.run("get", kind, token="viewer")
        assert result.code == 0, (kind, result.stderr)
        assert expected in result.stdout, kind
    tokens = cli.run("get", "tokens", token="admin")
    assert tokens.code == 0
    for name in ("admin", "operator", "viewer"):
        assert name in tokens.stdout


def test_get_json_and_yaml_are_the_api_documents(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    classes = json.loads(cli.run("get", "classes", "-o", "json", token="viewer").stdout)
    assert [c["name"] for c in classes] == [c["name"] for c in example_data()["service_classes"]]
    fabric = yaml.safe_load(cli.run("get", "fabric", "-o", "yaml", token="viewer").stdout)
    assert fabric["base_rtt_us"] == example_data()["fabric"]["base_rtt_us"]


def test_get_intent_yaml_can_be_applied_again_without_a_new_version(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    exported = cli.run("get", "intent", "-o", "yaml", token="viewer")
    path = tmp_path / "exported.yaml"
    path.write_text(exported.stdout)
    result = cli.run("apply", "-f", str(path), token="operator")
    assert result.code == 0, result.stderr
    assert "Unchanged" in result.stderr


def test_get_one_item_and_a_missing_one(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    leaf = json.loads(cli.run("get", "switches", "leaf1", "-o", "json", token="viewer").stdout)
    assert leaf["name"] == "leaf1"
    assert cli.run("get", "switches", "leaf9", token="viewer").code == 6
    operator = json.loads(cli.run("get", "tokens", "operator", "-o", "json", token="admin").stdout)
    assert operator["role"] == "operator"
    assert cli.run("get", "tokens", "nobody", token="admin").code == 6


def test_lists_are_read_page_by_page(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    one_per_page = CliDeps(page_size=1)  # 4 switches: 4 requests, each with limit=1
    result = cli.run("get", "switches", "-o", "json", token="viewer", deps=one_per_page)
    assert {s["name"] for s in json.loads(result.stdout)} == SWITCHES


def test_audit_shows_the_newest_entries_first(cli: Cli, tmp_path: Path):
    path = applied(cli, tmp_path)
    data = example_data()
    data["fabric"]["base_rtt_us"] = 45
    write_intent(tmp_path, data)
    assert cli.run("apply", "-f", str(path), token="operator").code == 0
    entries = json.loads(cli.run("audit", "--limit", "2", "-o", "json", token="viewer").stdout)
    assert len(entries) == 2
    assert entries[0]["at"] >= entries[1]["at"]
    assert entries[0]["actor"] == "operator"
    table = cli.run("audit", token="viewer")
    assert table.code == 0
    assert "ACTOR" in table.stdout


# --- auth, reachability, usage, unexpected ----------------------------------------------------


def test_no_token_and_a_wrong_token_exit_5(cli: Cli):
    assert cli.run("get", "switches").code == 5
    wrong = cli.run("--token", "not-a-real-token", "get", "switches")
    assert wrong.code == 5
    assert "not-a-real-token" not in wrong.stderr + wrong.stdout


def test_roles_too_weak_exit_5(cli: Cli):
    assert cli.run("apply", "-f", str(EXAMPLE), token="viewer").code == 5
    assert cli.run("get", "tokens", token="operator").code == 5


def test_unreachable_api_exits_7(cli: Cli):
    result = cli.run(
        "--api-url", f"http://127.0.0.1:{closed_port()}", "get", "switches", token="viewer"
    )
    assert result.code == 7
    assert "API unreachable" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["get", "routers"],
        ["--api-url", "ftp://127.0.0.1", "get", "switches"],
        ["audit", "--limit", "0"],
        ["get", "fabric", "extra"],
        ["apply"],
    ],
)
def test_usage_errors_exit_2(cli: Cli, args: list[str]):
    assert cli.run(*args, token="viewer").code == 2


def test_a_failing_server_exits_1_with_its_request_id(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    cli.drop_database()  # the API's database disappears under it: a 500 on the next read
    result = cli.run("get", "switches", token="viewer")
    assert result.code == 1
    assert "request id" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_installed_entry_point_exits_with_the_same_codes(cli: Cli, tmp_path: Path):
    applied(cli, tmp_path)
    ok = cli.run_installed("get", "switches", "-o", "json", token="viewer")
    assert ok.code == 0, ok.stderr
    assert {s["name"] for s in json.loads(ok.stdout)} == SWITCHES
    assert cli.run_installed("get", "switches", "leaf9", token="viewer").code == 6
    assert cli.run_installed("get", "nonsense", token="viewer").code == 2
