"""``sluice discover``, ``sluice release`` and ``sluice adoptions``: taking over a running
fabric and giving it back (docs/adopting.md). The worker reads and writes the switches; these
commands ask the API and show what it answers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from controller.cli.app import (
    Output,
    OutputOption,
    emit,
    emit_rows,
    run_with_api,
    say,
    show_plans,
)
from controller.cli.client import WORKER_WAIT_S, ApiClient
from controller.cli.exit_codes import ExitCode
from controller.cli.render import Row, table, text
from controller.errors import FieldProblem, InventoryMismatch
from controller.types import JsonObject

PORT_HEADERS = ("SWITCH", "PORT", "SPEED", "ADMIN", "OPER", "BREAKOUT", "CABLE", "NEIGHBOUR")
ADOPTION_HEADERS = ("ID", "SWITCH", "ADOPTED", "BY", "RELEASED", "BY", "ENTRIES")
RELEASE_ENDED = {"released", "failed", "unreachable", "unknown"}


# --------------------------------------------------------------------------------------------
# pure renderers


def parse_endpoint(text: str) -> tuple[str, str, int]:
    """``leaf9=10.0.0.9:8080`` -> (``leaf9``, ``10.0.0.9``, 8080); ``[::1]:8080`` works."""
    name, sep, where = text.partition("=")
    host, _, port = where.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not name or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise typer.BadParameter(
            "NAME=HOST:PORT, e.g. leaf9=10.0.0.9:8080", param_hint="--endpoint"
        )
    return name, host, int(port)


def endpoints_body(
    endpoints: Sequence[str], credential_ref: str, target: str | None
) -> list[JsonObject]:
    """The ``endpoints`` of a request from ``--endpoint NAME=HOST:PORT`` options."""
    found: list[JsonObject] = []
    for item in endpoints:
        name, host, port = parse_endpoint(item)
        gnmi: dict[str, Any] = {"address": host, "port": port}
        if target is not None:
            gnmi["target"] = target
        found.append({"name": name, "gnmi": gnmi, "credential_ref": credential_ref})
    return found


def port_rows(switches: Sequence[JsonObject]) -> list[Row]:
    rows: list[Row] = []
    for found in switches:
        neighbours = {n["port"]: n for n in found.get("neighbours", [])}
        for port in found.get("ports", []):
            peer = neighbours.get(port["name"])
            rows.append(
                (
                    str(found.get("switch")),
                    str(port["name"]),
                    f"{port['speed_gbps']:g}G" if port.get("speed_gbps") else "-",
                    text(port.get("admin_status")),
                    text(port.get("oper_status")),
                    text(port.get("breakout_mode")),
                    f"{port['cable_m']:g}m" if port.get("cable_m") is not None else "-",
                    f"{peer['system_name']} {peer['port_id']}" if peer else "-",
                )
            )
    return rows


def discovery_lines(answer: JsonObject) -> list[str]:
    """A line per switch (what it is, its lossless ports, its QoS config), the topology, the
    RTT estimate, switches that could not be read, and the declared ports' problems."""
    lines = []
    for found in answer.get("switches", []):
        lossless = found.get("lossless") or {}
        priorities = sorted({p for ps in lossless.values() for p in ps})
        counts = found.get("qos_counts") or {}
        lines.append(
            f"{found['switch']}: {text(found.get('hwsku'))} on {text(found.get('platform'))}, "
            f"buffer model {text(found.get('buffer_model'))}, {len(found.get('ports', []))} "
            f"port(s), {len(found.get('neighbours', []))} LLDP neighbour(s); QoS: "
            f"{sum(counts.values())} entries in {len(counts)} table(s); lossless priorities "
            f"{text(priorities)} on {len(lossless)} port(s); {found.get('gets')} Get(s)"
        )
    topology = answer.get("topology") or {}
    if topology:
        lines.append(f"topology: {len(topology.get('links', []))} fabric link(s)")
    rtt = answer.get("rtt")
    declared = answer.get("declared_rtt_us")
    if rtt:
        told = f" (the intent declares {declared:g} µs)" if declared else ""
        lines.append(
            f"base RTT estimate: {rtt['base_rtt_us']:g} µs over {'-'.join(rtt['path'])}{told}: "
            f"{rtt['transmission_us']:g} µs sending, {rtt['propagation_us']:g} µs on "
            f"cables ({rtt['unknown_cables']} of unknown length), {rtt['forwarding_us']:g} µs "
            f"forwarding at {rtt['per_hop_us']:g} µs a switch"
        )
    lines += [f"{name}: not read: {why}" for name, why in (answer.get("errors") or {}).items()]
    lines += [f"mismatch: {p['field']}: {p['reason']}" for p in answer.get("problems", [])]
    return lines


def inventory_text(answer: JsonObject) -> str:
    """The inventory as a YAML file to review before ``sluice import-switches -f``."""
    rtt = answer.get("rtt")
    header = [
        f"# Discovered by sluice (discovery {answer.get('id')}): review before importing",
        "# (sluice import-switches -f FILE merges the switches into the intent).",
    ]
    if rtt:
        header.append(
            f"# fabric.base_rtt_us is an estimate: {rtt['formula']}; declare your own to "
            "include host stacks."
        )
    return "\n".join(header) + "\n" + yaml.safe_dump(answer.get("inventory"), sort_keys=False)


def adoption_rows(items: Sequence[JsonObject]) -> list[Row]:
    return [
        (
            str(item["id"]),
            str(item["switch"]),
            text(item.get("adopted_at")),
            text(item.get("adopted_by")),
            text(item.get("released_at")),
            text(item.get("released_by")),
            str(item.get("entries")),
        )
        for item in items
    ]


# --------------------------------------------------------------------------------------------
# commands


EndpointOption = Annotated[
    list[str] | None,
    typer.Option("--endpoint", help="NAME=HOST:PORT of a switch the intent lacks (repeat)"),
]
CredentialRefOption = Annotated[
    str,
    typer.Option("--credential-ref", help="the endpoints' gNMI credential (env:NAME ...)"),
]
TargetOption = Annotated[
    str | None, typer.Option("--target", help="gNMI prefix target (a fleet server)")
]
DEFAULT_CREDENTIAL_REF = "env:SLUICE_GNMI_PASSWORD"


def discover(
    ctx: typer.Context,
    switches: Annotated[
        list[str] | None, typer.Argument(help="switches of the current intent")
    ] = None,
    endpoint: EndpointOption = None,
    credential_ref: CredentialRefOption = DEFAULT_CREDENTIAL_REF,
    target: TargetOption = None,
    per_hop_us: Annotated[
        float | None,
        typer.Option("--per-hop-us", min=0.001, help="forwarding delay per switch (default 1)"),
    ] = None,
    inventory: Annotated[
        Path | None,
        typer.Option("--inventory", dir_okay=False, help="write what was found as intent YAML"),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="exit 4 when declared ports differ from the switches")
    ] = False,
    tables: Annotated[
        bool, typer.Option("--tables", help="include every QoS table entry (json/yaml)")
    ] = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Read what running switches are: ports, speeds, neighbours, QoS tables; the fabric's
    topology and RTT; an inventory to review; the declared ports checked against them."""
    body: JsonObject = {
        "switches": list(switches or []),
        "endpoints": endpoints_body(endpoint or [], credential_ref, target),
    }
    if per_hop_us is not None:
        body["per_hop_us"] = per_hop_us

    def action(api: ApiClient, out: Console) -> ExitCode:
        answer: JsonObject = api.request(
            "POST", "/discoveries", json=body, params={"tables": tables}, wait_s=WORKER_WAIT_S
        ).json()

        def render() -> None:
            out.print(table(PORT_HEADERS, port_rows(answer.get("switches", []))))
            for line in discovery_lines(answer):
                say(out, line)

        emit(out, answer, output, render)
        if inventory is not None:
            inventory.write_text(inventory_text(answer), encoding="utf-8")
            say(Console(stderr=True), f"inventory written to {inventory}")
        problems = answer.get("problems") or []
        if check and problems:
            raise InventoryMismatch([FieldProblem(p["field"], p["reason"]) for p in problems])
        return ExitCode.OK

    run_with_api(ctx, action)


def release(
    ctx: typer.Context,
    switch: Annotated[str, typer.Argument(help="the switch to give back to its operator")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show the plan, change nothing")] = (
        False
    ),
    allow_port_flaps: Annotated[
        bool,
        typer.Option("--allow-port-flaps", help="allow restores that take ports down and up"),
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="wait until the worker is done")] = False,
    interval: Annotated[
        float, typer.Option("--interval", min=0.1, help="seconds between progress reads")
    ] = 2.0,
    output: OutputOption = Output.TABLE,
) -> None:
    """Give a switch back: the operator's config sluice overwrote restored from the adoption
    record, sluice's own entries removed, verified by read-back (exit 13 if --wait and the
    worker could not release it)."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        body = {"switch": switch, "dry_run": dry_run, "allow_port_flaps": allow_port_flaps}
        answer: JsonObject = api.post_json("/releases", body)
        plan = answer.get("plan")
        emit(out, answer, output, lambda: show_plans(out, [plan] if plan else [], Output.TABLE))
        err = Console(stderr=True)
        if dry_run:
            return ExitCode.OK
        say(err, f"Release {answer['id']} of {switch} recorded; the worker carries it out.")
        if not wait:
            return ExitCode.OK
        while answer["state"] not in RELEASE_ENDED:
            time.sleep(interval)
            answer = api.get_json(f"/releases/{answer['id']}")
        reason = f": {answer['reason']}" if answer.get("reason") else ""
        say(err, f"Release {answer['id']} of {switch}: {answer['state']}{reason}")
        return ExitCode.OK if answer["state"] == "released" else ExitCode.NOT_RELEASED

    run_with_api(ctx, action)


def adoptions(
    ctx: typer.Context,
    switch: Annotated[str | None, typer.Option("--switch", help="only this switch")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Adoption records: when sluice took each switch over, and when it let go."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        items = list(api.iter_items("/adoptions", {"switch": switch}))
        emit_rows(out, items, output, ADOPTION_HEADERS, adoption_rows(items))
        return ExitCode.OK

    run_with_api(ctx, action)


def register(app: typer.Typer) -> None:
    """Add ``discover``, ``release`` and ``adoptions`` to the ``sluice`` app."""
    app.command("discover")(discover)
    app.command("release")(release)
    app.command("adoptions")(adoptions)
