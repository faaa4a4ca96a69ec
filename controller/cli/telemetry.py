"""``sluice health`` and ``sluice top SWITCH``: the fabric's health and a live per-queue table
of one switch, like ``top`` (docs/health.md). Both read the API, which reads Prometheus.

The renderers are pure (documents in, rows and lines out); ``top`` refreshes a rich ``Live``
table in place every ``--interval`` seconds until Ctrl-C, or prints ``--once`` for scripts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from controller.cli.app import Output, OutputOption, emit, run_with_api, say
from controller.cli.client import ApiClient
from controller.cli.exit_codes import ExitCode
from controller.cli.render import Row, table

Doc = dict[str, Any]

HEALTH_HEADERS = ("SWITCH", "STATE", "WHY")
TOP_HEADERS = (
    "PORT",
    "Q",
    "CLASS",
    "TX/s",
    "PKT/s",
    "MARK/s",
    "MARK%",
    "DROP/s",
    "OCCUPANCY",
    "THRESHOLD",
    "BASIS",
)

# --- pure renderers ------------------------------------------------------------------------


def si(value: float | None, unit: str = "") -> str:
    """``1530000`` -> ``1.53M``; ``-`` when unknown."""
    if value is None:
        return "-"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{prefix}{unit}"
    return f"{value:.3g}{unit}"


def percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.1f}"


def reason_text(reason: Doc) -> str:
    return f"{reason.get('where')}: {reason.get('detail')}"


def health_lines(doc: Doc) -> list[str]:
    """The fabric's verdict and its own reasons (collectors)."""
    counts = doc.get("counts") or {}
    tally = ", ".join(f"{counts.get(state, 0)} {state}" for state in ("ok", "warn", "critical"))
    lines = [f"fabric: {doc.get('state')} ({tally})"]
    lines += [f"  {r.get('state')}: {reason_text(r)}" for r in doc.get("reasons") or []]
    return lines


IDLE_TEXT = "idle: no queue counter moving, nothing held (not a fault)"


def health_rows(doc: Doc) -> list[Row]:
    """One row per reason, and one saying so for an idle switch (a switch with neither gets
    one row with ``-``)."""
    rows: list[Row] = []
    for switch in doc.get("switches") or []:
        reasons = switch.get("reasons") or []
        texts = [f"{r.get('state')}: {reason_text(r)}" for r in reasons]
        if switch.get("idle"):
            texts.append(IDLE_TEXT)
        texts = texts or ["-"]
        rows += [
            (
                str(switch.get("switch")) if i == 0 else "",
                str(switch.get("state")) if i == 0 else "",
                t,
            )
            for i, t in enumerate(texts)
        ]
    return rows


def orders_hex(number: float) -> str:
    """The orders' version back in the hex the compiler wrote (a 12-digit digest fits a
    gauge's float exactly); leading zeros of the digest are not recoverable."""
    return f"{int(number):x}"


def top_header(doc: Doc) -> str:
    """``leaf1 | agent dynamic (mqecn), heartbeat 0.2 s, orders v3 | stream up, updated 1.0 s ago``
    (parts without a value are left out)."""
    agent = doc.get("agent") or {}
    heartbeat = agent.get("heartbeat_age_s")
    orders = agent.get("orders_version")
    stream = {True: "up", False: "DOWN", None: "unknown"}[doc.get("stream_up")]
    updated = doc.get("last_update_age_s")
    parts = [
        str(doc.get("switch")),
        f"agent {agent.get('mode') or 'unknown'}"
        + (f" ({agent['algorithm']})" if agent.get("algorithm") else "")
        + (f", heartbeat {heartbeat:.1f} s" if heartbeat is not None else "")
        + (f", orders v{orders_hex(orders)}" if orders is not None else ""),
        f"stream {stream}" + (f", updated {updated:.1f} s ago" if updated is not None else ""),
    ]
    if agent.get("mode") == "idle":
        parts.append("idle: no queue counter moving (rates are the last that moved)")
    return " | ".join(parts)


def top_rows(doc: Doc) -> list[Row]:
    """One row per queue, ports in the intent's order, queues by number."""
    rows: list[Row] = []
    for port in doc.get("ports") or []:
        queues = port.get("queues") or []
        if not queues:
            rows.append((str(port.get("port")), *("-",) * (len(TOP_HEADERS) - 1)))
        for q in queues:
            rows.append(
                (
                    str(port.get("port")),
                    str(q.get("queue")),
                    str(q.get("service_class") or "-"),
                    si(q.get("tx_bytes_per_s"), "B"),
                    si(q.get("tx_packets_per_s")),
                    si(q.get("ecn_marked_packets_per_s")),
                    percent(q.get("mark_fraction")),
                    si(q.get("dropped_packets_per_s")),
                    si(q.get("occupancy_bytes"), "B"),
                    si(q.get("threshold_bytes"), "B"),
                    str(q.get("basis") or "-"),
                )
            )
    return rows


def top_frame(doc: Doc) -> Group:
    return Group(Text(top_header(doc)), table(TOP_HEADERS, top_rows(doc)))


# --- commands ------------------------------------------------------------------------------


def health(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """Fabric health from telemetry: ok, warn or critical per switch, with every reason."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        doc = api.get_json("/health")

        def render() -> None:
            for line in health_lines(doc):
                say(out, line)
            out.print(table(HEALTH_HEADERS, health_rows(doc)))

        emit(out, doc, output, render)
        return ExitCode.OK

    run_with_api(ctx, action)


def top(
    ctx: typer.Context,
    switch: Annotated[str, typer.Argument(help="a switch of the intent")],
    interval: Annotated[
        float, typer.Option("--interval", "-d", min=0.5, help="seconds between refreshes")
    ] = 2.0,
    once: Annotated[bool, typer.Option("--once", help="print one frame and exit")] = False,
    iterations: Annotated[
        int,
        typer.Option("--iterations", "-n", min=0, help="frames before exiting (0: until Ctrl-C)"),
    ] = 0,
) -> None:
    """A live per-queue table of one switch (rates, marks, drops, occupancy, threshold)."""
    path = f"/telemetry/switches/{switch}"

    def action(api: ApiClient, out: Console) -> ExitCode:
        def frame() -> Group:
            return top_frame(api.get_json(path))

        if once:
            out.print(frame())
            return ExitCode.OK
        return watch(out, frame, interval, iterations)

    run_with_api(ctx, action)


def watch(out: Console, frame: Callable[[], Group], interval_s: float, iterations: int) -> ExitCode:
    """Redraw ``frame()`` in place every ``interval_s`` until Ctrl-C or ``iterations``."""
    shown = 1
    with Live(frame(), console=out, auto_refresh=False, transient=False) as live:
        try:
            while iterations == 0 or shown < iterations:
                time.sleep(interval_s)
                live.update(frame(), refresh=True)
                shown += 1
        except KeyboardInterrupt:
            pass
    return ExitCode.OK


def register(app: typer.Typer) -> None:
    app.command()(health)
    app.command()(top)
