"""The one acceptance test an intent passes before it is stored or reported valid: it parses
and validates (``controller/intent``) and every switch compiles in its dialect
(``switches[].dialect``): CONFIG_DB entries inside every table's ranges for a SONiC switch
(``controller/sonic/compile.py`` checks each entry against its table schema),
``openconfig-qos`` entries whose references hold for an OpenConfig one
(``controller/openconfig/``).

``sluice check``, ``POST /intent/validate`` and every intent write call this, so a file the
check passes is a file apply accepts, and a number outside a table's range is a named
``IntentInvalid``, never a server error on apply.
"""

from __future__ import annotations

from controller.errors import CompiledConfigInvalid, FieldProblem, IntentInvalid
from controller.intent.loader import ROOT_PATH, parse_intent
from controller.intent.models import Dialect, Intent
from controller.intent.validate import AddressResolver
from controller.openconfig.entries import entries
from controller.openconfig.qos import compile_switch as compile_openconfig
from controller.sonic.compile import compile_fleet
from controller.sonic.model import SwitchConfig


def compile_dialects(intent: Intent) -> dict[str, SwitchConfig]:
    """Every switch's desired entries in its dialect, by switch name: CONFIG_DB for SONiC,
    ``openconfig-qos`` entries (``controller/openconfig/entries.py``) for OpenConfig."""
    openconfig = [s for s in intent.switches if s.dialect is Dialect.OPENCONFIG]
    fleet = compile_fleet(intent)
    for switch in openconfig:
        fleet[switch.name] = entries(compile_openconfig(intent, switch))
    return fleet


def compile_accepted(intent: Intent) -> dict[str, SwitchConfig]:
    """Every switch's desired entries; ``IntentInvalid`` naming the table entry when a value
    the intent leads to is outside what the switch's dialect holds."""
    try:
        return compile_dialects(intent)
    except CompiledConfigInvalid as exc:
        reason = f"compiles to an entry out of range: {exc.detail}"
        raise IntentInvalid([FieldProblem(ROOT_PATH, reason)]) from None


def accept_intent(
    data: object, resolve: AddressResolver | None = None
) -> tuple[Intent, dict[str, SwitchConfig]]:
    """Plain data to a validated intent and its compiled fleet, or ``IntentInvalid``;
    ``resolve`` is the DNS the endpoint rule compares names with (the caller's edge)."""
    intent = parse_intent(data, resolve)
    return intent, compile_accepted(intent)
