"""``sluice simulate``: run an intent file's compiled configuration in the packet-level twin
(netsim, on this machine) and print flow completion times per class and per size bucket;
``--compare`` runs a second intent file on the same flows and prints the deltas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from controller.cli.app import run_reporting_errors, say
from controller.cli.exit_codes import ExitCode
from controller.policy.loader import load_intent_file
from controller.policy.validate import validate_intent
from controller.settings import SimulateSettings
from controller.twin.results import compare, delta_lines, table_lines
from controller.twin.runner import simulate as run_twin
from controller.twin.translate import Request, TwinInputInvalid

JsonObject = dict[str, object]


def parse_mix(text: str | None) -> tuple[tuple[str, float], ...]:
    """``rpc=0.5,storage=0.5`` -> ((rpc, 0.5), (storage, 0.5))."""
    if not text:
        return ()
    pairs: list[tuple[str, float]] = []
    for item in text.split(","):
        name, _, share = item.partition("=")
        try:
            pairs.append((name.strip(), float(share)))
        except ValueError as error:
            raise TwinInputInvalid(f"--mix item {item!r} is not class=share") from error
    return tuple(pairs)


def _print_result(out: Console, title: str, res: JsonObject, *, notes: bool = True) -> None:
    say(out, title)
    for line in table_lines(list(res["classes"])):  # type: ignore[call-overload]
        say(out, "  " + line)
    for line in table_lines(list(res["buckets"]))[1:]:  # type: ignore[call-overload]
        say(out, "  " + line)
    for note in res["not_modelled"] if notes else []:  # type: ignore[attr-defined]
        say(out, f"  not modelled: {note}")


def simulate(
    file: Annotated[
        Path, typer.Option("--file", "-f", exists=True, dir_okay=False, help="intent YAML")
    ],
    workload: Annotated[str, typer.Option(help="websearch, datamining, cache, hadoop")] = (
        "websearch"
    ),
    load: Annotated[float, typer.Option(help="offered load of every host link, 0..1")] = 0.6,
    flows: Annotated[int, typer.Option(help="flows to simulate")] = 2000,
    seed: Annotated[int, typer.Option(help="seed of every random draw")] = 1,
    mix: Annotated[
        str | None, typer.Option(help="each class's share of the load: rpc=0.5,storage=0.5")
    ] = None,
    compare_with: Annotated[
        Path | None,
        typer.Option(
            "--compare", exists=True, dir_okay=False, help="a second intent to run and compare"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """What-if: flow completion times per class for an intent, before rolling it out."""

    def call(out: Console) -> ExitCode:
        settings = SimulateSettings()
        request = Request(workload, load, flows, seed, parse_mix(mix))
        err = Console(stderr=True)

        def progress(line: str) -> None:
            say(err, line)

        def one(path: Path) -> JsonObject:
            intent = load_intent_file(path)
            validate_intent(intent)
            return run_twin(
                intent,
                request,
                settings.netsim,
                timeout_s=settings.timeout_s,
                on_progress=progress,
            )

        first = one(file)
        second = one(compare_with) if compare_with is not None else None
        if as_json:
            doc: JsonObject = {"result": first}
            if second is not None:
                doc = {"before": first, "after": second, "delta": compare(first, second)}
            print(json.dumps(doc, indent=2))
            return ExitCode.OK
        _print_result(out, f"{file} ({workload}, load {load}, {flows} flows, seed {seed})", first)
        if second is not None:
            same_notes = second["not_modelled"] == first["not_modelled"]
            _print_result(out, f"{compare_with}", second, notes=not same_notes)
            delta = compare(first, second)
            say(out, f"delta ({compare_with} minus {file}); negative is faster")
            for line in delta_lines(delta["classes"]) + delta_lines(delta["buckets"])[1:]:
                say(out, "  " + line)
        return ExitCode.OK

    run_reporting_errors(call)


def register(app: typer.Typer) -> None:
    app.command()(simulate)
