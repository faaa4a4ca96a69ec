"""gNMI paths with origin ``sonic-db``: ``/<DB>/<instance>/<TABLE>/<key>/<field>``.

sonic-gnmi's MixedDbClient reads the first element as the database and the second as the
instance (``localhost`` on a single-ASIC switch); after them come table, key and field. The
table key is one element and keeps its separator (``Ethernet0|3``). Pure: works on element
names, the server turns protobuf paths into them.
"""

from __future__ import annotations

from dataclasses import dataclass

from vsonic.db import DB_IDS
from vsonic.errors import InvalidPathError, UnsupportedError

ORIGIN = "sonic-db"
INSTANCE = "localhost"


@dataclass(frozen=True)
class DbPath:
    db_name: str
    table: str | None = None
    key: str | None = None
    field: str | None = None

    @property
    def db(self) -> int:
        return DB_IDS[self.db_name]

    def text(self) -> str:
        parts = [self.db_name, INSTANCE, self.table, self.key, self.field]
        return "/" + "/".join(p for p in parts if p is not None)


def parse_path(origin: str, elems: list[str]) -> DbPath:
    """Element names (prefix elements first) to a DbPath; errors say what is wrong."""
    if origin != ORIGIN:
        shown = origin or "(none)"
        raise UnsupportedError(f"origin {shown} is not served; vsonic answers origin {ORIGIN} only")
    if len(elems) < 2:
        raise InvalidPathError(f"Invalid elem length {len(elems)} in /{'/'.join(elems)}")
    db_name, instance, *rest = elems
    if db_name not in DB_IDS:
        known = ", ".join(sorted(DB_IDS))
        raise InvalidPathError(f"unknown database {db_name!r} (served: {known})")
    if instance != INSTANCE:
        raise InvalidPathError(
            f"unknown instance {instance!r}; a single-ASIC switch has {INSTANCE}"
        )
    if len(rest) > 3:
        raise InvalidPathError(f"path /{'/'.join(elems)} is deeper than TABLE/key/field")
    if any(not part for part in rest):
        raise InvalidPathError(f"path /{'/'.join(elems)} has an empty element")
    table, key, field = [*rest, None, None, None][:3]
    return DbPath(db_name, table, key, field)
