"""``sluice import-switches -f inventory.yaml``: bring switches from an inventory file (the
one ``vsonic up`` writes, or any YAML with a ``switches:`` list in the intent's shape) into
the current intent.

Switches are matched by name: a named switch is replaced, a new one is added, the rest of the
intent stays as it is. The merged intent is validated and planned by the API like any other
(``--dry-run`` stops there) and stored as one new version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from controller.cli.app import (
    ExitCodeOption,
    Output,
    OutputOption,
    SummaryOption,
    report_write,
    run_with_api,
    say,
    show_plan_answer,
)
from controller.cli.client import ApiClient
from controller.cli.exit_codes import ExitCode, changes_exit_code
from controller.cli.render import plan_has_changes
from controller.errors import FieldProblem, IntentInvalid
from controller.intent.loader import read_intent_document
from controller.types import JsonObject


def inventory_switches(document: JsonObject) -> list[JsonObject]:
    """The ``switches`` list of an inventory document; refused when it has none."""
    switches = document.get("switches")
    if not isinstance(switches, list) or not switches:
        raise IntentInvalid([FieldProblem("switches", "the inventory lists no switches")])
    for i, switch in enumerate(switches):
        if not isinstance(switch, dict) or not isinstance(switch.get("name"), str):
            raise IntentInvalid([FieldProblem(f"switches[{i}]", "a switch needs a name")])
    return switches


def merge_switches(intent: JsonObject, switches: list[JsonObject]) -> tuple[JsonObject, int, int]:
    """``intent`` with ``switches`` replacing the ones of the same name and the others
    appended, in the inventory's order; also how many were replaced and added. Pure."""
    incoming = {str(s["name"]): s for s in switches}
    kept: list[Any] = []
    replaced = 0
    for current in intent.get("switches") or []:
        name = current.get("name") if isinstance(current, dict) else None
        if name in incoming:
            kept.append(incoming.pop(name))
            replaced += 1
        else:
            kept.append(current)
    added = list(incoming.values())
    return {**intent, "switches": kept + added}, replaced, len(added)


def import_switches(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Option("--file", "-f", exists=True, dir_okay=False, help="inventory YAML")
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show the plan, change nothing")] = (
        False
    ),
    reason: Annotated[str | None, typer.Option("--reason", help="recorded with the version")] = (
        None
    ),
    detailed: ExitCodeOption = False,
    summary: SummaryOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Add or replace switches (by name) in the current intent from an inventory file."""

    def action(api: ApiClient, out: Console) -> ExitCode:
        switches = inventory_switches(read_intent_document(file))
        document, current = api.current_intent()
        if document is None:
            raise IntentInvalid(
                [FieldProblem("intent", "no intent yet: apply one (with its fabric) first")]
            )
        intent, replaced, added = merge_switches(document["intent"], switches)
        say(Console(stderr=True), f"{replaced} switch(es) replaced, {added} added")
        api.post_json("/intent/validate", intent)
        answer = api.post_json("/plans", {"intent": intent})
        plans = show_plan_answer(out, answer, output, summary=summary)
        if dry_run:
            return changes_exit_code(plan_has_changes(plans), detailed=detailed)
        written = api.replace_intent(
            intent, reason or f"sluice import-switches -f {file.name}", current
        )
        report_write(written, current)
        return ExitCode.OK

    run_with_api(ctx, action)
