"""Intent rules about numbers that must fit the hardware: QJUMP levels, thresholds, weights.

Part of the cross-object validation (``controller/policy/validate.py`` runs ``CAPACITY_RULES``);
kept apart because these rules call the pure algorithms in ``controller/qos/``, so the limits
the validator enforces are computed by the same code that later fills CONFIG_DB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from controller.errors import FieldProblem
from controller.policy.models import Intent, ServiceClass

Rule = Callable[[Intent], list[FieldProblem]]


def _qjump_classes(intent: Intent) -> Iterator[tuple[str, ServiceClass, int]]:
    for i, service_class in enumerate(intent.service_classes):
        if service_class.qjump_level is not None:
            yield f"service_classes[{i}]", service_class, service_class.qjump_level


def qjump_levels_declared(intent: Intent) -> list[FieldProblem]:
    """A QJUMP level needs the fabric's QJUMP parameters, a factor, hosts to enforce it on,
    and a level of its own (each level is one 802.1p priority and one host rate limiter)."""
    problems: list[FieldProblem] = []
    first_use: dict[int, str] = {}
    qjump = intent.fabric.qjump
    for path, _, level in _qjump_classes(intent):
        field = f"{path}.qjump_level"
        if level in first_use:
            reason = f"QJUMP level {level} is already used at {first_use[level]}"
            problems.append(FieldProblem(field, reason))
        first_use.setdefault(level, field)
        if qjump is None:
            reason = "needs fabric.qjump (hosts, packet_bytes, epsilon_us, factors)"
            problems.append(FieldProblem(field, reason))
        elif level not in qjump.factors:
            reason = f"level {level} has no throughput factor in fabric.qjump.factors"
            problems.append(FieldProblem(field, reason))
        if not intent.hosts:
            reason = "needs at least one host: QJUMP is enforced on hosts, R is the slowest NIC"
            problems.append(FieldProblem(field, reason))
    return problems


def qjump_fabric(intent: Intent) -> list[FieldProblem]:
    """The epoch 2nP/R + eps holds only if n covers every host that may send and P is a packet
    the fabric carries (seeds/qjump-nsdi15.txt §3)."""
    qjump = intent.fabric.qjump
    if qjump is None:
        return []
    problems = []
    if qjump.packet_bytes > intent.fabric.mtu_bytes:
        reason = (
            f"P = {qjump.packet_bytes} B is larger than the fabric MTU "
            f"({intent.fabric.mtu_bytes} B)"
        )
        problems.append(FieldProblem("fabric.qjump.packet_bytes", reason))
    if qjump.hosts < len(intent.hosts):
        reason = (
            f"n = {qjump.hosts} is less than the {len(intent.hosts)} hosts declared: "
            "the epoch would be too short for their worst-case fan-in"
        )
        problems.append(FieldProblem("fabric.qjump.hosts", reason))
    return problems


CAPACITY_RULES: tuple[Rule, ...] = (
    qjump_levels_declared,
    qjump_fabric,
)
