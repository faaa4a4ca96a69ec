"""``sluice``: the operator's command line over the REST API (docs/operator-guide.md).

Commands are thin: read options, call the API through ``ApiClient``, hand the documents to
the pure renderers, return an ``ExitCode``. ``run_with_api`` is the one place that turns
domain errors into readable lines on stderr and exit codes, so no command shows a traceback.
The HTTP client is built by an injectable factory (``CliDeps``), so tests can aim the CLI at
a real server on 127.0.0.1 or at an in-process app.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console

from controller.accept import compile_accepted
from controller.cli.client import PAGE_SIZE, ApiClient
from controller.cli.exit_codes import ExitCode, changes_exit_code, exit_code_for
from controller.cli.render import (
    COUNT_HEADERS,
    KEY_VALUE_HEADERS,
    PLAN_HEADERS,
    Row,
    cable_lines,
    dump,
    error_lines,
    intent_summary_rows,
    key_value_rows,
    plan_has_changes,
    plan_rows,
    plan_summary,
    row_of,
    table,
    table_count_rows,
)
from controller.cli.resources import AUDIT_COLUMNS, RESOURCES
from controller.errors import NotFound, SluiceError
from controller.intent.loader import load_intent_file, read_intent_document
from controller.settings import DEFAULT_API_URL, ApiSettings
from controller.southbound.resolve import resolve_names
from controller.types import JsonObject

HttpFactory = Callable[[str, float], httpx.Client]


def default_http(base_url: str, timeout_s: float) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=timeout_s)


def http_verifying(ca: Path | None) -> HttpFactory:
    """Clients that check an https API's certificate against ``ca`` (SLUICE_API_CA), or
    against the system's trusted roots when it is unset."""
    if ca is None:
        return default_http

    def make(base_url: str, timeout_s: float) -> httpx.Client:
        verify = ssl.create_default_context(cafile=ca)
        return httpx.Client(base_url=base_url, timeout=timeout_s, verify=verify)

    return make


@dataclass(frozen=True)
class CliDeps:
    """What the CLI needs from outside; tests pass their own as ``obj=`` to the runner."""

    make_http: HttpFactory = default_http
    page_size: int = PAGE_SIZE


@dataclass(frozen=True)
class CliState:
    deps: CliDeps
    api_url: str
    token: str | None = field(repr=False)
    timeout_s: float


class Output(StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


class Kind(StrEnum):
    SWITCHES = "switches"
    HOSTS = "hosts"
    CLASSES = "classes"
    FABRIC = "fabric"
    INTENT = "intent"
    VERSIONS = "versions"
    TOKENS = "tokens"


app = typer.Typer(
    name="sluice",
    help="Declare service classes for a SONiC fabric, see the per-switch plan, apply it.",
    epilog=(
        "Exit codes: 0 ok, 1 unexpected, 2 usage, 3 invalid intent, 4 conflict, "
        "5 unauthenticated/forbidden, 6 not found, 7 API unreachable, "
        "8 hosts failed, 10 changes (--exit-code), 11/12 rollout watch, 13 not released, "
        "14 check found something. "
        "See docs/operator-guide.md."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

Action = Callable[[ApiClient, Console], ExitCode]
OutputOption = Annotated[Output, typer.Option("--output", "-o", help="table, json or yaml")]
ExitCodeOption = Annotated[
    bool, typer.Option("--exit-code", help="exit 10 (not 0) when there are changes")
]
SwitchOption = Annotated[str | None, typer.Option("--switch", help="only this switch")]
SummaryOption = Annotated[
    bool, typer.Option("--summary", "-s", help="counts per switch and table, not every entry")
]


@app.callback()
def connect(
    ctx: typer.Context,
    api_url: Annotated[
        str | None,
        typer.Option(
            "--api-url",
            show_default=False,
            help=f"base URL of the sluice API [default: SLUICE_API_URL or {DEFAULT_API_URL}]",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            show_default=False,
            help="bearer token (prefer the SLUICE_API_TOKEN variable: arguments show in ps)",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="seconds per request")
    ] = 30.0,
) -> None:
    # SLUICE_API_URL and SLUICE_API_TOKEN are read where every process reads its settings.
    configured = ApiSettings()
    if api_url is None:
        api_url = configured.url
    if token is None and configured.token is not None:
        token = configured.token.get_secret_value()
    if not api_url.startswith(("http://", "https://")):
        raise typer.BadParameter("must start with http:// or https://", param_hint="--api-url")
    deps = ctx.obj if isinstance(ctx.obj, CliDeps) else CliDeps(http_verifying(configured.ca))
    ctx.obj = CliState(deps=deps, api_url=api_url.rstrip("/"), token=token, timeout_s=timeout)


def run_with_api(ctx: typer.Context, action: Action) -> None:
    """Run ``action`` against the API and exit with its code, or with the error's code."""
    state: CliState = ctx.obj

    def call(out: Console) -> ExitCode:
        with state.deps.make_http(state.api_url, state.timeout_s) as http:
            return action(ApiClient(http, state.token, state.deps.page_size), out)

    run_reporting_errors(call)


def run_reporting_errors(call: Callable[[Console], ExitCode]) -> None:
    out, err = Console(), Console(stderr=True)
    try:
        code = call(out)
    except SluiceError as error:
        for line in error_lines(error):
            say(err, line)
        code = exit_code_for(error)
    except Exception as error:  # the contract: one readable line and exit 1, never a traceback
        say(err, f"error: unexpected {type(error).__name__}: {error}")
        code = ExitCode.UNEXPECTED
    raise typer.Exit(int(code))


def say(console: Console, line: str) -> None:
    """One line exactly as written: no markup, no highlighting, never wrapped (grep-able)."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def emit(out: Console, data: Any, fmt: Output, render_table: Callable[[], None]) -> None:
    if fmt is Output.TABLE:
        render_table()
    else:
        # Plain print: rich would wrap and highlight, and scripts parse this.
        print(dump(data, fmt.value))


def emit_rows(
    out: Console, data: Any, fmt: Output, headers: Sequence[str], rows: Sequence[Row]
) -> None:
    emit(out, data, fmt, lambda: out.print(table(headers, rows)))


# --- apply, plan, diff -----------------------------------------------------------------------


def plans_of(document: Any) -> list[JsonObject]:
    """The per-switch plans of a ``/plans`` or ``/diff`` answer."""
    plans = document.get("plans") if isinstance(document, dict) else None
    if not isinstance(plans, list):
        raise SluiceError("the API answered without a 'plans' list")
    return plans


def _dicts(document: Any, name: str) -> list[JsonObject]:
    found = document.get(name) if isinstance(document, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def warnings_of(document: Any) -> list[JsonObject]:
    """The warnings of a ``/plans`` answer (none in a ``/diff`` answer), its cable findings
    among them (a finding's field names the switch and its CONFIG_DB field)."""
    findings = [
        {"field": f"{f.get('switch')}: {f.get('field')}", "reason": f.get("reason")}
        for f in _dicts(document, "cable_findings")
    ]
    return _dicts(document, "warnings") + findings


def cables_of(document: Any) -> list[JsonObject]:
    """Each lossless port's cable length and its source, from a ``/plans`` answer."""
    return _dicts(document, "cables")


def show_plans(
    out: Console,
    plans: Sequence[JsonObject],
    fmt: Output,
    *,
    summary: bool = False,
    warnings: Sequence[JsonObject] = (),
    cables: Sequence[JsonObject] = (),
) -> None:
    """The plan on stdout; its warnings on stderr too (stdout stays the plan for scripts).
    ``cables``: the lossless ports' cable lengths and their sources (``cables_of``)."""

    def render() -> None:
        if plan_has_changes(plans) and summary:
            out.print(table(COUNT_HEADERS, table_count_rows(plans)))
        elif plan_has_changes(plans):
            out.print(table(PLAN_HEADERS, plan_rows(plans)))
        # --summary: counts only; the ports each switch takes down are counted, not listed.
        for line in plan_summary(plans, ports=not summary):
            say(out, line)
        for line in cable_lines(cables):
            say(out, line)

    document: JsonObject = {"plans": list(plans)}
    if warnings:
        document["warnings"] = list(warnings)
    if cables:
        document["cables"] = list(cables)
    emit(out, document, fmt, render)
    err = Console(stderr=True)
    for warning in warnings:
        say(err, f"warning: {warning.get('field')}: {warning.get('reason')}")


def show_plan_answer(
    out: Console, answer: Any, fmt: Output, *, summary: bool = False
) -> list[JsonObject]:
    """A ``/plans`` answer shown whole (``show_plans`` with its warnings and cables); its
    plans."""
    plans = plans_of(answer)
    show_plans(
        out,
        plans,
        fmt,
        summary=summary,
        warnings=warnings_of(answer),
        cables=cables_of(answer),
    )
    return plans


def report_write(written: JsonObject, previous: int) -> None:
    """One line on stderr (stdout stays the plan, for scripts reading ``-o json``)."""
    number = written["version"]["number"]
    if written.get("changed", True):
        line = f"Applied: intent version {number} (was {previous})."
    else:
        line = f"Unchanged: intent version {number} already says this; no new version."
    say(Console(stderr=True), line)


@app.command()
def apply(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Option("--file", "-f", exists=True, dir_okay=False, help="intent YAML")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="show the plan, change nothing")
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="recorded with the version")
    ] = None,
    detailed: ExitCodeOption = False,
    summary: SummaryOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Validate an intent file, show the per-switch plan, and make it the current intent."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        intent = read_intent_document(file)
        api.post_json("/intent/validate", intent)
        answer = api.post_json("/plans", {"intent": intent})
        plans = show_plan_answer(out, answer, output, summary=summary)
        if dry_run:
            return changes_exit_code(plan_has_changes(plans), detailed=detailed)
        _, current = api.current_intent()
        written = api.replace_intent(intent, reason or f"sluice apply -f {file.name}", current)
        report_write(written, current)
        return ExitCode.OK

    run_with_api(ctx, action)


@app.command()
def plan(
    ctx: typer.Context,
    switch: SwitchOption = None,
    detailed: ExitCodeOption = False,
    summary: SummaryOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """What each switch must change to reach the current intent (from its recorded state)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        body = {"switches": [switch]} if switch else {}
        answer = api.post_json("/plans", body)
        plans = show_plan_answer(out, answer, output, summary=summary)
        return changes_exit_code(plan_has_changes(plans), detailed=detailed)

    run_with_api(ctx, action)


@app.command()
def diff(
    ctx: typer.Context,
    from_version: Annotated[int | None, typer.Option("--from", min=1, help="older version")] = None,
    to_version: Annotated[int | None, typer.Option("--to", min=1, help="newer version")] = None,
    switch: SwitchOption = None,
    detailed: ExitCodeOption = False,
    summary: SummaryOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Desired-state diff between two intent versions (default: previous -> current)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        params = {"from": from_version, "to": to_version, "switch": switch}
        answer = api.get_json("/diff", params)
        plans = plans_of(answer)
        if output is Output.TABLE:
            versions = f"{answer['from_version']} -> {answer['to_version']}"
            say(out, f"Desired state, version {versions}:")
        show_plans(out, plans, output, summary=summary)
        return changes_exit_code(plan_has_changes(plans), detailed=detailed)

    run_with_api(ctx, action)


# --- get, audit, check -----------------------------------------------------------------------


def get_one(api: ApiClient, kind: Kind, name: str) -> JsonObject:
    """One item by name (switches, hosts, classes), number (versions) or name/id (tokens)."""
    resource = RESOURCES[kind.value]
    if kind is Kind.TOKENS:  # the API has no GET /tokens/{id}: find it in the list
        for token in api.iter_items(resource.path):
            if name in (str(token.get("name")), str(token.get("id"))):
                return token
        raise NotFound(f"no token named or numbered {name!r}")
    item: JsonObject = api.get_json(f"{resource.path}/{name}")
    return item


def _get_single_document(api: ApiClient, out: Console, kind: Kind, fmt: Output) -> None:
    if kind is Kind.INTENT:
        current, version = api.current_intent()
        if current is None:
            raise NotFound("there is no intent yet: sluice apply -f intent.yaml creates it")
        # json/yaml give the intent alone, so `get intent -o yaml > f` can be applied again.
        intent = current["intent"]
        emit_rows(out, intent, fmt, KEY_VALUE_HEADERS, intent_summary_rows(intent, version))
        return
    fabric = api.get_json("/fabric")
    emit_rows(out, fabric, fmt, KEY_VALUE_HEADERS, key_value_rows(fabric))


@app.command()
def get(
    ctx: typer.Context,
    kind: Annotated[Kind, typer.Argument(help="what to show")],
    name: Annotated[str | None, typer.Argument(help="one item by name (or number/id)")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Show switches, hosts, classes, fabric, intent, versions or tokens."""
    if name is not None and kind in (Kind.FABRIC, Kind.INTENT):
        raise typer.BadParameter(f"{kind.value} is one document; drop NAME", param_hint="NAME")

    def action(api: ApiClient, out: Console) -> ExitCode:
        if kind in (Kind.FABRIC, Kind.INTENT):
            _get_single_document(api, out, kind, output)
            return ExitCode.OK
        resource = RESOURCES[kind.value]
        headers = [header for header, _ in resource.columns]
        if name is not None:
            item = get_one(api, kind, name)
            row = row_of(
                item.get("version", item) if kind is Kind.VERSIONS else item, resource.columns
            )
            emit_rows(out, item, output, headers, [row])
            return ExitCode.OK
        items = list(api.iter_items(resource.path))
        emit_rows(out, items, output, headers, [row_of(item, resource.columns) for item in items])
        return ExitCode.OK

    run_with_api(ctx, action)


@app.command()
def audit(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", min=1, help="newest N entries")] = 20,
    output: OutputOption = Output.TABLE,
) -> None:
    """The audit log: who changed what, when."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        items = list(api.get_json("/audit", {"limit": limit}).get("items", []))
        rows = [row_of(item, AUDIT_COLUMNS) for item in items]
        emit_rows(out, items, output, [header for header, _ in AUDIT_COLUMNS], rows)
        return ExitCode.OK

    run_with_api(ctx, action)


check_app = typer.Typer(
    name="check",
    help="Validate an intent file offline (-f FILE), or check the running fabric (roce).",
    invoke_without_command=True,
)
app.add_typer(check_app)


@check_app.callback()
def check(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", exists=True, dir_okay=False, help="intent YAML"),
    ] = None,
) -> None:
    """Validate an intent file offline (no API): every problem with its field, exit 3 if any.
    ``sluice check roce`` checks the running fabric instead (through the API)."""
    if ctx.invoked_subcommand is not None:
        if file is not None:
            raise typer.BadParameter(f"not with `check {ctx.invoked_subcommand}`", param_hint="-f")
        return
    if file is None:
        raise typer.BadParameter("an intent file to validate, or a check: roce", param_hint="-f")

    def call(out: Console) -> ExitCode:
        intent = load_intent_file(file, resolve_names)  # names compared as the API does
        compile_accepted(intent)  # every check apply makes: check passes <=> apply accepts
        counts = (
            f"{len(intent.switches)} switches, {len(intent.hosts)} hosts, "
            f"{len(intent.service_classes)} service classes"
        )
        say(out, f"{file}: valid ({counts})")
        return ExitCode.OK

    run_reporting_errors(call)


def main() -> None:
    app()
