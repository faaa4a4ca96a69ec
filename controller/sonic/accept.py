"""The one acceptance test an intent passes before it is stored or reported valid: it parses
and validates (``controller/intent``) and it compiles to CONFIG_DB entries inside every
table's ranges (``controller/sonic/compile.py`` checks each entry against its table schema).

``sluice check``, ``POST /intent/validate`` and every intent write call this, so a file the
check passes is a file apply accepts, and a number outside a table's range is a named
``IntentInvalid``, never a server error on apply.
"""

from __future__ import annotations

from controller.errors import CompiledConfigInvalid, FieldProblem, IntentInvalid
from controller.intent.loader import ROOT_PATH, parse_intent
from controller.intent.models import Intent
from controller.sonic.compile import compile_fleet
from controller.sonic.model import SwitchConfig


def compile_accepted(intent: Intent) -> dict[str, SwitchConfig]:
    """Every switch's desired CONFIG_DB entries; ``IntentInvalid`` naming the table entry
    when a value the intent leads to is outside what CONFIG_DB holds."""
    try:
        return compile_fleet(intent)
    except CompiledConfigInvalid as exc:
        reason = f"compiles to a CONFIG_DB entry out of range: {exc.detail}"
        raise IntentInvalid([FieldProblem(ROOT_PATH, reason)]) from None


def accept_intent(data: object) -> tuple[Intent, dict[str, SwitchConfig]]:
    """Plain data to a validated intent and its compiled fleet, or ``IntentInvalid``."""
    intent = parse_intent(data)
    return intent, compile_accepted(intent)
