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

The observed side gets the same digests straight from a table's JSON text as the switch
answered it (``{key: {field: value}}``, sonic-gnmi's rendering of a CONFIG_DB table), without
building per-entry objects, and ``AnswerDigests`` remembers the digest of each distinct text
by a hash of its bytes: a fleet of switches of one shape answers the same bytes, so a
no-drift reconcile pass decodes each distinct table once. Nothing is checked on this path;
the safety net is that a text which is not CONFIG_DB entries of strings cannot have the
digest of a desired table (whose values are all strings), so it takes the full path, which
decodes and checks every entry.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
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


def _hash(entries: list[tuple[str, Fields]] | list[tuple[str, object]]) -> str:
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


EMPTY_TABLE = ""
"""What ``table_json_digest`` gives a table without entries (never a real digest)."""


def table_json_digest(raw: bytes) -> str | None:
    """The digest ``table_digests`` gives the table whose JSON text is ``raw``; None when
    that text is not a JSON object (the caller then decodes it the checked way). An empty
    object gives ``EMPTY_TABLE``: ``table_digests`` lists only tables present, so the
    caller leaves such a table out."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    return _hash(sorted(value.items())) if value else EMPTY_TABLE


# Distinct answers a pass keeps digests of: about 150 bytes each, so 64 Ki of them hold 10 MB;
# a fleet of one shape needs one per owned table.
DEFAULT_MEMO_ENTRIES = 65536


class AnswerDigests:
    """Digests of tables' JSON answers, remembered by a BLAKE2b hash of the answer bytes so
    identical answers (switches of one shape, passes with no drift) are decoded once. At
    most ``max_entries`` are kept, the least recently used dropped first. Safe to share
    between threads."""

    def __init__(self, max_entries: int = DEFAULT_MEMO_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._known: OrderedDict[bytes, str | None] = OrderedDict()
        self._lock = threading.Lock()
        self.decoded = 0  # answers digested the long way (not remembered), for the benches

    def of_tables(self, raw: Mapping[str, bytes]) -> dict[str, str] | None:
        """Each table's digest (tables without entries left out, as ``table_digests``
        does); None when some answer is not a JSON object."""
        found: dict[str, str] = {}
        for table, text in raw.items():
            digest = self.of_text(text)
            if digest is None:
                return None
            if digest != EMPTY_TABLE:
                found[table] = digest
        return found

    def of_text(self, raw: bytes) -> str | None:
        """``table_json_digest(raw)``, from memory when these bytes were seen before."""
        key = hashlib.blake2b(raw, digest_size=16).digest()
        with self._lock:
            if key in self._known:
                self._known.move_to_end(key)
                return self._known[key]
        digest = table_json_digest(raw)
        with self._lock:
            self.decoded += 1
            self._known[key] = digest
            if len(self._known) > self._max:
                self._known.popitem(last=False)
        return digest
