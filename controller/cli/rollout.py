"""``sluice rollout``, ``sluice drift`` and ``sluice reconcile``: staged rollouts and the
reconciliation loop over the REST API (the worker does the switch work).

Exit codes of ``rollout start --watch`` and ``rollout watch`` say how the rollout ended:
0 completed with every switch verified, 11 not clean (halted, completed with switches not
verified, or rolled back), 12 paused (waiting for ``rollout resume``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Annotated

import typer
from rich.console import Console

from controller.cli.app import Output, OutputOption, emit_rows, run_with_api, say
from controller.cli.client import WORKER_WAIT_S, ApiClient
from controller.cli.exit_codes import ExitCode
from controller.cli.render import Row, text
from controller.errors import SluiceError
from controller.types import JsonObject

ENDED = {"completed", "halted", "rolled_back"}

rollout_app = typer.Typer(
    name="rollout",
    help=(
        "Staged rollouts of an intent version: canary, batches, pause, resume, rollback. "
        "Watch exit codes: 0 clean, 11 not clean (halted, unverified, rolled back), 12 paused."
    ),
    no_args_is_help=True,
)
reconcile_app = typer.Typer(
    name="reconcile",
    help="The reconciliation loop: last run per switch, or a pass now.",
    no_args_is_help=True,
)

GateOption = Annotated[
    list[str] | None,
    typer.Option(
        "--gate",
        help="a health gate, repeatable: drops:max_increase_pct:50, "
        "fct_p99_small@rpc:objective:2000 (a per-class built-in, @ its class), or "
        "NAME:absolute:5:PROMQL (built-ins: drops, mark_fraction, occupancy, agent_fallback, "
        "fct_p99_small)",
    ),
]
SoakOption = Annotated[
    float, typer.Option("--soak-s", min=0.0, help="seconds each batch soaks before its gates")
]
OnFailOption = Annotated[
    str, typer.Option("--on-fail", help="rollback_batch, rollback_all or halt")
]
ForceOption = Annotated[
    bool, typer.Option("--force", help="start even when a gate's pre-check fails")
]
RolloutId = Annotated[int, typer.Argument(min=1, help="the rollout id (sluice rollout list)")]
IntervalOption = Annotated[
    float, typer.Option("--interval", min=0.1, help="seconds between progress reads")
]

# --------------------------------------------------------------------------------------------
# pure renderers


def outcome(rollout: JsonObject) -> ExitCode | None:
    """The exit code a watch ends with, or None while the rollout is still moving."""
    state = rollout.get("state")
    if state == "paused":
        return ExitCode.ROLLOUT_PAUSED
    if state not in ENDED:
        return None
    clean = state == "completed" and not rollout.get("reason")
    return ExitCode.OK if clean else ExitCode.ROLLOUT_NOT_CLEAN


def progress_line(rollout: JsonObject) -> str:
    """``rollout 3 (version 1 -> 2): running; 2/4 verified, 1 failed, 1 pending``."""
    counts: dict[str, int] = rollout.get("counts") or {}
    total = sum(v for k, v in counts.items() if not k.startswith("rollback_"))
    done = counts.get("applied_verified", 0)
    others = [
        f"{v} {k.replace('_', ' ')}"
        for k, v in sorted(counts.items())
        if k != "applied_verified" and v
    ]
    tail = f", {', '.join(others)}" if others else ""
    versions = f"version {rollout.get('from_version')} -> {rollout.get('to_version')}"
    line = f"rollout {rollout.get('id')} ({versions}): {rollout.get('state')}; "
    line += f"{done}/{total} verified{tail}"
    reason = rollout.get("reason")
    return f"{line} ({reason})" if reason else line


def _finished(rollout: JsonObject) -> dict[tuple[str, str], JsonObject]:
    return {
        (r["phase"], r["switch"]): r
        for r in rollout.get("results") or []
        if r.get("status") != "pending" and r.get("finished_at")
    }


def new_result_lines(before: JsonObject | None, after: JsonObject) -> list[str]:
    """One line per switch that finished (again) between two reads, in run order."""
    seen = _finished(before) if before else {}
    lines = []
    for key, result in _finished(after).items():
        old = seen.get(key)
        if old is not None and old.get("attempts") == result.get("attempts"):
            continue
        phase = "rollback " if result["phase"] == "rollback" else ""
        why = f": {result['reason']}" if result.get("reason") else ""
        lines.append(
            f"  {phase}{result['switch']} (batch {result['batch']}): {result['status']}{why}"
        )
    return lines


RESULT_HEADERS = ("PHASE", "BATCH", "SWITCH", "STATUS", "ATTEMPTS", "REASON")
ROLLOUT_HEADERS = (
    "ID",
    "VERSIONS",
    "STATE",
    "CANARY",
    "BATCH",
    "BUDGET",
    "VERIFIED",
    "BY",
    "CREATED",
)
DRIFT_HEADERS = ("DETECTED", "SWITCH", "ENTRY", "FIELD", "EXPECTED", "OBSERVED", "ACTION")
RUN_HEADERS = ("SWITCH", "VERSION", "MODE", "STATUS", "DRIFT", "FINISHED", "ERROR")


def result_rows(rollout: JsonObject) -> list[Row]:
    return [
        (
            r["phase"],
            str(r["batch"]),
            r["switch"],
            r["status"],
            str(r["attempts"]),
            text(r.get("reason")),
        )
        for r in rollout.get("results") or []
    ]


def rollout_rows(rollouts: Sequence[JsonObject]) -> list[Row]:
    rows: list[Row] = []
    for r in rollouts:
        counts = r.get("counts") or {}
        total = sum(v for k, v in counts.items() if not k.startswith("rollback_"))
        rows.append(
            (
                str(r["id"]),
                f"{r['from_version']} -> {r['to_version']}",
                r["state"],
                ",".join(r.get("canary") or []) or "-",
                str(r["batch_size"]),
                str(r["failure_budget"]),
                f"{counts.get('applied_verified', 0)}/{total}",
                r["created_by"],
                text(r["created_at"]),
            )
        )
    return rows


GATE_HEADERS = ("BATCH", "STAGE", "GATE", "VALUE", "BASELINE", "LIMIT", "VERDICT", "AT")
GATE_COMPARISONS = ("absolute", "max_increase_pct", "objective")


def parse_gate_option(spec: str) -> JsonObject:
    """``drops:max_increase_pct:50`` (a built-in; ``fct_p99_small@rpc:...`` names the class
    of a per-class one) or ``NAME:absolute:5:PROMQL`` (a PromQL gate; everything after the
    third colon is the query, colons included)."""
    parts = spec.split(":", 3)
    if len(parts) < 3 or parts[1] not in GATE_COMPARISONS:
        raise typer.BadParameter(
            f"{spec!r}: write BUILTIN:COMPARISON:THRESHOLD or NAME:COMPARISON:THRESHOLD:PROMQL "
            f"(comparison {' or '.join(GATE_COMPARISONS)})"
        )
    try:
        threshold = float(parts[2])
    except ValueError:
        raise typer.BadParameter(f"{spec!r}: the threshold {parts[2]!r} is not a number") from None
    gate: JsonObject = {"name": parts[0], "comparison": parts[1], "threshold": threshold}
    if len(parts) == 4:
        gate["query"] = parts[3]
        return gate
    builtin, _, klass = parts[0].partition("@")
    # The API names a built-in gate (``fct_p99_small.rpc``) when the body gives no name.
    del gate["name"]
    gate["builtin"] = builtin
    if klass:
        gate["class"] = klass
    return gate


def gates_body(specs: Sequence[str], soak_s: float, on_fail: str, force: bool) -> JsonObject:
    """The ``gates`` object of ``POST /rollouts`` and ``POST /hosts/apply``."""
    return {
        "gates": [parse_gate_option(spec) for spec in specs],
        "soak_s": soak_s,
        "on_fail": on_fail,
        "force": force,
    }


def _number(value: object) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float | int) else str(value)


def gate_rows(rollout: JsonObject) -> list[Row]:
    return [
        (
            "pre" if e["batch"] < 0 else str(e["batch"]),
            e["stage"],
            e["gate"],
            _number(e.get("value")),
            _number(e.get("baseline")),
            _number(e.get("limit")),
            e["verdict"],
            text(e["at"]),
        )
        for e in rollout.get("evaluations") or []
    ]


def drift_rows(events: Sequence[JsonObject]) -> list[Row]:
    return [
        (
            text(e["detected_at"]),
            e["switch"],
            f"{e['table']}|{e['key']}",
            text(e.get("field")),
            text(e.get("expected")),
            text(e.get("observed")),
            e["action"],
        )
        for e in events
    ]


def run_rows(runs: Sequence[JsonObject]) -> list[Row]:
    return [
        (
            r["switch"],
            str(r["version"]),
            r["mode"],
            r["status"],
            str(r["drift_count"]),
            text(r["finished_at"]),
            text(r.get("error")),
        )
        for r in runs
    ]


# --------------------------------------------------------------------------------------------
# commands


def watch_rollout(
    api: ApiClient,
    out: Console,
    rollout_id: int,
    interval_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> ExitCode:
    """Print progress until the rollout ends or pauses; its exit code."""
    before: JsonObject | None = None
    last_line = ""
    while True:
        rollout: JsonObject = api.get_json(f"/rollouts/{rollout_id}")
        for line in new_result_lines(before, rollout):
            say(out, line)
        line = progress_line(rollout)
        if line != last_line:
            say(out, line)
            last_line = line
        code = outcome(rollout)
        if code is not None:
            return code
        before = rollout
        sleep(interval_s)


@rollout_app.command("start")
def start(
    ctx: typer.Context,
    to_version: Annotated[
        int | None, typer.Option("--to-version", min=1, help="default: the current version")
    ] = None,
    canary: Annotated[
        str | None, typer.Option("--canary", help="comma-separated switches that go first")
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 1,
    failure_budget: Annotated[
        int, typer.Option("--failure-budget", min=0, help="halt once more switches fail")
    ] = 0,
    gate: GateOption = None,
    soak_s: SoakOption = 60.0,
    on_fail: OnFailOption = "rollback_batch",
    force: ForceOption = False,
    allow_port_flaps: Annotated[
        bool,
        typer.Option(
            "--allow-port-flaps",
            help="allow changes that take switch ports admin down and up (a first rollout, "
            "a class or port added, a queue moved); `sluice plan` names them",
        ),
    ] = False,
    watch: Annotated[bool, typer.Option("--watch", help="show progress until it ends")] = False,
    interval: IntervalOption = 1.0,
) -> None:
    """Start rolling an intent version out (the worker applies it). A version whose changes
    take switch ports down is refused unless --allow-port-flaps says they may."""
    names = [n.strip() for n in (canary or "").split(",") if n.strip()]
    body: JsonObject = {
        "to_version": to_version,
        "canary": names,
        "batch_size": batch_size,
        "failure_budget": failure_budget,
        "allow_port_flaps": allow_port_flaps,
    }
    if gate:
        body["gates"] = gates_body(gate, soak_s, on_fail, force)

    def action(api: ApiClient, out: Console) -> ExitCode:
        started: JsonObject = api.post_json("/rollouts", body)
        say(out, f"Started rollout {started['id']}: " + progress_line(started))
        if not watch:
            return ExitCode.OK
        return watch_rollout(api, out, int(started["id"]), interval)

    run_with_api(ctx, action)


@rollout_app.command("watch")
def watch(ctx: typer.Context, rollout_id: RolloutId, interval: IntervalOption = 1.0) -> None:
    """Show a rollout's progress until it ends or pauses; the exit code says how."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        return watch_rollout(api, out, rollout_id, interval)

    run_with_api(ctx, action)


def _act(ctx: typer.Context, rollout_id: int, verb: str) -> None:
    def action(api: ApiClient, out: Console) -> ExitCode:
        rollout: JsonObject = api.post_json(f"/rollouts/{rollout_id}/{verb}", None)
        say(out, progress_line(rollout))
        return ExitCode.OK

    run_with_api(ctx, action)


@rollout_app.command("pause")
def pause(ctx: typer.Context, rollout_id: RolloutId) -> None:
    """Stop before the next batch."""
    _act(ctx, rollout_id, "pause")


@rollout_app.command("resume")
def resume(ctx: typer.Context, rollout_id: RolloutId) -> None:
    """Go on after a pause or a halt; failed switches are retried."""
    _act(ctx, rollout_id, "resume")


@rollout_app.command("rollback")
def rollback(ctx: typer.Context, rollout_id: RolloutId) -> None:
    """Back to the previous version, switch by switch."""
    _act(ctx, rollout_id, "rollback")


@rollout_app.command("list")
def list_rollouts(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """Rollouts, newest first."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        items = list(api.iter_items("/rollouts"))
        emit_rows(out, items, output, ROLLOUT_HEADERS, rollout_rows(items))
        return ExitCode.OK

    run_with_api(ctx, action)


@rollout_app.command("show")
def show(ctx: typer.Context, rollout_id: RolloutId, output: OutputOption = Output.TABLE) -> None:
    """One rollout with every switch's result (and its health-gate readings)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        rollout: JsonObject = api.get_json(f"/rollouts/{rollout_id}")
        emit_rows(out, rollout, output, RESULT_HEADERS, result_rows(rollout))
        if output is Output.TABLE:
            if rollout.get("evaluations"):
                emit_rows(out, rollout, output, GATE_HEADERS, gate_rows(rollout))
            if rollout.get("soak_until"):
                say(out, f"batch {rollout.get('soak_batch')} soaks until {rollout['soak_until']}")
            say(out, progress_line(rollout))
        return ExitCode.OK

    run_with_api(ctx, action)


@rollout_app.command("status")
def status(ctx: typer.Context, rollout_id: RolloutId, output: OutputOption = Output.TABLE) -> None:
    """A rollout's health-gate readings per batch (value, baseline, limit, verdict)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        rollout: JsonObject = api.get_json(f"/rollouts/{rollout_id}")
        emit_rows(out, rollout.get("evaluations") or [], output, GATE_HEADERS, gate_rows(rollout))
        if output is Output.TABLE:
            if rollout.get("soak_until"):
                say(out, f"batch {rollout.get('soak_batch')} soaks until {rollout['soak_until']}")
            say(out, progress_line(rollout))
        return ExitCode.OK

    run_with_api(ctx, action)


def drift(
    ctx: typer.Context,
    switch: Annotated[str | None, typer.Option("--switch", help="only this switch")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="newest N events")] = 50,
    output: OutputOption = Output.TABLE,
) -> None:
    """Drift the reconcile loop found: where, when, expected and observed, what it did."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        page: JsonObject = api.get_json("/drift", {"switch": switch, "limit": limit})
        items = list(page.get("items") or [])
        emit_rows(out, items, output, DRIFT_HEADERS, drift_rows(items))
        return ExitCode.OK

    run_with_api(ctx, action)


def _runs(ctx: typer.Context, output: Output, run_now: bool) -> None:
    def action(api: ApiClient, out: Console) -> ExitCode:
        if run_now:
            answer: JsonObject = api.post_json("/reconcile/run", None, wait_s=WORKER_WAIT_S)
        else:
            answer = api.get_json("/reconcile")
        items = answer.get("items")
        if not isinstance(items, list):
            raise SluiceError("the API answered without an 'items' list")
        emit_rows(out, items, output, RUN_HEADERS, run_rows(items))
        return ExitCode.OK

    run_with_api(ctx, action)


@reconcile_app.command("status")
def reconcile_status(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The last reconcile run of every switch."""
    _runs(ctx, output, run_now=False)


@reconcile_app.command("run")
def reconcile_run(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """One reconcile pass now (correct or alert per fabric.reconcile.mode)."""
    _runs(ctx, output, run_now=True)


def register(app: typer.Typer) -> None:
    """Add ``rollout``, ``drift`` and ``reconcile`` to the ``sluice`` app."""
    app.add_typer(rollout_app)
    app.add_typer(reconcile_app)
    app.command("drift")(drift)
