"""SONiC's Redis database layout, and the stores that hold it.

One switch keeps its databases on one Redis server, as SONiC does
(sonic-swss-common:common/database_config.json):
APPL_DB 0, COUNTERS_DB 2, CONFIG_DB 4, STATE_DB 6. CONFIG_DB and STATE_DB join table and key
with ``|`` (``QUEUE|Ethernet0|3``), the others with ``:`` (``COUNTERS:oid:0x...``). Every entry
is a hash of string fields. A few COUNTERS_DB tables (``COUNTERS_QUEUE_NAME_MAP``) are one hash
with no key level at all.

Two stores implement the same small interface:
- ``RedisStore``: a real Redis server, so an on-switch agent can read and write it directly.
- ``MemoryStore``: a dict per database, for fleet mode, where one process serves hundreds of
  switch targets and a Redis per switch would be the bottleneck, not the thing under test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import redis

APPL_DB = 0
COUNTERS_DB = 2
CONFIG_DB = 4
STATE_DB = 6

DB_IDS: dict[str, int] = {
    "APPL_DB": APPL_DB,
    "COUNTERS_DB": COUNTERS_DB,
    "CONFIG_DB": CONFIG_DB,
    "STATE_DB": STATE_DB,
}
SEPARATORS: dict[int, str] = {APPL_DB: ":", COUNTERS_DB: ":", CONFIG_DB: "|", STATE_DB: "|"}

# An entry with no fields cannot exist as a Redis hash; SONiC stores the pair NULL/NULL
# instead (swsscommon ConfigDBConnector) and hides it on read.
EMPTY_ENTRY_MARKER = "NULL"

Fields = dict[str, str]
# A store's change feed (``vsonic.changes``), kept by the store: one per store, made on demand.
FeedT = TypeVar("FeedT")
EntryKey = tuple[str, str]  # (TABLE, key), e.g. ("QUEUE", "Ethernet0|3")
Config = dict[EntryKey, Fields]


def redis_key(db: int, table: str, key: str) -> str:
    """``QUEUE`` + ``Ethernet0|3`` -> ``QUEUE|Ethernet0|3`` in CONFIG_DB."""
    return f"{table}{SEPARATORS[db]}{key}"


def split_redis_key(db: int, rkey: str) -> EntryKey | None:
    """The inverse of ``redis_key``; None for a key-less hash such as a name map."""
    table, sep, key = rkey.partition(SEPARATORS[db])
    if not sep:
        return None
    return table, key


def to_stored(fields: Mapping[str, str]) -> Fields:
    return dict(fields) if fields else {EMPTY_ENTRY_MARKER: EMPTY_ENTRY_MARKER}


def from_stored(fields: Mapping[str, str]) -> Fields:
    return {k: v for k, v in fields.items() if k != EMPTY_ENTRY_MARKER}


class Store(Protocol):
    """What the gNMI server needs from a switch's databases. Keys are full Redis keys."""

    def read_hash(self, db: int, rkey: str) -> Fields | None:
        """The hash at ``rkey`` (NULL marker removed), None when the key does not exist."""
        ...

    def read_prefixed(self, db: int, prefix: str) -> dict[str, Fields]:
        """Every hash whose key starts with ``prefix`` (empty prefix: the whole database)."""
        ...

    def write_atomically(self, db: int, changes: Mapping[str, Fields | None]) -> None:
        """Replace each named hash with the given fields, or delete it for None; all or none."""
        ...

    def close(self) -> None: ...


# KEYS: the entries; ARGV per key: the number of field and value strings, then those
# (0: delete the entry).
_WRITE_ENTRIES = """
local at = 1
for _, key in ipairs(KEYS) do
    local count = tonumber(ARGV[at])
    if count == 0 then
        redis.call('DEL', key)
    else
        local keep = {}
        local pairs = {}
        for i = at + 1, at + count, 2 do
            keep[ARGV[i]] = true
            table.insert(pairs, ARGV[i])
            table.insert(pairs, ARGV[i + 1])
        end
        local gone = {}
        for _, name in ipairs(redis.call('HKEYS', key)) do
            if not keep[name] then table.insert(gone, name) end
        end
        redis.call('HSET', key, unpack(pairs))
        if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
    end
    at = at + count + 1
end
return 0
"""


def _glob_escape(text: str) -> str:
    # SCAN MATCH uses glob syntax; keys such as "[WRED_PROFILE|x]" must match literally.
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


class RedisStore:
    """A switch's databases on one Redis server, one client per database number."""

    def __init__(self, clients: Mapping[int, redis.Redis[str]]) -> None:
        missing = set(SEPARATORS) - set(clients)
        if missing:
            raise ValueError(f"RedisStore needs clients for databases {sorted(missing)}")
        self._clients = dict(clients)
        self._feed: Any = None
        self._feed_lock = threading.Lock()

    def feed(self, make: Callable[[RedisStore], FeedT | None]) -> FeedT | None:
        """This store's change feed, made once by ``make`` (``vsonic.changes.feed_for``); None,
        and asked again next time, while ``make`` finds none. Closed with the store."""
        with self._feed_lock:
            if self._feed is None:
                self._feed = make(self)
            feed: FeedT | None = self._feed
            return feed

    @classmethod
    def connect(cls, host: str, port: int) -> RedisStore:
        return cls(
            {
                db: redis.Redis(host=host, port=port, db=db, decode_responses=True)
                for db in SEPARATORS
            }
        )

    def client(self, db: int) -> redis.Redis[str]:
        return self._clients[db]

    def read_hash(self, db: int, rkey: str) -> Fields | None:
        fields: dict[str, str] = self._clients[db].hgetall(rkey)
        return from_stored(fields) if fields else None

    def read_prefixed(self, db: int, prefix: str) -> dict[str, Fields]:
        client = self._clients[db]
        keys = sorted(client.scan_iter(match=_glob_escape(prefix) + "*", count=1000))
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        values: list[Any] = pipe.execute(raise_on_error=False)
        # A key deleted between SCAN and HGETALL comes back empty: it is gone, skip it. A key
        # that is no hash (a switch's CONFIG_DB_INITIALIZED string) is no entry: skip it too.
        return {
            k: from_stored(v)
            for k, v in zip(keys, values, strict=True)
            if v and isinstance(v, dict)
        }

    def write_atomically(self, db: int, changes: Mapping[str, Fields | None]) -> None:
        # One script: a reader sees the state before or after the whole change, never
        # between. An entry is written as swsscommon's ConfigDBConnector.set_entry writes it,
        # HSET of its fields and HDEL of the fields it lost (DEL when it is deleted), so a
        # subscriber sees the keyspace events a switch's writers cause (vsonic/subscribe.py).
        keys: list[str] = []
        args: list[str] = []
        for rkey, fields in changes.items():
            keys.append(rkey)
            stored = [] if fields is None else [x for kv in to_stored(fields).items() for x in kv]
            args.append(str(len(stored)))
            args.extend(stored)
        if keys:
            self._clients[db].eval(_WRITE_ENTRIES, len(keys), *keys, *args)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
        for client in self._clients.values():
            client.close()


class MemoryStore:
    """A switch's databases as dicts in this process (fleet mode). Thread-safe.

    Entries are held by table (``{db: {TABLE: {redis key: fields}}}``), so reading a table
    touches that table's entries only, not every key of the database. Each table also keeps
    the store-wide write count at its last write (``generation``): a reader that cached an
    answer for the table knows it is still current while the generation has not moved.
    """

    def __init__(self) -> None:
        self._tables: dict[int, dict[str, dict[str, Fields]]] = {db: {} for db in SEPARATORS}
        self._generations: dict[int, dict[str, int]] = {db: {} for db in SEPARATORS}
        self._writes = 0
        self._lock = threading.Lock()
        self._listeners: list[Callable[[int, str | None, str], None]] = []
        self._feed: Any = None

    def on_change(self, listener: Callable[[int, str | None, str], None]) -> None:
        """Call ``listener(db, key, event)`` after each write, outside the lock (the change
        log); the event is the keyspace event redis would publish: ``hset`` for a hash
        written, ``del`` for one deleted."""
        self._listeners.append(listener)

    def feed(self, make: Callable[[MemoryStore], FeedT]) -> FeedT:
        """This store's change feed, made once by ``make`` (``vsonic.changes.feed_for``)."""
        with self._lock:
            if self._feed is None:
                self._feed = make(self)
            feed: FeedT = self._feed
            return feed

    def _table_of(self, db: int, rkey: str) -> str:
        # A key-less hash (a COUNTERS_DB name map) is its own table.
        return rkey.partition(SEPARATORS[db])[0]

    def read_hash(self, db: int, rkey: str) -> Fields | None:
        with self._lock:
            fields = self._tables[db].get(self._table_of(db, rkey), {}).get(rkey)
            return dict(fields) if fields is not None else None

    def read_prefixed(self, db: int, prefix: str) -> dict[str, Fields]:
        table, sep, rest = prefix.partition(SEPARATORS[db])
        with self._lock:
            tables = self._tables[db]
            if sep:  # "QUEUE|..." : only table QUEUE can hold such keys
                entries = tables.get(table, {})
                if not rest:  # the whole table: every entry matches
                    return {k: dict(v) for k, v in entries.items()}
                return {k: dict(v) for k, v in entries.items() if k.startswith(prefix)}
            # No separator in the prefix: a key starts with it exactly when its table does.
            return {
                k: dict(v)
                for name, entries in tables.items()
                if name.startswith(prefix)
                for k, v in entries.items()
            }

    def table_entries(self, db: int, table: str) -> dict[str, Fields]:
        """Every entry of ``table`` keyed by its key (``Ethernet0|3``), from the index."""
        start = len(table) + 1
        with self._lock:
            entries = self._tables[db].get(table, {})
            # The key-less hash of the same name (a name map) is no entry of the table.
            return {rkey[start:]: dict(v) for rkey, v in entries.items() if rkey != table}

    def generation(self, db: int, table: str) -> int:
        """The store's write count at the last write to ``table`` (keyed entries and the
        key-less hash of that name); 0 while it was never written."""
        with self._lock:
            return self._generations[db].get(table, 0)

    def write_atomically(self, db: int, changes: Mapping[str, Fields | None]) -> None:
        with self._lock:
            self._writes += 1
            tables = self._tables[db]
            for rkey, fields in changes.items():
                name = self._table_of(db, rkey)
                self._generations[db][name] = self._writes
                if fields is not None:
                    tables.setdefault(name, {})[rkey] = dict(fields)
                    continue
                entries = tables.get(name)
                if entries is not None:
                    entries.pop(rkey, None)
                    if not entries:
                        del tables[name]
        for listener in self._listeners:
            for rkey, fields in changes.items():
                listener(db, rkey, "del" if fields is None else "hset")

    def close(self) -> None:
        return None


def read_table(store: Store, db: int, table: str) -> dict[str, Fields]:
    """All entries of ``table`` keyed by their key (``Ethernet0|3``)."""
    if isinstance(store, MemoryStore):  # one pass over the table's own entries
        return store.table_entries(db, table)
    prefix = table + SEPARATORS[db]
    return {rkey[len(prefix) :]: fields for rkey, fields in store.read_prefixed(db, prefix).items()}


def read_config(store: Store) -> Config:
    """The whole CONFIG_DB as ``{(TABLE, key): fields}`` (key-less hashes are not config)."""
    config: Config = {}
    for rkey, fields in store.read_prefixed(CONFIG_DB, "").items():
        entry = split_redis_key(CONFIG_DB, rkey)
        if entry is not None:
            config[entry] = fields
    return config
