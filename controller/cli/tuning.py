"""``sluice tune``: run the tuner, list its proposals, explain one, approve or reject it
(docs/tuning.md). The renderers are pure (documents in, lines out)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console

from controller.cli.app import Output, OutputOption, emit, run_with_api, say
from controller.cli.client import ApiClient
from controller.cli.exit_codes import ExitCode
from controller.cli.render import Row, table

Doc = dict[str, Any]

tune_app = typer.Typer(
    name="tune",
    help="Parameters tuned from telemetry: propose, list, explain, approve, reject.",
    no_args_is_help=True,
)
ProposalId = Annotated[int, typer.Argument(min=1, help="the proposal id (sluice tune list)")]
LIST_HEADERS = ("ID", "STATE", "BASE", "NEW", "CHANGES", "CREATED")


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def summary_lines(doc: Doc) -> list[str]:
    """The proposal in a few lines: state, versions, every intent change."""
    new = f" -> version {doc['new_version']}" if doc.get("new_version") else ""
    lines = [f"proposal {doc['id']}: {doc['state']} (on version {doc['base_version']}{new})"]
    lines += [f"  {d['path']}: {_value(d['before'])} -> {_value(d['after'])}" for d in doc["diff"]]
    if not doc["diff"]:
        lines.append("  no change to the intent")
    for plan in doc.get("plans", []):
        for op in plan["ops"]:
            changed = ", ".join(
                f"{name} {op['old_fields'].get(name, '-')} -> {value}"
                for name, value in op["fields"].items()
                if op["old_fields"].get(name) != value
            )
            lines.append(f"  {plan['switch']}: {op['kind']} {op['table']}|{op['key']} {changed}")
    return lines


def explain_lines(doc: Doc) -> list[str]:
    """Every change and every held verdict: rule, source, inputs, outputs, bounds."""
    lines = summary_lines(doc)
    lines.append(f"window: {doc['window_start']} .. {doc['window_end']}")
    for heading, items in (("change", doc["changes"]), ("held", doc["held"])):
        for item in items:
            evidence = item["evidence"]
            verdict = f" (held: {item['held']})" if item.get("held") else ""
            values = (
                ""  # a verdict on no one value (the search's search/twin)
                if item["current"] is None and item["proposed"] is None
                else f": {_value(item['current'])} -> {_value(item['proposed'])}"
            )
            lines.append(f"{heading} {item['parameter']}{values}{verdict}")
            lines.append(f"  rule: {evidence['rule']} ({evidence['source']})")
            for kind in ("inputs", "outputs"):
                pairs = ", ".join(f"{k}={_value(v)}" for k, v in evidence[kind].items())
                lines.append(f"  {kind}: {pairs or '-'}")
            for bound in evidence["bounds"]:
                lines.append(f"  bound: {bound}")
    return lines + outcome_lines(doc)


def outcome_lines(doc: Doc) -> list[str]:
    """The search's prediction beside what the fabric measured after the rollout."""
    prediction = doc.get("prediction") or []
    if not prediction:
        return []
    outcome = doc.get("outcome")
    if outcome is None:
        lines = ["outcome: not yet measured (after the rollout, over a settled tuning window)"]
        return lines + [
            f"  {p['service_class']}: predicted {_us(p['before_us'])} -> "
            f"{_us(p['after_us'])} us ({p['change_pct']:+.1f} %"
            f"{_spread(p['min_pct'], p['max_pct'])})"
            for p in prediction
        ]
    lines = [
        f"outcome: {outcome['verdict']} (rollout {outcome['rollout_id']}): {outcome['reason']}"
    ]
    if outcome.get("window_start_s") is not None:
        lines.append(
            f"  measured over {_at(outcome['window_start_s'])} .. {_at(outcome['window_end_s'])}"
            " (small flows' p99 FCT from the hosts)"
        )
    for c in outcome["classes"]:
        head = (
            f"  {c['service_class']}: predicted {_us(c['predicted_before_us'])} -> "
            f"{_us(c['predicted_after_us'])} us ({c['predicted_pct']:+.1f} %"
            f"{_spread(c['predicted_min_pct'], c['predicted_max_pct'])})"
        )
        if c["measured_pct"] is not None:
            verdict = "agrees" if c["agrees"] else "disagrees"
            lines.append(
                f"{head}, measured {_us(c['measured_before_us'])} -> "
                f"{_us(c['measured_after_us'])} us ({c['measured_pct']:+.1f} %, "
                f"{c['flows_before']:g} -> {c['flows_after']:g} flows): {verdict}, "
                f"error {c['error_pp']:+.1f} pp{_within(c['within_spread'])}"
            )
        else:
            lines.append(f"{head}, not measurable: {c['not_measurable']}")
    return lines


def _spread(low: float | None, high: float | None) -> str:
    """The prediction's spread over seeds, where it has one."""
    return "" if low is None or high is None else f", {low:+.1f} .. {high:+.1f} % over seeds"


def _within(within: bool | None) -> str:
    if within is None:
        return ""
    return ", within the seeds' spread" if within else ", outside the seeds' spread"


def _us(value: float) -> str:
    return f"{value:.1f}"


def _at(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).isoformat()


def list_rows(docs: list[Doc]) -> list[Row]:
    return [
        (
            str(d["id"]),
            d["state"],
            str(d["base_version"]),
            str(d.get("new_version") or "-"),
            ", ".join(c["parameter"] for c in d["changes"]) or "-",
            str(d["created_at"]),
        )
        for d in docs
    ]


def _show(out: Console, doc: Doc, output: Output, lines: list[str]) -> None:
    def render() -> None:
        for line in lines:
            say(out, line)

    emit(out, doc, output, render)


# A pass the worker has yet to finish (``fabric.tuning.search: twin``).
SEARCHING = ("queued", "running")


def progress_line(doc: Doc) -> str:
    """One line per state a searching pass goes through (a running pass's reason says since
    when it searches)."""
    return f"proposal {doc['id']}: {doc['state']}: {doc['reason']}"


def follow_pass(
    read: Callable[[], Doc],
    doc: Doc,
    say_line: Callable[[str], None],
    sleep: Callable[[float], None],
    poll_s: float,
) -> Doc:
    """``doc`` read again every ``poll_s`` until the worker has finished its search, with a
    line each time its state changes."""
    say_line(progress_line(doc))
    while doc["state"] in SEARCHING:
        sleep(poll_s)
        before, doc = doc["state"], read()
        if doc["state"] != before:
            say_line(progress_line(doc))
    return doc


@tune_app.command("propose")
def propose(
    ctx: typer.Context,
    wait: Annotated[
        bool,
        typer.Option("--wait/--no-wait", help="follow a searching pass until the worker ends it"),
    ] = True,
    poll: Annotated[float, typer.Option("--poll", min=0.1, help="seconds between checks")] = 2.0,
    output: OutputOption = Output.TABLE,
) -> None:
    """Run the tuner now; the proposal waits for approval (or is applied, in auto mode). With
    fabric.tuning.search: twin the worker runs the search: followed until it ends, unless
    --no-wait."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        doc = api.post_json("/tuning/proposals", {})
        if wait and doc["state"] in SEARCHING:
            progress = out if output is Output.TABLE else Console(stderr=True)
            doc = follow_pass(
                lambda: api.get_json(f"/tuning/proposals/{doc['id']}"),
                doc,
                lambda line: say(progress, line),
                time.sleep,
                poll,
            )
        _show(out, doc, output, summary_lines(doc))
        return ExitCode.OK

    run_with_api(ctx, action)


@tune_app.command("list")
def list_proposals(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The latest proposals, newest first."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        docs = api.get_json("/tuning/proposals")
        emit(out, docs, output, lambda: out.print(table(LIST_HEADERS, list_rows(docs))))
        return ExitCode.OK

    run_with_api(ctx, action)


@tune_app.command("explain")
def explain(ctx: typer.Context, proposal: ProposalId, output: OutputOption = Output.TABLE) -> None:
    """A proposal's inputs, rules, outputs and bounds, change by change."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        doc = api.get_json(f"/tuning/proposals/{proposal}")
        _show(out, doc, output, explain_lines(doc))
        return ExitCode.OK

    run_with_api(ctx, action)


@tune_app.command("approve")
def approve(ctx: typer.Context, proposal: ProposalId, output: OutputOption = Output.TABLE) -> None:
    """Write the proposal as the next intent version (author tuner)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        doc = api.post_json(f"/tuning/proposals/{proposal}/approve", {})
        _show(out, doc, output, summary_lines(doc))
        return ExitCode.OK

    run_with_api(ctx, action)


@tune_app.command("reject")
def reject(ctx: typer.Context, proposal: ProposalId, output: OutputOption = Output.TABLE) -> None:
    """Set a pending proposal aside."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        doc = api.post_json(f"/tuning/proposals/{proposal}/reject", {})
        _show(out, doc, output, summary_lines(doc))
        return ExitCode.OK

    run_with_api(ctx, action)
