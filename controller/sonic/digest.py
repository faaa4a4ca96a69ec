"""Per-table digests of a switch configuration, so a no-drift diff need not walk entries.

A table's digest is a hash of its entries in a canonical form (entries sorted by key, each
entry's fields sorted by name), so equal contents give equal digests whatever order the
entries were built or read in, and any change of a key, a field name or a value changes it.
Two configs whose digests agree on a table hold the same entries there, and the diff
(``controller/sonic/diff.py``) then has nothing to do for that table: every wanted entry is
present with the same fields and nothing is left over to delete. BLAKE2b with a 128-bit
digest (RFC 7693) makes an accidental match between different tables negligible.

The compiler computes these once per distinct switch shape (``compile_fleet_digested``), so a
fleet of a thousand switches hashes a handful of configs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType

from controller.sonic.model import Fields, SwitchConfig

TableDigests = Mapping[str, str]
"""Table name -> hex digest of that table's entries."""

DigestPair = tuple[TableDigests, TableDigests]
"""(desired, observed) digests of one switch."""


def table_digests(config: SwitchConfig) -> TableDigests:
    """The digest of every table present in ``config`` (read-only)."""
    by_table: dict[str, list[tuple[str, Fields]]] = {}
    for (table, key), fields in config.items():
        by_table.setdefault(table, []).append((key, fields))
    return MappingProxyType({table: _hash(entries) for table, entries in sorted(by_table.items())})


def _hash(entries: list[tuple[str, Fields]]) -> str:
    # Keys are unique within a table, so sorting the pairs compares keys only; the encoder
    # sorts each entry's fields (in C) and quotes every string, so no two distinct tables
    # encode alike.
    canonical = json.dumps(sorted(entries), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(canonical.encode(), digest_size=16).hexdigest()


def changed_tables(desired: TableDigests, observed: TableDigests) -> frozenset[str]:
    """Tables whose entries may differ: a different digest, or present on one side only."""
    return frozenset(
        table
        for table in desired.keys() | observed.keys()
        if desired.get(table) != observed.get(table)
    )
