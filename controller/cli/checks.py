"""``sluice check roce``: is the running fabric ready for RoCE (docs/lossless.md, "Checking
the fabric"). The worker reads the switches; the API judges them (``POST /checks/roce``);
this shows the answer: every link and every lossless port, and each finding named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console

from controller.cli.adopting import (
    DEFAULT_CREDENTIAL_REF,
    CredentialRefOption,
    EndpointOption,
    TargetOption,
    endpoints_body,
)
from controller.cli.app import run_with_api, say
from controller.cli.client import WORKER_WAIT_S, ApiClient
from controller.cli.exit_codes import ExitCode
from controller.cli.render import Row, dump, table
from controller.types import JsonObject

LINK_HEADERS = ("END A", "END B", "LOSSLESS", "RESULT")
FINDING_HEADERS = ("KIND", "END", "FIELD", "EXPECTED", "FOUND")


# --------------------------------------------------------------------------------------------
# pure renderers


def _findings(count: int) -> str:
    return f"{count} finding{'' if count == 1 else 's'}"


def _result(item: JsonObject) -> str:
    return "ok" if item.get("ok") else _findings(len(item.get("findings") or []))


def _priorities(item: JsonObject) -> str:
    return ",".join(str(p) for p in item.get("priorities") or []) or "-"


def link_rows(answer: JsonObject) -> list[Row]:
    return [
        (str(link["a"]), str(link["b"]), _priorities(link), _result(link))
        for link in answer.get("links") or []
    ]


def findings_of(answer: JsonObject) -> list[JsonObject]:
    """Every finding: the switches not read, then per link, then per port."""
    found: list[JsonObject] = list(answer.get("unreachable") or [])
    for group in ("links", "ports"):
        for item in answer.get(group) or []:
            found += item.get("findings") or []
    return found


def finding_rows(findings: Sequence[JsonObject]) -> list[Row]:
    return [
        (str(f["kind"]), str(f["end"]), str(f["field"] or "-"), str(f["expected"]), str(f["found"]))
        for f in findings
    ]


def summary_line(answer: JsonObject) -> str:
    links = answer.get("links") or []
    ports = answer.get("ports") or []
    verdict = "ready for RoCE" if answer.get("ok") else _findings(len(findings_of(answer)))
    return (
        f"{len(links)} links, {len(ports)} ports with PFC: {verdict} "
        f"(discovery {answer.get('discovery_id')})"
    )


# --------------------------------------------------------------------------------------------
# commands


def roce(
    ctx: typer.Context,
    switches: Annotated[
        list[str] | None,
        typer.Argument(help="switches of the current intent (default: every one)"),
    ] = None,
    endpoint: EndpointOption = None,
    credential_ref: CredentialRefOption = DEFAULT_CREDENTIAL_REF,
    target: TargetOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the answer as JSON")] = False,
) -> None:
    """Is the fabric ready for RoCE: both ends of every link agree on PFC priorities, the
    lossless DSCP->TC, TC->PG and PFC->queue entries and MTU; every lossless priority has
    headroom and a watchdog. Exit 14 when there is any finding."""
    body: JsonObject = {
        "switches": list(switches or []),
        "endpoints": endpoints_body(endpoint or [], credential_ref, target),
    }

    def action(api: ApiClient, out: Console) -> ExitCode:
        answer: JsonObject = api.request(
            "POST", "/checks/roce", json=body, wait_s=WORKER_WAIT_S
        ).json()
        if as_json:
            print(dump(answer, "json"))  # plain print: scripts parse it
        else:
            out.print(table(LINK_HEADERS, link_rows(answer)))
            findings = findings_of(answer)
            if findings:
                out.print(table(FINDING_HEADERS, finding_rows(findings)))
                for finding in findings:
                    say(out, f"{finding['end']}: {finding['reason']}")
            say(out, summary_line(answer))
        return ExitCode.OK if answer.get("ok") else ExitCode.CHECK_FAILED

    run_with_api(ctx, action)
