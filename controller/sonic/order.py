"""Write order of CONFIG_DB tables, derived from the schemas' reference declarations.

SONiC refuses a QUEUE entry whose ``scheduler`` names a SCHEDULER that does not exist yet
(YANG leafref, sonic-queue.yang), so a plan writes referenced tables first and deletes in the
reverse order. The order is a topological sort of the "references" graph, never a hand list:
adding a table with a ``ref`` field puts it in the right place by itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.errors import CompiledConfigInvalid
from controller.sonic.schema import TableSchema


def write_order(schemas: Mapping[str, TableSchema]) -> tuple[str, ...]:
    """Tables in an order where each comes after every table it references (Kahn's algorithm;
    ties broken by name so the order is stable). Tables outside ``schemas`` (BUFFER_POOL, which
    sluice never writes) are external and impose no order."""
    deps = {name: schema.depends_on() & schemas.keys() for name, schema in schemas.items()}
    ordered: list[str] = []
    ready = sorted(name for name, needs in deps.items() if not needs)
    placed: set[str] = set()
    while ready:
        table = ready.pop(0)
        ordered.append(table)
        placed.add(table)
        newly = [
            n for n, needs in deps.items() if n not in placed and n not in ready and needs <= placed
        ]
        ready = sorted(ready + newly)
    if len(ordered) != len(deps):
        stuck = sorted(set(deps) - placed)
        raise CompiledConfigInvalid(f"table references form a cycle among {stuck}")
    return tuple(ordered)


def rank(order: tuple[str, ...]) -> dict[str, int]:
    """Table -> position in the write order, for sorting ops."""
    return {table: index for index, table in enumerate(order)}
