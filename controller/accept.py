"""The one acceptance test an intent passes before it is stored or reported valid: it parses
and validates (``controller/intent``) and every switch compiles in its dialect
(``switches[].dialect``): CONFIG_DB entries inside every table's ranges for a SONiC switch
(``controller/sonic/compile.py`` checks each entry against its table schema),
``openconfig-qos`` entries whose references hold for an OpenConfig one
(``controller/openconfig/``).

``sluice check``, ``POST /intent/validate`` and every intent write call this, so a file the
check passes is a file apply accepts, and a number outside a table's range is a named
``IntentInvalid``, never a server error on apply.

The API's checks and writes, and its plans, size lossless headroom for the cable lengths the
switches reported (``accept_sized``, ``controller/sonic/cables.py``): the intent's capacity
rules and the compiler see each undeclared port with its discovered length; what is stored is
the intent as written. ``sluice check`` (no controller, no discoveries) sizes for the intent
alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from controller.errors import CompiledConfigInvalid, FieldProblem, IntentInvalid
from controller.intent.loader import ROOT_PATH, intent_shape
from controller.intent.models import Dialect, Intent
from controller.intent.validate import AddressResolver, validate_intent
from controller.openconfig.entries import entries
from controller.openconfig.qos import compile_switch as compile_openconfig
from controller.sonic.cables import (
    NO_SIZING,
    CableSizing,
    has_lossless,
    resolve_cables,
    sized_intent,
)
from controller.sonic.compile import compile_fleet
from controller.sonic.discovery import Discovery
from controller.sonic.model import SwitchConfig

# The newest discovery of the intent's switches and their fabric peers, by switch name; only
# asked for an intent with a lossless class (the caller's edge reads the store).
Discovered = Callable[[Intent], Mapping[str, Discovery]]
_PORT_PATH = re.compile(r"switches\[([0-9]+)\]\.ports\[([0-9]+)\]")


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
    accepted = accept_sized(data, _nothing_discovered, resolve)
    return accepted.intent, accepted.compiled


def _nothing_discovered(_: Intent) -> Mapping[str, Discovery]:
    return {}


@dataclass(frozen=True, slots=True)
class Accepted:
    """``intent``: as written (what is stored); ``compiled``: its desired entries with
    headroom sized for ``cables`` (each lossless port's length and where it came from)."""

    intent: Intent
    compiled: dict[str, SwitchConfig]
    cables: CableSizing


def accept_sized(
    data: object, discovered: Discovered, resolve: AddressResolver | None = None
) -> Accepted:
    """``accept_intent`` with each lossless port that declares no cable sized for the length
    its switch, or the switch at the link's other end, reported (``resolve_cables``): the
    capacity rules and the compiler both see it. A headroom refusal says the length it was
    sized for and where it came from."""
    intent = intent_shape(data)
    cables = cable_sizing(intent, discovered)
    sized = sized_intent(intent, cables)
    try:
        validate_intent(sized, resolve)
    except IntentInvalid as refused:
        raise IntentInvalid(_sized_reasons(refused.problems, sized, cables)) from None
    return Accepted(intent, compile_accepted(sized), cables)


def cable_sizing(intent: Intent, discovered: Discovered) -> CableSizing:
    """Each lossless port's cable length and its source; the discoveries are asked for only
    when the intent has a lossless class."""
    return resolve_cables(intent, discovered(intent)) if has_lossless(intent) else NO_SIZING


def _sized_reasons(
    problems: list[FieldProblem], sized: Intent, cables: CableSizing
) -> list[FieldProblem]:
    """A problem at a port whose cable was discovered says so: the operator declared none."""
    if not cables.discovered():
        return problems
    shown: list[FieldProblem] = []
    for problem in problems:
        found = _PORT_PATH.match(problem.path)
        cable = None
        if found is not None:
            switch = sized.switches[int(found.group(1))]
            port = switch.ports[int(found.group(2))]
            cable = cables.ports.get((switch.name, port.name))
        if cable is not None and cable.source.discovered:
            problem = FieldProblem(problem.path, f"{problem.reason} (cable {cable.describe()})")
        shown.append(problem)
    return shown
