"""One module per CONFIG_DB table sluice writes, each with its schema and builder.

``TABLES`` is the dispatch table the compiler and the diff use: table name -> module, found
by listing this package (so each table is named once, by its file). The
write order is derived from the schemas' references (``controller/sonic/order.py``).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType
from typing import Protocol, cast

from controller.sonic.context import SwitchContext
from controller.sonic.model import EntryKey, Fields
from controller.sonic.order import write_order
from controller.sonic.schema import TableSchema


class TableModule(Protocol):
    SCHEMA: TableSchema

    # Must not read ``ctx.name``: compile_fleet builds a switch shape once for all its switches.
    def build(self, ctx: SwitchContext) -> dict[EntryKey, Fields]: ...


def _table_modules() -> tuple[TableModule, ...]:
    """Every public module of this package, in name order: a new table is a new file here,
    named nowhere else. A module without ``SCHEMA`` and ``build`` is a mistake, said at import."""
    found: list[TableModule] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if not isinstance(getattr(module, "SCHEMA", None), TableSchema) or not callable(
            getattr(module, "build", None)
        ):
            raise ImportError(f"{module.__name__} has no SCHEMA and build: not a table module")
        found.append(cast(TableModule, module))
    return tuple(found)


_MODULES = _table_modules()

TABLES: MappingProxyType[str, TableModule] = MappingProxyType({m.SCHEMA.table: m for m in _MODULES})
SCHEMAS: MappingProxyType[str, TableSchema] = MappingProxyType(
    {n: m.SCHEMA for n, m in TABLES.items()}
)
WRITE_ORDER: tuple[str, ...] = write_order(SCHEMAS)
