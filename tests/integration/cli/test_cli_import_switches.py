"""``sluice import-switches``: switches from an inventory file into the current intent,
against the real API and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.integration.cli.support import Cli, applied, example_data
from vsonic.supervisor import Layout, inventory


def _versions(cli: Cli) -> list[int]:
    listed = json.loads(cli.run("get", "versions", "-o", "json", token="viewer").stdout)
    return sorted(v["number"] for v in listed)


def _switches(cli: Cli) -> dict[str, dict[str, Any]]:
    listed = json.loads(cli.run("get", "switches", "-o", "json", token="viewer").stdout)
    return {s["name"]: s for s in listed}


def test_vsonic_inventory_is_imported_as_one_new_version(cli: Cli, tmp_path: Path) -> None:
    applied(cli, tmp_path)
    # What `vsonic up --switches 2 --base-port 60001` writes (ports the example does not use).
    document = inventory(Layout(switches=2, base_port=60001, fleet=False, ports=2))
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(document))

    dry = cli.run("import-switches", "-f", str(path), "--dry-run", "--exit-code", token="operator")
    assert dry.code == 10, dry.stderr  # the new switches have everything to add
    assert "0 switch(es) replaced, 2 added" in dry.stderr
    assert _versions(cli) == [1]

    done = cli.run("import-switches", "-f", str(path), token="operator")
    assert done.code == 0, done.stderr
    assert _versions(cli) == [1, 2]
    switches = _switches(cli)
    assert switches["vs2"]["gnmi"]["port"] == 60002
    example = {s["name"] for s in example_data()["switches"]}
    assert set(switches) == example | {"vs1", "vs2"}


def test_a_named_switch_is_replaced_and_the_others_kept(cli: Cli, tmp_path: Path) -> None:
    applied(cli, tmp_path)
    leaf1 = next(s for s in example_data()["switches"] if s["name"] == "leaf1")
    leaf1["gnmi"]["port"] = 60123
    path = tmp_path / "leaf1.yaml"
    path.write_text(yaml.safe_dump({"switches": [leaf1]}))
    done = cli.run("import-switches", "-f", str(path), "--reason", "leaf1 moved", token="operator")
    assert done.code == 0, done.stderr
    assert "1 switch(es) replaced, 0 added" in done.stderr
    switches = _switches(cli)
    assert switches["leaf1"]["gnmi"]["port"] == 60123
    assert switches["leaf2"]["gnmi"]["port"] == 50052


def test_an_inventory_clashing_with_the_intent_is_refused_and_nothing_stored(
    cli: Cli, tmp_path: Path
) -> None:
    applied(cli, tmp_path)
    # vsonic's default ports are the example's own leaf1/leaf2 gNMI endpoints.
    document = inventory(Layout(switches=1, base_port=50051, fleet=False, ports=2))
    path = tmp_path / "clash.yaml"
    path.write_text(yaml.safe_dump(document))
    refused = cli.run("import-switches", "-f", str(path), token="operator")
    assert refused.code == 3, refused.stderr
    assert "127.0.0.1:50051" in refused.stderr
    assert _versions(cli) == [1]
