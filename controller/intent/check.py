"""Offline intent check for the CLI (``sluice check -f intent.yaml``): no API, no database."""

from __future__ import annotations

from pathlib import Path

from controller.errors import FieldProblem, IntentInvalid
from controller.intent.loader import load_intent_file


def check_intent_file(path: Path) -> list[FieldProblem]:
    """Every problem in the intent file at ``path``; an empty list means it would be accepted.

    Reading, YAML syntax, field shapes and the cross-object rules all report the same way, so a
    caller prints one list whatever went wrong.
    """
    try:
        load_intent_file(path)
    except IntentInvalid as exc:
        return exc.problems
    return []
