"""``sluice twin`` with the real netsim binary (``target/debug/netsim``): a file alone, and
a file against the current intent of a real API on a real PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from controller.intent.loader import dump_intent, load_intent_file
from tests.integration.cli.support import ROOT, Cli
from tests.support.lossless import with_lossless_storage

EXAMPLE = ROOT / "docs" / "example-intent.yaml"
CONTENDED = ("--load", "0.8", "--flows", "400", "--mix", "storage=0.5,best-effort=0.5")


def heavier_storage(folder: Path) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text())
    next(c for c in data["service_classes"] if c["name"] == "storage")["scheduling"]["weight"] = 400
    path = folder / "heavier.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_file_alone_needs_no_api(cli: Cli) -> None:
    result = cli.run("twin", "-f", str(EXAMPLE), "--flows", "200", "--json")
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)["result"]
    names = [row["name"] for row in doc["classes"]]
    assert names == ["control", "rpc", "storage", "analytics", "best-effort"]
    assert "netsim: t=" in result.stderr  # progress relayed


def test_a_lossless_class_shows_its_drops_pauses_and_cnps(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "lossless.yaml"
    intent = with_lossless_storage(load_intent_file(EXAMPLE))
    path.write_text(yaml.safe_dump(dump_intent(intent), sort_keys=False))
    result = cli.run("twin", "-f", str(path), "--flows", "300", "--json")
    assert result.code == 0, result.stderr
    figures = json.loads(result.stdout)["result"]["lossless"]
    (storage,) = figures["classes"]
    assert storage["name"] == "storage"
    assert storage["drops"] == 0
    assert storage["pause_frames"] > 0
    assert storage["cnps"] > 0
    table = cli.run("twin", "-f", str(path), "--flows", "300")
    assert table.code == 0, table.stderr
    lines = table.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["lossless", "drops"])
    row = lines[header + 1].split()
    assert row[:2] == ["storage", "0"]
    assert row[-2:] == [str(storage["pause_frames"]), str(storage["cnps"])]
    assert "finding:" not in table.stdout


def test_switch_ports_run_the_qos_agent_unless_per_packet_is_asked(cli: Cli) -> None:
    result = cli.run("twin", "-f", str(EXAMPLE), "--flows", "200", "--json")
    assert result.code == 0, result.stderr
    notes = json.loads(result.stdout)["result"]["not_modelled"]
    assert any("runs as the deployed qos-agent's loop" in n for n in notes)
    assert not any("runs per packet" in n for n in notes)
    result = cli.run("twin", "-f", str(EXAMPLE), "--flows", "200", "--per-packet", "--json")
    assert result.code == 0, result.stderr
    notes = json.loads(result.stdout)["result"]["not_modelled"]
    assert any("mqecn runs per packet" in n for n in notes)
    assert not any("qos-agent's loop" in n for n in notes)


def test_a_proposed_file_against_the_current_intent(cli: Cli, tmp_path: Path) -> None:
    applied = cli.run("apply", "-f", str(EXAMPLE), token="operator")
    assert applied.code == 0, applied.stderr
    proposed = heavier_storage(tmp_path)
    args = ("twin", "-f", str(proposed), "--against-current", *CONTENDED, "--json")
    result = cli.run(*args, token="viewer")
    assert result.code == 0, result.stderr
    delta = {row["name"]: row for row in json.loads(result.stdout)["delta"]["classes"]}
    # DWRR serves backlogged queues in proportion to their weights (Shreedhar & Varghese,
    # SIGCOMM 1995): the proposed storage weight (400 against 50) speeds storage up and
    # slows best-effort down where the two contend.
    assert delta["storage"]["mean_us"] < 0
    assert delta["best-effort"]["mean_us"] > 0
    table = cli.run(*args[:-1], token="viewer")
    assert "current intent (version 1)" in table.stdout
    assert "negative is faster" in table.stdout


def test_bad_values_are_reported_not_run(cli: Cli) -> None:
    for bad in (("--load", "1.5"), ("--mix", "nosuch=1"), ("--mix", "rpc")):
        result = cli.run("twin", "-f", str(EXAMPLE), *bad)
        assert result.code == 3, (bad, result.stdout, result.stderr)
        assert "twin" in result.stderr or "mix" in result.stderr
