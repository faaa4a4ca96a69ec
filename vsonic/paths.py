"""gNMI paths with origin ``sonic-db``: ``/<DB>/<instance>/<TABLE>/<key>/<field>[/<index>]``.

sonic-gnmi's MixedDbClient (sonic-net/sonic-gnmi:sonic_data_client/mixed_db_client.go,
``ParseDatabase`` and ``getDbtablePath``) reads the first element as the database and the
second as the instance, which a single-ASIC switch ignores (``localhost`` by convention);
after them come table, key, field and a leaf-list index. The table key is one element and
keeps its separator (``Ethernet0|3``). In COUNTERS_DB only ``COUNTERS`` and ``PORT_PHY_ATTR``
have keys: every other table there (the name maps) is one hash, so the element after the
table names a field (``COUNTERS_QUEUE_NAME_MAP/Ethernet0:3``), held here as key ``""``.

Errors read as the real server's: what ``ParseDatabase`` refuses is a ``BadTargetError``
(NOT_FOUND "rpc error: code = Unimplemented desc = …" on every RPC), what ``getDbtablePath``
refuses a ``PathNotFoundError``. Pure: works on element names, the server turns protobuf
paths into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vsonic.db import COUNTERS_DB, DB_IDS, SEPARATORS
from vsonic.errors import BadTargetError, InvalidPathError, PathNotFoundError, UnsupportedError

ORIGIN = "sonic-db"
INSTANCE = "localhost"
# sonic-gnmi sonic_data_client/db_client.go countersDbHasTableKeys.
KEYED_COUNTERS_TABLES = frozenset({"COUNTERS", "PORT_PHY_ATTR"})


@dataclass(frozen=True)
class DbPath:
    db_name: str
    table: str | None = None
    key: str | None = None  # "" for a key-less COUNTERS_DB table
    field: str | None = None
    index: int | None = None  # an item of a leaf-list field (``<field>@`` in redis)

    @property
    def db(self) -> int:
        return DB_IDS[self.db_name]

    @property
    def keyless(self) -> bool:
        """A COUNTERS_DB table that is one hash with no key level."""
        return self.key == ""

    def rkey(self) -> str:
        """The redis key of the entry (or key-less hash) this path names."""
        if self.table is None or self.key is None:
            raise ValueError(f"{self.text()} names no entry")
        return self.table if self.keyless else f"{self.table}{SEPARATORS[self.db]}{self.key}"

    def text(self) -> str:
        parts = [self.db_name, INSTANCE, self.table, self.key or None, self.field]
        if self.index is not None:
            parts.append(str(self.index))
        return "/" + "/".join(p for p in parts if p is not None)


def check_origin(origin: str) -> None:
    if origin != ORIGIN:
        shown = origin or "(none)"
        raise UnsupportedError(f"origin {shown} is not served; vsonic answers origin {ORIGIN} only")


def request_db(paths: Sequence[Sequence[str]]) -> str:
    """The one database the element lists of a request name (prefix elements first), as
    ``ParseDatabase`` checks them: every path at least DB and instance, all one database
    and one instance, and a database the switch has."""
    target = instance = ""
    for elems in paths:
        if len(elems) < 2:
            raise BadTargetError("rpc error: code = Unimplemented desc = Invalid elem length")
        if not target:
            target = elems[0]
        elif target != elems[0]:
            raise BadTargetError("rpc error: code = Unimplemented desc = Target conflict in path")
        if not instance:
            instance = elems[1]
        elif instance != elems[1]:
            raise BadTargetError(
                "rpc error: code = Unimplemented desc = Namespace/container conflict in path"
            )
    if not target:
        raise BadTargetError("rpc error: code = Unimplemented desc = No valid path")
    if target not in DB_IDS:
        raise BadTargetError(
            "rpc error: code = Unimplemented desc = Invalid target: ns , container"
        )
    return target


def parse_path(origin: str, elems: list[str]) -> DbPath:
    """Element names (prefix elements first) to a DbPath; errors say what is wrong."""
    check_origin(origin)
    db_name = request_db([elems])
    rest = elems[2:]
    if any(not part for part in rest):
        raise InvalidPathError(f"path /{'/'.join(elems)} has an empty element")
    if db_name == "COUNTERS_DB" and rest and rest[0] not in KEYED_COUNTERS_TABLES:
        rest = [rest[0], "", *rest[1:]]  # the dummy key of a key-less table
    if len(rest) > 4:
        separator = SEPARATORS[COUNTERS_DB if db_name == "COUNTERS_DB" else DB_IDS[db_name]]
        raise PathNotFoundError(f"Invalid db table Path {separator.join(elems[2:])}")
    table, key, field, index = [*rest, None, None, None, None][:4]
    return DbPath(db_name, table, key, field, _index(index))


def _index(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise PathNotFoundError(f"Invalid index {text}") from None
