"""``sluice twin``: run an intent file's compiled configuration in the packet-level twin
(netsim, on this machine) and print flow completion times per class and per size bucket;
``--compare`` runs a second intent file on the same flows and prints the deltas, and
``--against-current`` compares the file with the API's current intent (current vs proposed).
The twin runs here, not in the worker: ``POST /twin-runs`` is the recorded, worker-run way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from controller.cli.app import run_reporting_errors, run_with_api, say
from controller.cli.client import ApiClient
from controller.cli.exit_codes import ExitCode
from controller.errors import FieldProblem, IntentInvalid
from controller.intent.loader import load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.intent.validate import validate_intent
from controller.settings import TwinSettings
from controller.twin.results import compare, delta_lines, lossless_lines, table_lines
from controller.twin.runner import run_twin
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
    if res.get("lossless") is not None:
        for line in lossless_lines(res["lossless"]):  # type: ignore[arg-type]
            say(out, "  " + line)
    for finding in res.get("findings", []):  # type: ignore[attr-defined]
        say(out, f"  finding: {finding}")
    for note in res["not_modelled"] if notes else []:  # type: ignore[attr-defined]
        say(out, f"  not modelled: {note}")


Labelled = tuple[str, Intent]


def _run_twin(
    out: Console, before: Labelled, after: Labelled | None, request: Request, as_json: bool
) -> ExitCode:
    """Run ``before`` (and ``after`` on the same flows) in netsim and print the results."""
    settings = TwinSettings()
    err = Console(stderr=True)

    def one(intent: Intent) -> JsonObject:
        try:
            return run_twin(
                validate_intent(intent),
                request,
                settings.netsim,
                timeout_s=settings.timeout_s,
                on_progress=lambda line: say(err, line),
            )
        except TwinInputInvalid as error:
            raise IntentInvalid([FieldProblem("twin", str(error))]) from error

    first = one(before[1])
    second = one(after[1]) if after is not None else None
    if as_json:
        doc: JsonObject = {"result": first}
        if second is not None:
            doc = {"before": first, "after": second, "delta": compare(first, second)}
        print(json.dumps(doc, indent=2))
        return ExitCode.OK
    title = f"({request.workload}, load {request.load}, {request.flows} flows, seed {request.seed})"
    _print_result(out, f"{before[0]} {title}", first)
    if after is not None and second is not None:
        same_notes = second["not_modelled"] == first["not_modelled"]
        _print_result(out, after[0], second, notes=not same_notes)
        delta = compare(first, second)
        say(out, f"delta ({after[0]} minus {before[0]}); negative is faster")
        for line in delta_lines(delta["classes"]) + delta_lines(delta["buckets"])[1:]:
            say(out, "  " + line)
    return ExitCode.OK


def twin(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Option("--file", "-f", exists=True, dir_okay=False, help="intent YAML")
    ],
    workload: Annotated[str, typer.Option(help="websearch, datamining, cache, hadoop")] = (
        "websearch"
    ),
    load: Annotated[float, typer.Option(help="offered load of every host link, 0..1")] = 0.6,
    flows: Annotated[int, typer.Option(help="flows to run")] = 2000,
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
    against_current: Annotated[
        bool,
        typer.Option(
            "--against-current",
            help="compare FILE with the API's current intent (read with your token)",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    per_packet: Annotated[
        bool,
        typer.Option(
            "--per-packet",
            help="switch ports run MQ-ECN/DynaQ/HDCQ per packet, as the papers do, instead of "
            "the qos-agent's loop at the intent's interval (what a switch runs)",
        ),
    ] = False,
) -> None:
    """The twin: flow completion times per class for an intent, before rolling it out."""

    def request() -> Request:
        try:
            return Request(workload, load, flows, seed, parse_mix(mix), per_packet)
        except TwinInputInvalid as error:
            raise IntentInvalid([FieldProblem("mix", str(error))]) from error

    if against_current:

        def action(api: ApiClient, out: Console) -> ExitCode:
            if compare_with is not None:
                raise IntentInvalid(
                    [FieldProblem("compare", "give --compare or --against-current")]
                )
            current = api.get_json("/intent")
            before = (
                f"current intent (version {current['version']['number']})",
                parse_intent(current["intent"]),
            )
            return _run_twin(out, before, (str(file), load_intent_file(file)), request(), as_json)

        run_with_api(ctx, action)
        return

    def call(out: Console) -> ExitCode:
        after = (
            None if compare_with is None else (str(compare_with), load_intent_file(compare_with))
        )
        return _run_twin(out, (str(file), load_intent_file(file)), after, request(), as_json)

    run_reporting_errors(call)


def register(app: typer.Typer) -> None:
    app.command()(twin)
