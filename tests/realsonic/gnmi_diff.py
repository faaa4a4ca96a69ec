"""One gNMI request sent to two servers, and both answers in one form that can be compared.

The two servers are SONiC's own (sonic-gnmi's ``telemetry``, ``lab/realsonic.py``) and vsonic's,
both over the same redis: vsonic's ``RedisStore`` reads and writes the real switch's
databases, so a difference in an answer is a difference between the servers, never between
their data.

The comparable form keeps what a client depends on and drops what it cannot: the status code
and message of a failed call; for each notification its paths (prefix and path joined, with
the origin), the kind of each value (``json_ietf_val``, ``string_val``, …) and the value
(JSON decoded), and its deletes; ``sync_response``; the paths a Set answers for. Timestamps
are dropped. ``differing`` says which parts of two answers differ (``Answer`` is a mapping of
part -> value), and ``report`` shows both answers side by side.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from lab.realsonic import RealSwitch
from vsonic.db import RedisStore
from vsonic.gcu import GcuBehaviour
from vsonic.gnmi_server import Clock, GnmiService, RunningServer, start_server
from vsonic.switch import Switch, Targets

ORIGIN = "sonic-db"
CONFIG = "/CONFIG_DB/localhost"
WRED: dict[str | bytes, str] = {  # a valid WRED profile, as redis-py's hset takes it
    "green_min_threshold": "1048576",
    "green_max_threshold": "2097152",
    "green_drop_probability": "5",
    "wred_green_enable": "true",
    "ecn": "ecn_all",
}
JSON = gnmi_pb2.Encoding.Value("JSON")
JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")
PROTO = gnmi_pb2.Encoding.Value("PROTO")
STREAM = gnmi_pb2.SubscriptionList.Mode.Value("STREAM")
ONCE = gnmi_pb2.SubscriptionList.Mode.Value("ONCE")
POLL = gnmi_pb2.SubscriptionList.Mode.Value("POLL")
SAMPLE = gnmi_pb2.SubscriptionMode.Value("SAMPLE")
ON_CHANGE = gnmi_pb2.SubscriptionMode.Value("ON_CHANGE")
TARGET_DEFINED = gnmi_pb2.SubscriptionMode.Value("TARGET_DEFINED")
NS_PER_S = 1_000_000_000
CALL_TIMEOUT_S = 60.0  # a real GCU Set on a loaded machine; never a pass/fail measure

Answer = dict[str, Any]
"""One answer in comparable form: part -> JSON-able value."""


def path(text: str, origin: str = ORIGIN) -> Any:
    """``/CONFIG_DB/localhost/QUEUE/Ethernet0|3`` as a gNMI Path (a key keeps its ``|``)."""
    names = [name for name in text.split("/") if name]
    return gnmi_pb2.Path(origin=origin, elem=[gnmi_pb2.PathElem(name=n) for n in names])


def ietf(value: Any) -> Any:
    """A JSON_IETF TypedValue of ``value`` (``"1500"`` is sent quoted, ``1500`` bare)."""
    return gnmi_pb2.TypedValue(json_ietf_val=json.dumps(value).encode())


# -- the comparable form -------------------------------------------------------------------------


def path_text(prefix: Any, where: Any) -> str:
    """Prefix and path joined as a client joins them: ``origin:/elem/elem[k=v]``."""
    origin = where.origin or prefix.origin
    parts = []
    for elem in [*prefix.elem, *where.elem]:
        keys = "".join(f"[{k}={v}]" for k, v in sorted(elem.key.items()))
        parts.append(elem.name + keys)
    target = f"<{prefix.target}>" if prefix.target else ""
    return f"{target}{origin}:/" + "/".join(parts)


def value_form(typed: Any) -> list[Any]:
    """``[kind, value]``: JSON kinds decoded, bytes as text, scalars as they are."""
    kind = typed.WhichOneof("value")
    if kind in ("json_val", "json_ietf_val"):
        raw = getattr(typed, kind)
        try:
            return [kind, json.loads(raw)]
        except ValueError:
            return [kind, raw.decode(errors="replace")]
    if kind in ("bytes_val", "proto_bytes"):
        return [kind, getattr(typed, kind).decode("latin-1")]
    if kind is None:
        return ["none", None]
    return [kind, getattr(typed, kind)]


def notification_form(note: Any) -> Answer:
    form: Answer = {}
    if note.update:
        form["update"] = [[path_text(note.prefix, u.path), *value_form(u.val)] for u in note.update]
    if note.delete:
        form["delete"] = [path_text(note.prefix, d) for d in note.delete]
    if note.atomic:
        form["atomic"] = True
    return form


def response_form(response: Any) -> Answer:
    """One SubscribeResponse: ``{"sync": true}`` or a notification's form."""
    kind = response.WhichOneof("response")
    if kind == "sync_response":
        return {"sync": True}
    if kind == "update":
        return notification_form(response.update)
    return {"other": kind}


def message_form(text: str | None) -> str:
    """A status message with its runs of white space made one (Go's protobuf text format
    puts one or two spaces between fields at random, to keep it from being parsed)."""
    return " ".join((text or "").split())


def error_form(error: grpc.RpcError) -> Answer:
    return {"code": error.code().name, "message": message_form(error.details())}


# -- unary calls ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    """A gNMI server on loopback, plaintext and without auth (as the real one runs here)."""

    name: str
    port: int

    @contextmanager
    def stub(self) -> Iterator[Any]:
        """A stub on a connection of its own (sonic-gnmi keys its clients by connection)."""
        options = [("grpc.use_local_subchannel_pool", 1)]
        channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options)
        try:
            yield gnmi_pb2_grpc.gNMIStub(channel)
        finally:
            channel.close()

    def capabilities(self) -> Answer:
        with self.stub() as stub:
            try:
                reply = stub.Capabilities(gnmi_pb2.CapabilityRequest(), timeout=CALL_TIMEOUT_S)
            except grpc.RpcError as error:
                return error_form(error)
        return {
            "code": "OK",
            "models": sorted([m.name, m.organization, m.version] for m in reply.supported_models),
            "encodings": sorted(gnmi_pb2.Encoding.Name(e) for e in reply.supported_encodings),
            "version": reply.gNMI_version,
        }

    def get(self, *paths: str, encoding: int = JSON_IETF, prefix: str | None = None) -> Answer:
        request = gnmi_pb2.GetRequest(path=[path(p) for p in paths], encoding=encoding)
        if prefix is not None:
            request.prefix.CopyFrom(path(prefix))
        with self.stub() as stub:
            try:
                reply = stub.Get(request, timeout=CALL_TIMEOUT_S)
            except grpc.RpcError as error:
                return error_form(error)
        return {"code": "OK", "notifications": [notification_form(n) for n in reply.notification]}

    def set(
        self,
        *,
        delete: Sequence[str] = (),
        replace: Sequence[tuple[str, Any]] = (),
        update: Sequence[tuple[str, Any]] = (),
    ) -> Answer:
        """A SetRequest; values are TypedValues (``ietf(...)`` for JSON_IETF)."""
        request = gnmi_pb2.SetRequest(
            delete=[path(p) for p in delete],
            replace=[gnmi_pb2.Update(path=path(p), val=v) for p, v in replace],
            update=[gnmi_pb2.Update(path=path(p), val=v) for p, v in update],
        )
        with self.stub() as stub:
            try:
                reply = stub.Set(request, timeout=CALL_TIMEOUT_S)
            except grpc.RpcError as error:
                return error_form(error)
        ops = gnmi_pb2.UpdateResult.Operation
        return {
            "code": "OK",
            "response": [[path_text(reply.prefix, r.path), ops.Name(r.op)] for r in reply.response],
        }


# -- Subscribe -----------------------------------------------------------------------------------

_END = object()


def subscription(
    text: str, mode: int = ON_CHANGE, sample_s: float = 0.0, suppress: bool = False
) -> Any:
    return gnmi_pb2.Subscription(
        path=path(text),
        mode=mode,
        sample_interval=int(sample_s * NS_PER_S),
        suppress_redundant=suppress,
    )


def subscribe_request(
    subs: Sequence[Any], mode: int = STREAM, updates_only: bool = False, encoding: int = JSON_IETF
) -> Any:
    return gnmi_pb2.SubscribeRequest(
        subscribe=gnmi_pb2.SubscriptionList(
            subscription=list(subs), mode=mode, updates_only=updates_only, encoding=encoding
        )
    )


@dataclass
class Stream:
    """One Subscribe RPC whose request side stays open until ``half_close`` or ``cancel``;
    its responses (comparable form) and its end (status) are read by a thread of its own."""

    server: Server
    request: Any
    channel: grpc.Channel | None = None
    responses: queue.Queue[Any] = field(default_factory=queue.Queue)
    _requests: queue.Queue[Any] = field(default_factory=queue.Queue)
    _call: Any = None
    _own_channel: bool = False
    ended: Answer | None = None

    def open(self, half_closed: bool = False) -> Stream:
        """Start the RPC; ``half_closed`` ends the request side right after the request (a
        ``request`` of None: before any)."""
        if self.channel is None:
            # A connection of its own: gRPC otherwise shares one per target process-wide.
            options = [("grpc.use_local_subchannel_pool", 1)]
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.port}", options)
            self._own_channel = True
        if self.request is not None:
            self._requests.put(self.request)
        if half_closed:
            self._requests.put(_END)
        self._call = gnmi_pb2_grpc.gNMIStub(self.channel).Subscribe(self._request_iter())
        threading.Thread(target=self._read, daemon=True, name="diff-stream").start()
        return self

    def _request_iter(self) -> Iterator[Any]:
        while True:
            item = self._requests.get()
            if item is _END:
                return
            yield item

    def _read(self) -> None:
        try:
            for response in self._call:
                self.responses.put(response_form(response))
            self.responses.put({"end": "OK"})
        except grpc.RpcError as error:
            self.responses.put({"end": error.code().name, "message": message_form(error.details())})

    def poll(self) -> None:
        self._requests.put(gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll()))

    def half_close(self) -> None:
        self._requests.put(_END)

    def next(self, timeout_s: float) -> Answer | None:
        try:
            item: Answer = self.responses.get(timeout=timeout_s)
        except queue.Empty:
            return None
        return item

    def drain(self) -> list[Answer]:
        """Everything received so far and not yet read (streams are read by their own
        threads, so two streams can share one wait)."""
        seen = []
        while True:
            try:
                seen.append(self.responses.get_nowait())
            except queue.Empty:
                return seen

    def until_sync(self, timeout_s: float = 30.0) -> list[Answer]:
        """Everything up to and including the sync (or the end)."""
        return self.collect_until(lambda seen: bool(seen and seen[-1].get("sync")), timeout_s)

    def collect(self, seconds: float) -> list[Answer]:
        """What arrives within ``seconds`` (fewer if the stream ends)."""
        return self.collect_until(lambda seen: False, seconds)

    def collect_until(
        self, done: Callable[[list[Answer]], bool], timeout_s: float = 15.0
    ) -> list[Answer]:
        """What arrives until ``done(seen)`` holds, the stream ends, or ``timeout_s``."""
        seen: list[Answer] = []
        deadline = time.monotonic() + timeout_s
        while not done(seen) and (left := deadline - time.monotonic()) > 0:
            item = self.next(left)
            if item is None:
                break
            seen.append(item)
            if "end" in item:
                break
        return seen

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
        self._requests.put(_END)
        if self._own_channel and self.channel is not None:
            self.channel.close()


@contextmanager
def streams(servers: Sequence[Server], request: Any) -> Iterator[list[Stream]]:
    """The same Subscribe opened on each server, cancelled at the end."""
    opened = [Stream(s, request).open() for s in servers]
    try:
        yield opened
    finally:
        for stream in opened:
            stream.cancel()


# -- comparing -----------------------------------------------------------------------------------


def differing(sonic: Mapping[str, Any], vsonic: Mapping[str, Any]) -> set[str]:
    """The parts in which two answers differ (a part one answer lacks differs)."""
    return {part for part in sonic.keys() | vsonic.keys() if sonic.get(part) != vsonic.get(part)}


def report(probe: str, sonic: Mapping[str, Any], vsonic: Mapping[str, Any]) -> str:
    """Both answers part by part, the differing parts first."""
    lines = [f"probe {probe}:"]
    differ = differing(sonic, vsonic)
    for part in sorted(sonic.keys() | vsonic.keys(), key=lambda p: (p not in differ, p)):
        if part in differ:
            lines.append(f"  {part} differs")
            lines.append(f"    SONiC's server: {_shown(sonic.get(part, '<absent>'))}")
            lines.append(f"    vsonic:         {_shown(vsonic.get(part, '<absent>'))}")
        else:
            lines.append(f"  {part} equal: {_shown(sonic[part])[:300]}")
    return "\n".join(lines)


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# -- the two servers over one redis ---------------------------------------------------------------

RedisValue = Any


def snapshot(db: redis.Redis[str]) -> dict[str, RedisValue]:
    """Every key of one database with its value, whatever its type (hash, set, string)."""
    found: dict[str, RedisValue] = {}
    for key in db.scan_iter(count=1000):
        kind = db.type(key)  # type: ignore[no-untyped-call]
        if kind == "hash":
            found[key] = db.hgetall(key)
        elif kind == "set":
            found[key] = sorted(db.smembers(key))
        elif kind == "string":
            found[key] = db.get(key)
        elif kind == "list":
            found[key] = db.lrange(key, 0, -1)
    return found


def written(before: Mapping[str, RedisValue], after: Mapping[str, RedisValue]) -> Answer:
    """What a Set left in one database: each changed key's new value, None for a deleted one."""
    changed: Answer = {k: v for k, v in after.items() if before.get(k) != v}
    changed.update(dict.fromkeys(sorted(before.keys() - after.keys())))
    return dict(sorted(changed.items()))


def restore(db: redis.Redis[str], before: Mapping[str, RedisValue]) -> None:
    """The database back as ``snapshot`` saw it."""
    now = snapshot(db)
    with db.pipeline(transaction=True) as pipe:
        for key in now.keys() - before.keys():
            pipe.delete(key)
        for key, value in before.items():
            if now.get(key) == value:
                continue
            pipe.delete(key)
            if isinstance(value, dict):
                pipe.hset(key, mapping=dict(value))
            elif isinstance(value, list):
                pipe.sadd(key, *value)
            else:
                pipe.set(key, value)
        pipe.execute()


@dataclass
class Pair:
    """SONiC's server and vsonic's, over the real switch's redis."""

    switch: RealSwitch
    sonic: Server
    vsonic: Server
    vswitch: Switch
    running: RunningServer

    def db(self, name: str) -> redis.Redis[str]:
        return self.switch.db(name)

    def servers(self) -> tuple[Server, Server]:
        return self.sonic, self.vsonic

    def get(self, *paths: str, **kwargs: Any) -> tuple[Answer, Answer]:
        return self.sonic.get(*paths, **kwargs), self.vsonic.get(*paths, **kwargs)

    def set(self, dbs: Sequence[str] = ("CONFIG_DB",), **ops: Any) -> tuple[Answer, Answer]:
        """The same Set on each server in turn, each from the same databases: the answer
        and, as ``written``, what it left in ``dbs``; the databases are restored after each."""
        answers = []
        for server in self.servers():
            before = {name: snapshot(self.db(name)) for name in dbs}
            answer = server.set(**ops)
            answer["written"] = {
                name: written(before[name], snapshot(self.db(name))) for name in dbs
            }
            for name in dbs:
                restore(self.db(name), before[name])
            answers.append(answer)
        return answers[0], answers[1]

    def stop(self) -> None:
        self.running.stop(grace_s=0.2)


def vsonic_over(switch: RealSwitch, gcu: GcuBehaviour) -> Pair:
    """vsonic's gNMI server (plaintext, no auth, as the real one runs here) over the real
    switch's redis."""
    store = RedisStore.connect("127.0.0.1", switch.redis_port)
    vswitch = Switch("sonic", store, gcu=gcu)
    service = GnmiService(Targets([vswitch], fleet=False), Clock(), None)
    running = start_server("127.0.0.1:0", service)
    return Pair(
        switch, Server("sonic", switch.gnmi_port), Server("vsonic", running.port), vswitch, running
    )
