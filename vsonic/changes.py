"""Change feeds: tell a Subscribe stream which keys changed, so ON_CHANGE follows writes
instead of re-reading (sonic-gnmi does the same with Redis keyspace notifications for table
and key paths, reference: sonic-gnmi sonic_data_client/db_client.go).

- ``RedisFeed``: keyspace notifications of the switch's own redis-server, which vsonic starts
  with ``notify-keyspace-events Kgh`` (``vsonic.redis_process``). One listener thread per
  switch; after a lost connection it reconnects and reports a resync (``None``): what
  happened while it was away is unknown, so every ON_CHANGE path is read again.
- ``MemoryFeed``: the in-process change log of a ``MemoryStore`` (fleet mode).

A callback gets ``(db, redis key, event)``, the event being the keyspace event's name
(``hset``, ``hdel``, ``del``, ``hincrby``, …), or ``(db, None, RESYNC)`` for "anything may have
changed"; it is called on the feed's thread and must only hand the key over
(``call_soon_threadsafe``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

import redis

from vsonic.db import CONFIG_DB, SEPARATORS, MemoryStore, RedisStore, Store

Callback = Callable[[int, str | None, str], None]
RESYNC = "resync"
Unwatch = Callable[[], None]
# K: keyspace channel; g: DEL and friends; h: hash commands (HSET, HDEL).
KEYSPACE_EVENTS = "Kgh"


class ChangeFeed(Protocol):
    def watch(self, callback: Callback) -> Unwatch: ...


class _Listeners:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callback] = {}
        self._next = 0

    def add(self, callback: Callback) -> Unwatch:
        with self._lock:
            token = self._next
            self._next += 1
            self._callbacks[token] = callback

        def remove() -> None:
            with self._lock:
                self._callbacks.pop(token, None)

        return remove

    def emit(self, db: int, rkey: str | None, event: str) -> None:
        with self._lock:
            callbacks = list(self._callbacks.values())
        for callback in callbacks:
            callback(db, rkey, event)

    def __len__(self) -> int:
        return len(self._callbacks)


class MemoryFeed:
    def __init__(self, store: MemoryStore) -> None:
        self._listeners = _Listeners()
        store.on_change(self._listeners.emit)

    def watch(self, callback: Callback) -> Unwatch:
        return self._listeners.add(callback)


def keyspace_enabled(client: redis.Redis[str]) -> bool:
    """True when the server publishes keyspace events for hash writes and deletes."""
    try:
        reply = client.config_get("notify-keyspace-events")
    except redis.ResponseError:  # CONFIG renamed or refused: treat as off, re-read instead
        return False
    flags = str(reply.get("notify-keyspace-events", ""))
    has_class = "K" in flags
    return has_class and ("A" in flags or ("g" in flags and "h" in flags))


class RedisFeed:
    """Keyspace notifications of one switch's Redis, fanned out to the watchers."""

    def __init__(self, host: str, port: int, reconnect_s: float = 0.2) -> None:
        self._host, self._port = host, port
        self._reconnect_s = reconnect_s
        self._listeners = _Listeners()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._subscribed = threading.Event()

    def watch(self, callback: Callback, wait_s: float = 10.0) -> Unwatch:
        """Register ``callback``; the first watch waits until the listener is subscribed, so
        no write after it returns is missed."""
        unwatch = self._listeners.add(callback)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, daemon=True, name="keyspace")
                self._thread.start()
        self._subscribed.wait(wait_s)
        return unwatch

    def close(self) -> None:
        self._closed.set()

    def _listen(self) -> None:
        patterns = [f"__keyspace@{db}__:*" for db in SEPARATORS]
        first = True
        while not self._closed.is_set():
            client = redis.Redis(host=self._host, port=self._port, decode_responses=True)
            try:
                pubsub = client.pubsub()
                pubsub.psubscribe(*patterns)
                confirmed = 0
                while confirmed < len(patterns):  # the server ran every PSUBSCRIBE
                    reply = pubsub.get_message(timeout=5.0)
                    if reply is None:
                        raise redis.TimeoutError("no psubscribe confirmation")
                    confirmed += reply["type"] == "psubscribe"
                self._subscribed.set()
                if not first:
                    for db in SEPARATORS:
                        self._listeners.emit(db, None, RESYNC)  # missed events while away
                first = False
                while not self._closed.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is not None and message["type"] == "pmessage":
                        self._dispatch(str(message["channel"]), str(message["data"]))
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                time.sleep(self._reconnect_s)
            finally:
                client.close()

    def _dispatch(self, channel: str, event: str) -> None:
        head, _, rkey = channel.partition("__:")
        db_text = head.rpartition("@")[2]
        if db_text.isdigit():
            self._listeners.emit(int(db_text), rkey, event)


def redis_feed(store: RedisStore) -> RedisFeed | None:
    """A keyspace-notification feed of the store's server, or None when it publishes none."""
    client = store.client(CONFIG_DB)
    if not keyspace_enabled(client):
        return None
    kwargs = client.connection_pool.connection_kwargs
    return RedisFeed(str(kwargs.get("host", "127.0.0.1")), int(kwargs["port"]))


def feed_for(store: Store) -> ChangeFeed | None:
    """The store's change feed (one per store, kept by it), or None when changes can only be
    found by reading again (a Redis whose keyspace notifications are off: vsonic does not
    change another server's settings)."""
    if isinstance(store, MemoryStore):
        return store.feed(MemoryFeed)
    if isinstance(store, RedisStore):
        return store.feed(redis_feed)
    return None
