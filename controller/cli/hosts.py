"""``sluice hosts plan|apply|status``: host configuration through the API (docs/hosts.md).

``plan`` runs Ansible in check mode over every host and shows what each would change;
``apply`` starts a rollout in batches and follows it, one line per host as its batch
finishes; ``status`` lists runs or shows one. Exit codes: 0 when no host failed, 8 when some
host failed or was unreachable (or the rollout stopped), 10 with ``--exit-code`` when a plan
has changes and nothing failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import typer
from rich.console import Console

from controller.cli.app import (
    ExitCodeOption,
    Output,
    OutputOption,
    emit_rows,
    run_with_api,
    say,
)
from controller.cli.client import WORKER_WAIT_S, ApiClient
from controller.cli.exit_codes import ExitCode
from controller.cli.render import NONE, Row
from controller.cli.rollout import (
    GATE_HEADERS,
    ForceOption,
    GateOption,
    OnFailOption,
    SoakOption,
    gate_rows,
    gates_body,
)
from controller.types import JsonObject

hosts_app = typer.Typer(
    name="hosts",
    help="Configure the hosts with Ansible: plan (check mode), apply in batches, status.",
    no_args_is_help=True,
)

HOST_HEADERS = ("HOST", "BATCH", "STATUS", "CHANGED TASKS", "FAILED")
RUN_HEADERS = ("RUN", "MODE", "STATE", "VERSION", "HOSTS", "BATCHES", "FAILED", "STARTED")
TERMINAL_STATES = frozenset({"completed", "halted", "interrupted", "error", "rolled_back"})
FAILING = frozenset({"failed", "unreachable"})

Sleep = Callable[[float], None]


# --- pure rendering --------------------------------------------------------------------------


def _rollback(result: Mapping[str, Any]) -> bool:
    return result.get("phase") == "rollback"


def host_row(result: Mapping[str, Any]) -> Row:
    """One host's result; a rollback's row says so in its status (``rollback ok``) and names
    why a host was not put back."""
    changed = ", ".join(str(t.get("task")) for t in result.get("changed_tasks", [])) or NONE
    why = result.get("status") in FAILING or (_rollback(result) and result.get("status") != "ok")
    failed = str(result.get("message") or NONE) if why else NONE
    status = f"rollback {result['status']}" if _rollback(result) else str(result["status"])
    return (str(result["host"]), str(result["batch"]), status, changed, failed)


def run_row(run: Mapping[str, Any]) -> Row:
    return (
        str(run["id"]),
        str(run["mode"]),
        str(run["state"]),
        str(run["intent_version"]),
        str(len(run.get("hosts", []))),
        f"{run['batches_done']}/{run['batches_total']}",
        str(run["failures"]),
        str(run["started_at"]),
    )


def run_summary(run: Mapping[str, Any]) -> str:
    """One line: the run, its state and how many hosts ended how."""
    counts: Mapping[str, int] = run.get("counts", {})
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    verb = "would change" if run["mode"] == "plan" else "changed"
    text = ", ".join(parts).replace("changed", verb) or "no hosts"
    tail = f": {run['message']}" if run.get("message") else ""
    return f"Host {run['mode']} run {run['id']} {run['state']} ({text}){tail}."


def progress_line(run: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    if _rollback(result):
        back = f"version {result.get('from_version')}"
        line = f"rollback batch {result['batch']}: {result['host']} {result['status']} ({back})"
        return line + (f": {result['message']}" if result.get("message") else "")
    line = f"batch {result['batch']}/{run['batches_total']}: {result['host']} {result['status']}"
    if result.get("status") in FAILING and result.get("message"):
        line += f" ({result['message']})"
    return line


def run_exit_code(run: Mapping[str, Any], *, detailed: bool) -> ExitCode:
    if run["state"] != "completed" or run["failures"]:
        return ExitCode.HOSTS_FAILED
    changes = any(r.get("status") == "changed" for r in run.get("results", []))
    return ExitCode.CHANGES if detailed and changes else ExitCode.OK


# --- I/O -------------------------------------------------------------------------------------


def show_run(out: Console, run: JsonObject, fmt: Output) -> None:
    rows = [host_row(result) for result in run.get("results", [])]
    emit_rows(out, run, fmt, HOST_HEADERS, rows)
    if fmt is Output.TABLE:
        if run.get("evaluations"):
            emit_rows(out, run, fmt, GATE_HEADERS, gate_rows(run))
        say(out, run_summary(run))


def follow(
    api: ApiClient, run: JsonObject, out: Console, *, poll_s: float, sleep: Sleep = time.sleep
) -> JsonObject:
    """Poll the run until it ends, printing each host's result once, as it is recorded."""
    shown: set[tuple[str, str]] = set()
    while True:
        for result in run.get("results", []):
            key = (str(result.get("phase", "apply")), str(result["host"]))
            if key not in shown:
                shown.add(key)
                say(out, progress_line(run, result))
        if run["state"] in TERMINAL_STATES:
            return run
        sleep(poll_s)
        run = api.get_json(f"/hosts/runs/{run['id']}")


@hosts_app.command("plan")
def plan_hosts(
    ctx: typer.Context, detailed: ExitCodeOption = False, output: OutputOption = Output.TABLE
) -> None:
    """Check mode over every host: what each would change (diffs in -o json/yaml)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        run: JsonObject = api.post_json("/hosts/plan", {}, wait_s=WORKER_WAIT_S)
        show_run(out, run, output)
        return run_exit_code(run, detailed=detailed)

    run_with_api(ctx, action)


@hosts_app.command("apply")
def apply_hosts(
    ctx: typer.Context,
    batch_size: Annotated[
        int | None, typer.Option("--batch-size", min=1, help="hosts per batch (default: all)")
    ] = None,
    failure_budget: Annotated[
        int, typer.Option("--failure-budget", min=0, help="failed hosts tolerated before stopping")
    ] = 0,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="follow the run until it ends")
    ] = True,
    poll: Annotated[float, typer.Option("--poll", min=0.1, help="seconds between checks")] = 1.0,
    gate: GateOption = None,
    soak_s: SoakOption = 60.0,
    on_fail: OnFailOption = "rollback_batch",
    force: ForceOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Apply the current intent to the hosts in batches, with progress per host; with
    ``--gate`` each batch soaks, and a failed gate halts the run or puts the batch's hosts
    (``rollback_batch``) or every host reached (``rollback_all``) back to their previous
    version (docs/rollouts.md)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        body: JsonObject = {"batch_size": batch_size, "failure_budget": failure_budget}
        if gate:
            body["gates"] = gates_body(gate, soak_s, on_fail, force)
        run: JsonObject = api.post_json("/hosts/apply", body)
        say(
            Console(stderr=True),
            f"Started host apply run {run['id']} ({run['batches_total']} batches).",
        )
        if not wait:
            emit_rows(out, run, output, RUN_HEADERS, [run_row(run)])
            return ExitCode.OK
        progress = out if output is Output.TABLE else Console(stderr=True)
        run = follow(api, run, progress, poll_s=poll)
        if output is Output.TABLE:
            say(out, run_summary(run))
        else:
            emit_rows(out, run, output, HOST_HEADERS, [])
        return run_exit_code(run, detailed=False)

    run_with_api(ctx, action)


@hosts_app.command("status")
def status(
    ctx: typer.Context,
    run_id: Annotated[int | None, typer.Argument(metavar="[RUN]", min=1, help="one run")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="newest N runs")] = 20,
    output: OutputOption = Output.TABLE,
) -> None:
    """The newest host runs, or one run with every host's result."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        if run_id is not None:
            run: JsonObject = api.get_json(f"/hosts/runs/{run_id}")
            show_run(out, run, output)
            return ExitCode.OK
        runs: Sequence[JsonObject] = api.get_json("/hosts/runs", {"limit": limit})["items"]
        emit_rows(out, list(runs), output, RUN_HEADERS, [run_row(run) for run in runs])
        return ExitCode.OK

    run_with_api(ctx, action)
