"""The one gNMI adapter: sessions to SONiC switches over origin ``sonic-db``.

Why the generated stub (``pygnmi.spec.v080.gnmi_pb2_grpc.gNMIStub``) and not pygnmi's client:
pygnmi's ``get``/``set`` carry no gRPC deadline, its ``connect`` always spends a Capabilities
round trip, it picks JSON over JSON_IETF unless told, and one client is not safe for
concurrent calls (akarneliuk/pygnmi pygnmi/client.py). The stub gives every
RPC a deadline, lets sessions for many fleet targets share one HTTP/2 channel, and still uses
pygnmi's protobufs, so the wire format is the one pygnmi speaks.

Every call: username and password as metadata (what SONiC's password auth reads, sonic-gnmi
gnmi_server/basicAuth.go), a deadline, and a slot in a fleet-wide in-flight limit. Reads are
retried with backoff and jitter on UNAVAILABLE and DEADLINE_EXCEEDED.
A Set is never retried here: on a SONiC switch
every CONFIG_DB Set is a GCU run (checkpoint, YANG-validated JSON Patch, config save, over
D-Bus to the host service; sonic-net/sonic-gnmi:sonic_data_client/mixed_db_client.go
``SetIncrementalConfig``) that takes seconds to minutes and goes on after the client gave
up, so a Set gets its own, longer deadline (``set_deadline_s``, per switch from the intent),
logs progress while it runs, and an unanswered Set comes out as ``SouthboundSetUnconfirmed``
for the caller to read back, never to resend while it may still be applying
(``controller/reconcile/apply.py``). A caller may give one Set a longer deadline than the
switch's (a Set GCU sorts into many changes, ``controller/sonic/gcu.py``). Failures come out
typed: ``SouthboundUnreachable``, ``SouthboundRejected`` (the switch's message, which names
the field), or ``SouthboundProtocolError``.

Reads: a multi-path Get fails whole with NOT_FOUND when one named table is absent (sonic-gnmi
``getDbtablePath``: "Failed to find CONFIG_DB ..."), so a session reads named tables only
when it knows they all exist, and otherwise reads the CONFIG_DB root once and keeps the
tables asked for: one round trip on a fresh switch whatever tables it holds.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc  # type: ignore[import-untyped]
from pydantic import SecretStr
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # type: ignore[import-untyped]

from controller.errors import (
    NotFound,
    SouthboundProtocolError,
    SouthboundRejected,
    SouthboundSetUnconfirmed,
    SouthboundUnreachable,
)
from controller.intent.models import Dialect, GnmiEndpoint, Switch
from controller.openconfig import entries as openconfig
from controller.openconfig.entries import KeyedElems, OpenConfigPathError
from controller.sonic.discovery import CONFIG_TABLES, LLDP_TABLE, STATE_PORT_TABLE, SwitchRead
from controller.sonic.gcu import GcuPace
from controller.sonic.model import Op, SwitchConfig
from controller.southbound.credentials import SecretResolver
from controller.southbound.faults import Fault, Reason, classify, redact
from controller.southbound.paths import (
    ORIGIN,
    Elems,
    PathError,
    config_from_database,
    config_from_value,
    database_elems,
    decode_json,
    entries_from_table,
    parse_elems,
    set_parts,
    table_elems,
    text,
)
from controller.southbound.retry import RetryPolicy, run_with_retry

OC_QOS = "openconfig-qos"
"""The OpenConfig QoS module a switch that speaks the ``openconfig`` dialect lists."""

log = logging.getLogger(__name__)

# Every SONiC switch holds this table (its hostname and platform), so a CONFIG_DB without it
# is a request that reached no switch, not a switch with none of sluice's tables.
PRESENCE_TABLE = "DEVICE_METADATA"

T = TypeVar("T")

JSON_IETF = gnmi_pb2.Encoding.Value("JSON_IETF")
RETRYABLE = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
DEFAULT_USERNAME = "admin"  # SONiC's default account
# Refusals whose message is the named cause ("credentials refused (…)", TLS), not the
# server's bare words ("Unauthenticated").
NAMED_REFUSALS = frozenset(
    {Reason.AUTH_REFUSED, Reason.NOT_AUTHORISED, Reason.TLS_CERTIFICATE, Reason.TLS_HANDSHAKE}
)


@dataclass(frozen=True)
class TlsOptions:
    """TLS to the switch. ``root_cert``: the CA bundle that signed the switch certificate;
    ``client_cert``/``client_key`` for mutual TLS; ``server_name`` when the certificate's
    name is not the address dialled."""

    root_cert: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    server_name: str | None = None


def session_tls(
    *,
    insecure: bool,
    ca: Path | None = None,
    cert: Path | None = None,
    key: Path | None = None,
    server_name: str | None = None,
) -> TlsOptions | None:
    """The TLS every switch session uses (from the settings). None (plaintext) only when
    ``insecure`` says so explicitly, and then no certificate may be given. With no ``ca``
    the system's trusted roots verify the switch; ``cert`` and ``key`` (both or neither)
    turn on mutual TLS."""
    if insecure:
        if any(v is not None for v in (ca, cert, key, server_name)):
            raise ValueError("gNMI is set insecure (plaintext) and also given TLS settings")
        return None
    if (cert is None) != (key is None):
        raise ValueError("mutual TLS needs both a client certificate and its key")
    return TlsOptions(root_cert=ca, client_cert=cert, client_key=key, server_name=server_name)


@dataclass(frozen=True)
class GnmiTarget:
    """One switch as the southbound reaches it. ``prefix_target``: the gNMI prefix target
    that selects this switch on a fleet server; None for a switch with its own server.
    ``tls`` None means plaintext (a lab on loopback; SONiC's no-cert fallback, sonic-buildimage
    dockers/docker-sonic-gnmi/gnmi-native.sh): only when the settings say so explicitly.
    ``set_deadline_s``: how long one Set may take on this switch (its platform's GCU time, from
    the intent); None takes the policy's. ``dialect``: the path scheme the switch speaks
    (CONFIG_DB at origin ``sonic-db``, or ``openconfig-qos`` at origin ``openconfig``)."""

    name: str
    address: str
    port: int
    username: str
    password: SecretStr = field(repr=False)
    tls: TlsOptions | None = None
    prefix_target: str | None = None
    set_deadline_s: float | None = None
    dialect: Dialect = Dialect.SONIC

    @property
    def endpoint(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port}"


def target_for_switch(
    switch: Switch,
    resolve: SecretResolver,
    *,
    username: str = DEFAULT_USERNAME,
    tls: TlsOptions | None = None,
    prefix_target: str | None = None,
) -> GnmiTarget:
    """The target of an intent switch, logged in as its login says (its own user name and
    secret, or its group's; ``username`` when it names none), the password resolved from
    the login's reference (``NotFound`` when it cannot be). The prefix target is
    ``prefix_target`` if given, else the one the intent declares (``gnmi.target``, for a
    server that fronts several switches), else none."""
    try:
        login = switch.login(username)
    except LookupError as error:
        raise NotFound(f"switch {switch.name}: {error}") from None
    return target_for_endpoint(
        switch.name,
        switch.gnmi,
        login.secret_ref,
        resolve,
        username=login.username,
        tls=tls,
        prefix_target=prefix_target,
        dialect=switch.dialect,
    )


def target_for_endpoint(
    name: str,
    gnmi: GnmiEndpoint,
    credential_ref: str,
    resolve: SecretResolver,
    *,
    username: str = DEFAULT_USERNAME,
    tls: TlsOptions | None = None,
    prefix_target: str | None = None,
    dialect: Dialect = Dialect.SONIC,
) -> GnmiTarget:
    """``target_for_switch`` for a switch known by its endpoint only (one being discovered
    before the intent has it)."""
    return GnmiTarget(
        name=name,
        address=gnmi.address,
        port=gnmi.port,
        username=username,
        password=resolve(credential_ref),
        tls=tls,
        prefix_target=prefix_target if prefix_target is not None else gnmi.target,
        set_deadline_s=gnmi.set_deadline_s,
        dialect=dialect,
    )


def targets_for(
    switches: Iterable[Switch],
    resolve: SecretResolver,
    *,
    username: str = DEFAULT_USERNAME,
    tls: TlsOptions | None = None,
) -> dict[str, GnmiTarget]:
    """The targets of ``switches`` by name; a switch whose credential does not resolve is left
    out and logged (the error names the reference, never the secret): it is that switch's
    problem only."""
    out: dict[str, GnmiTarget] = {}
    for switch in switches:
        try:
            out[switch.name] = target_for_switch(switch, resolve, username=username, tls=tls)
        except NotFound as error:
            log.warning("%s left out: %s", switch.name, error)
    return out


# Operators report 19.5 s on average for a 10-entry patch (sonic-net/sonic-gnmi#784) and about
# 10 minutes for 150 ACL rules (sonic-net/sonic-buildimage#22370): a QoS Set of a hundred
# entries needs tens of seconds, not the 10 s a read gets. Measured with the real GCU, a Set
# takes about 2.5 s plus 1.25 s per change it is sorted into (``controller/sonic/gcu.py``):
# apply sizes each Set to finish within this deadline on a loaded switch.
DEFAULT_SET_DEADLINE_S = 60.0
# GCU took more than three times a Set's deadline when the switch was loaded: read back for
# four deadlines more before calling the outcome unknown.
DEFAULT_OUTCOME_WAIT_FACTOR = 4.0


@dataclass(frozen=True)
class CallPolicy:
    """``deadline_s`` bounds each read attempt; ``retry`` says how often and how long to wait
    between reads. ``set_deadline_s`` bounds a Set (one attempt, never retried here) unless
    the target names its own or the caller gives one Set a longer one; ``progress_every_s``:
    how often a running Set is logged. ``outcome_wait_factor``: after a Set got no answer,
    how many of its deadlines more the caller keeps reading back for its outcome; the Set is
    never sent again, and a switch that still does not show it is in an unknown state (GCU
    runs vary: a loaded switch took more than three times the deadline the client gave it).
    ``pace``: how long GCU takes per Set and per sorted change, which sizes the Sets."""

    deadline_s: float = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    set_deadline_s: float = DEFAULT_SET_DEADLINE_S
    progress_every_s: float = 10.0
    outcome_wait_factor: float = DEFAULT_OUTCOME_WAIT_FACTOR
    pace: GcuPace = field(default_factory=GcuPace)


class InFlightLimit:
    """At most ``max_in_flight`` RPCs at once across every session that shares it, so a
    fleet-wide apply cannot open more concurrent calls than the controller can serve."""

    def __init__(self, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self._slots = threading.BoundedSemaphore(max_in_flight)

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            yield


@dataclass(frozen=True)
class Capabilities:
    encodings: tuple[str, ...]
    models: tuple[str, ...]
    gnmi_version: str

    @property
    def supports_json_ietf(self) -> bool:
        return "JSON_IETF" in self.encodings

    @property
    def dialect(self) -> Dialect | None:
        """What the switch speaks, by the models it lists: SONiC's gNMI server lists its
        ``sonic-db`` origin (beside its translib's OpenConfig models: sonic-gnmi
        gnmi_server/server.go ``Capabilities``), so ``sonic-db`` means SONiC whatever else is
        listed; an ``openconfig-qos`` model without it, a switch that speaks OpenConfig;
        neither, None (sluice has nothing to write there)."""
        if ORIGIN in self.models:
            return Dialect.SONIC
        if any(m == OC_QOS or m.startswith(f"{OC_QOS}-") for m in self.models):
            return Dialect.OPENCONFIG
        return None


def _code_name(error: grpc.RpcError) -> str:
    code = error.code() if hasattr(error, "code") else None
    return code.name if code is not None else "UNKNOWN"


def _details(error: grpc.RpcError) -> str:
    details = error.details() if hasattr(error, "details") else None
    return str(details) if details else "no message"


def _is_retryable(error: BaseException) -> bool:
    return isinstance(error, grpc.RpcError) and _code_name(error) in RETRYABLE


def _path(elems: Elems) -> Any:
    return gnmi_pb2.Path(origin=ORIGIN, elem=[gnmi_pb2.PathElem(name=e) for e in elems])


def _keyed_path(elems: KeyedElems) -> Any:
    """An ``openconfig`` origin path: element names with their list keys."""
    return gnmi_pb2.Path(
        origin=openconfig.ORIGIN,
        elem=[gnmi_pb2.PathElem(name=name, key=dict(keys)) for name, keys in elems],
    )


class SwitchSession:
    """Calls to one switch over a channel it may share with other sessions (fleet mode).

    Not for concurrent use by several threads: one apply per switch at a time. Different
    sessions may run in parallel; the shared ``InFlightLimit`` bounds them.
    """

    def __init__(
        self,
        target: GnmiTarget,
        channel: Any,
        *,
        policy: CallPolicy,
        sleep: Callable[[float], None],
        rand: Callable[[], float],
        limit: InFlightLimit | None = None,
    ) -> None:
        self.target = target
        self._stub = gnmi_pb2_grpc.gNMIStub(channel)
        self._policy = policy
        self._sleep = sleep
        self._rand = rand
        self._limit = limit
        self._rpc_counts: Counter[str] = Counter()
        # The CONFIG_DB tables this switch holds, as last seen; None until the first read.
        self._present: frozenset[str] | None = None

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def rpc_counts(self) -> dict[str, int]:
        """RPC attempts sent so far, by method (retries count)."""
        return dict(self._rpc_counts)

    def __repr__(self) -> str:
        return f"SwitchSession({self.target.name!r}, {self.target.endpoint})"

    def _metadata(self) -> list[tuple[str, str]]:
        return [
            ("username", self.target.username),
            ("password", self.target.password.get_secret_value()),
        ]

    def _prefix(self) -> Any:
        if self.target.prefix_target is None:
            return None
        return gnmi_pb2.Path(target=self.target.prefix_target)

    def _call(self, method: str, request: Any) -> Any:
        """One RPC with deadline, retries and an in-flight slot; errors come out typed."""
        rpc = getattr(self._stub, method)

        def attempt() -> Any:
            self._rpc_counts[method] += 1
            if self._limit is None:
                return rpc(request, timeout=self._policy.deadline_s, metadata=self._metadata())
            with self._limit.slot():
                return rpc(request, timeout=self._policy.deadline_s, metadata=self._metadata())

        try:
            return run_with_retry(
                attempt,
                policy=self._policy.retry,
                is_retryable=_is_retryable,
                sleep=self._sleep,
                rand=self._rand,
            )
        except grpc.RpcError as error:
            raise self._typed(method, error) from None

    @contextmanager
    def _slot(self) -> Iterator[None]:
        if self._limit is None:
            yield
        else:
            with self._limit.slot():
                yield

    def _typed(self, method: str, error: grpc.RpcError) -> Exception:
        """The typed error, its cause named (``controller.southbound.faults``): a TLS
        failure is UNAVAILABLE to gRPC, like a closed port, and only the details tell them
        apart; a refused password is UNAUTHENTICATED. The password never reaches the text."""
        code = _code_name(error)
        if code in RETRYABLE:
            tries = self._policy.retry.attempts
            cause = self._fault(error).cause
            where = f"{method} to {self.target.endpoint}"
            return SouthboundUnreachable(self.name, f"{where}: {code} after {tries} tries: {cause}")
        return self._rejected(error)

    def _fault(self, error: grpc.RpcError) -> Fault:
        details = redact(_details(error), self.target.password.get_secret_value())
        return classify(_code_name(error), details)

    def _rejected(self, error: grpc.RpcError) -> SouthboundRejected:
        """The switch's refusal: its own words, or the named cause of a refused credential
        or TLS ("credentials refused (Unauthenticated)")."""
        fault = self._fault(error)
        if fault.reason in NAMED_REFUSALS:
            return SouthboundRejected(self.name, fault.code, fault.cause)
        return SouthboundRejected(self.name, fault.code, _details(error))

    def capabilities(self) -> Capabilities:
        reply = self._call("Capabilities", gnmi_pb2.CapabilityRequest())
        encodings = tuple(
            gnmi_pb2.Encoding.Name(e) if e in gnmi_pb2.Encoding.values() else str(e)
            for e in reply.supported_encodings
        )
        models = tuple(m.name for m in reply.supported_models)
        return Capabilities(encodings, models, str(reply.gNMI_version))

    def dialect(self) -> Dialect:
        """What the switch speaks, from its Capabilities (``Capabilities.dialect``); a
        switch that lists neither ``sonic-db`` nor an ``openconfig-qos`` model is a
        ``SouthboundProtocolError`` naming what it listed."""
        capabilities = self.capabilities()
        if capabilities.dialect is None:
            listed = ", ".join(capabilities.models[:10]) or "no model"
            raise SouthboundProtocolError(
                self.name, f"its Capabilities list neither {ORIGIN} nor {OC_QOS}: {listed}"
            )
        return capabilities.dialect

    def get_tables(self, tables: Iterable[str]) -> SwitchConfig:
        """Every entry of ``tables`` (a missing table reads as empty), in one Get: the named
        tables when all of them are known to exist, else the CONFIG_DB root."""
        return self.get_table_answers(tables).config()

    def get_table_answers(self, tables: Iterable[str]) -> TableAnswers:
        """``get_tables``' Get, each named table's JSON kept undecoded (``TableAnswers``):
        a reconcile pass compares most tables by a hash of that text and never decodes them."""
        names = sorted(set(tables))
        if not names:
            return TableAnswers(self.name, {}, {})
        if self.target.dialect is Dialect.OPENCONFIG:
            return TableAnswers(self.name, {}, self._get_openconfig())
        if self._present is not None and set(names) <= self._present:
            try:
                return self._get_answers([table_elems(t) for t in names])
            except SouthboundRejected as error:
                if error.code != "NOT_FOUND":
                    raise
                # A table emptied since the last read: the root read below says which.
        return TableAnswers(self.name, {}, self._get_from_root(frozenset(names)))

    def read_for_discovery(self) -> SwitchRead:
        """What discovery reads (``controller/sonic/discovery.py``), one Get per database:
        the CONFIG_DB root (every table it holds, whatever the port count), STATE_DB
        ``PORT_TABLE`` and APPL_DB ``LLDP_ENTRY_TABLE``. sonic-gnmi refuses a GetRequest whose
        paths name two databases ("Target conflict in path", sonic_data_client ParseTarget),
        so three Gets is the least; a table the switch does not hold (no LLDP neighbour yet)
        answers NOT_FOUND and reads as empty."""
        before = self._rpc_counts["Get"]
        config = self._get_from_root(frozenset(CONFIG_TABLES))
        state = self._read_other_table("STATE_DB", STATE_PORT_TABLE)
        lldp = self._read_other_table("APPL_DB", LLDP_TABLE)
        return SwitchRead(config, state, lldp, self._rpc_counts["Get"] - before)

    def _get_found(self, path: Any) -> Any:
        """The answer to a Get of ``path``; None when the switch has nothing there
        (NOT_FOUND)."""
        request = gnmi_pb2.GetRequest(prefix=self._prefix(), path=[path], encoding=JSON_IETF)
        try:
            return self._call("Get", request)
        except SouthboundRejected as error:
            if error.code == "NOT_FOUND":
                return None
            raise

    def _read_other_table(self, database: str, table: str) -> dict[str, dict[str, str]]:
        elems = table_elems(table, database)
        reply = self._get_found(_path(elems))
        if reply is None:
            return {}
        entries: dict[str, dict[str, str]] = {}
        try:
            for note in reply.notification:
                for update in note.update:
                    entries.update(entries_from_table(elems, _json_of(update, elems)))
        except PathError as error:
            raise SouthboundProtocolError(self.name, f"Get answer: {error}") from None
        return entries

    def _get_openconfig(self) -> SwitchConfig:
        """Sluice's entries on an OpenConfig switch: one Get of ``/qos``, whatever tables were
        asked for (every table of the dialect lives under it; ``entries_from_tree`` keeps
        sluice's). A switch holding no QoS configuration answers NOT_FOUND: nothing."""
        elems = openconfig.qos_elems()
        reply = self._get_found(_keyed_path(elems))
        if reply is None:
            return {}
        config: SwitchConfig = {}
        try:
            for note in reply.notification:
                for update in note.update:
                    kind = update.val.WhichOneof("value")
                    if kind not in ("json_ietf_val", "json_val"):
                        raise OpenConfigPathError(f"value is {kind or 'empty'}, not JSON")
                    value = decode_json(getattr(update.val, kind), ("qos",))
                    config.update(openconfig.entries_from_tree(value))
        except (OpenConfigPathError, PathError) as error:
            where = openconfig.text(elems)
            raise SouthboundProtocolError(self.name, f"Get answer of {where}: {error}") from None
        return config

    def _get_from_root(self, names: frozenset[str]) -> SwitchConfig:
        """Read the whole CONFIG_DB (sonic-gnmi answers a database path whatever tables it
        holds) and keep ``names``; remember which tables exist for the next read."""
        request = gnmi_pb2.GetRequest(
            prefix=self._prefix(), path=[_path(database_elems())], encoding=JSON_IETF
        )
        reply = self._call("Get", request)
        try:
            tables, config = _database_from_reply(reply, names)
        except PathError as error:
            raise SouthboundProtocolError(self.name, f"Get answer: {error}") from None
        if PRESENCE_TABLE not in tables:
            raise SouthboundRejected(
                self.name,
                "NOT_FOUND",
                f"CONFIG_DB holds not even {PRESENCE_TABLE}: the request reached no switch "
                "(check gnmi.target)",
            )
        self._present = tables
        return config

    def _get_answers(self, paths: Sequence[Elems]) -> TableAnswers:
        request = gnmi_pb2.GetRequest(
            prefix=self._prefix(), path=[_path(p) for p in paths], encoding=JSON_IETF
        )
        reply = self._call("Get", request)
        try:
            return _answers_from_reply(self.name, reply)
        except PathError as error:
            raise SouthboundProtocolError(self.name, f"Get answer: {error}") from None

    @property
    def set_deadline_s(self) -> float:
        """How long one Set may run on this switch (its platform's GCU time)."""
        own = self.target.set_deadline_s
        return own if own is not None else self._policy.set_deadline_s

    def set(self, ops: Sequence[Op], deadline_s: float | None = None) -> None:
        """Write ``ops`` in one SetRequest; the switch applies all of it or none of it.

        Sent once, never retried: a Set the client stopped waiting for may still be running
        on the switch (GCU goes on), and a second one would queue behind it and apply the
        same patch again. No answer within ``deadline_s`` (default ``set_deadline_s``) or a
        lost connection raises ``SouthboundSetUnconfirmed``; the caller reads back and never
        sends it again while it may still be applying."""
        built = self._set_request(ops)
        if built is None:
            return
        request, expected = built
        deadline = self.set_deadline_s if deadline_s is None else deadline_s
        self._rpc_counts["Set"] += 1
        try:
            with self._slot():
                reply = self._await_set(request, deadline, len(ops))
        except grpc.RpcError as error:
            code = _code_name(error)
            if code in RETRYABLE:
                raise SouthboundSetUnconfirmed(
                    self.name,
                    f"Set of {len(ops)} op(s) to {self.target.endpoint}: {code} "
                    f"(deadline {deadline:g} s); the switch may still be applying it",
                    outcome_wait_s=deadline * self._policy.outcome_wait_factor,
                ) from None
            raise self._rejected(error) from None
        if self.target.dialect is Dialect.SONIC:
            dropped = {op.table for op in ops if op.kind == "delete" and op.whole_table}
            self._present = ((self._present or frozenset()) | {op.table for op in ops}) - dropped
        if reply.response and len(reply.response) != expected:
            raise SouthboundProtocolError(
                self.name, f"Set answer has {len(reply.response)} results for {expected} paths"
            )

    def _await_set(self, request: Any, deadline: float, op_count: int) -> Any:
        """The Set's answer, logging every ``progress_every_s`` while the switch works."""
        pending = self._stub.Set.future(request, timeout=deadline, metadata=self._metadata())
        waited = 0.0
        step = self._policy.progress_every_s
        while True:
            try:
                return pending.result(timeout=step)
            except grpc.FutureTimeoutError:
                waited += step
                log.info(
                    "%s: Set of %d op(s) still running after %g s (deadline %g s)",
                    self.name,
                    op_count,
                    waited,
                    deadline,
                )

    def _set_request(self, ops: Sequence[Op]) -> tuple[Any, int] | None:
        """The SetRequest that carries ``ops`` in the switch's dialect and how many results
        its answer holds; None when there is nothing to send."""
        if self.target.dialect is Dialect.OPENCONFIG:
            try:
                keyed = openconfig.set_request(ops)
            except OpenConfigPathError as error:
                raise SouthboundProtocolError(self.name, f"Set: {error}") from None
            if keyed.is_empty:
                return None
            deletes = [_keyed_path(e) for e in keyed.deletes]
            updates = [(_keyed_path(e), value) for e, value in keyed.updates]
        else:
            parts = set_parts(ops)
            if parts.is_empty:
                return None
            deletes = [_path(e) for e in parts.deletes]
            updates = [(_path(e), value) for e, value in parts.updates]
        request = gnmi_pb2.SetRequest(
            prefix=self._prefix(),
            delete=deletes,
            update=[
                gnmi_pb2.Update(path=path, val=gnmi_pb2.TypedValue(json_ietf_val=value))
                for path, value in updates
            ],
        )
        return request, len(deletes) + len(updates)


def _json_of(update: Any, elems: Elems) -> object:
    kind = update.val.WhichOneof("value")
    if kind not in ("json_ietf_val", "json_val"):
        raise PathError(f"{text(elems)}: value is {kind or 'empty'}, not JSON")
    return decode_json(getattr(update.val, kind), elems)


def _database_from_reply(reply: Any, keep: frozenset[str]) -> tuple[frozenset[str], SwitchConfig]:
    """The tables a CONFIG_DB root answer holds, and the entries of those in ``keep``."""
    tables: set[str] = set()
    config: SwitchConfig = {}
    for note in reply.notification:
        prefix = [e.name for e in note.prefix.elem]
        for update in note.update:
            elems = (*prefix, *(e.name for e in update.path.elem))
            present, entries = config_from_database(elems, _json_of(update, elems), keep)
            tables |= present
            config.update(entries)
    return frozenset(tables), config


@dataclass(frozen=True, slots=True)
class TableAnswers:
    """One Get of whole tables as the switch answered it: ``raw``, per table, the JSON text
    of ``{key: {field: value}}`` not decoded yet; ``decoded``, entries that came otherwise
    (a CONFIG_DB root read, or an answer at entry or field depth)."""

    switch: str
    raw: Mapping[str, bytes]
    decoded: SwitchConfig

    def config(self) -> SwitchConfig:
        """Every entry, decoded and checked; ``SouthboundProtocolError`` when the switch
        answered something that is not CONFIG_DB entries of strings."""
        config: SwitchConfig = dict(self.decoded)
        for table, raw in self.raw.items():
            elems = table_elems(table)
            try:
                config.update(config_from_value(elems, decode_json(raw, elems)))
            except PathError as error:
                raise SouthboundProtocolError(self.switch, f"Get answer: {error}") from None
        return config


def _answers_from_reply(switch: str, reply: Any) -> TableAnswers:
    raw: dict[str, bytes] = {}
    decoded: SwitchConfig = {}
    for note in reply.notification:
        prefix = [e.name for e in note.prefix.elem]
        for update in note.update:
            elems = (*prefix, *(e.name for e in update.path.elem))
            where = parse_elems(elems)
            kind = update.val.WhichOneof("value")
            if (
                where.key is None
                and kind in ("json_ietf_val", "json_val")
                and where.table not in raw
            ):
                raw[where.table] = getattr(update.val, kind)
            else:
                decoded.update(config_from_value(elems, _json_of(update, elems)))
    return TableAnswers(switch, raw, decoded)


# How often a channel pings a quiet connection: more seldom than any gNMI server on a SONiC
# switch lets a client ping. sonic-gnmi (telemetry/telemetry.go) sets a keepalive enforcement
# policy only when it serves TLS (MinTime 20 s, pings without streams allowed); plaintext it
# keeps grpc-go's default (keepalive.EnforcementPolicy: MinTime 5 min, no pings without an
# active stream), and answers a client that pings more often with GOAWAY "too_many_pings",
# which ends every stream of the connection. One setting for Get/Set channels, the
# collector's streams and the drift watch's; a peer that vanished is noticed within about 6
# minutes (the streams' own deadlines and reconnects notice sooner when the switch restarts).
KEEPALIVE_TIME_MS = 360_000


@dataclass(frozen=True)
class ChannelOptions:
    """Reconnect quickly after a switch restarts (gRPC's default first backoff is 1 s and
    grows to 120 s), and keep idle channels alive across reconcile intervals without drawing
    a server's "too_many_pings" (``KEEPALIVE_TIME_MS``: a Set waiting minutes on GCU is such
    a quiet call; against SONiC's own gNMI server a first rollout's Set was cut off after 2
    minutes by that GOAWAY when the pings came every 30 s). Each channel keeps its own
    connections (a local subchannel pool): gRPC otherwise shares them process wide by
    address, so a pool opened after a switch restarted could inherit a connection still
    backing off from the old one. ``max_receive_bytes``: the largest answer taken (a
    Subscribe to a switch's whole COUNTERS table answers it in one message; gRPC's default
    limit is 4 MiB)."""

    initial_reconnect_backoff_ms: int = 100
    max_reconnect_backoff_ms: int = 2000
    keepalive_time_ms: int = KEEPALIVE_TIME_MS
    max_receive_bytes: int = 64 * 1024 * 1024

    def as_grpc(self) -> list[tuple[str, int]]:
        return [
            ("grpc.initial_reconnect_backoff_ms", self.initial_reconnect_backoff_ms),
            ("grpc.min_reconnect_backoff_ms", self.initial_reconnect_backoff_ms),
            ("grpc.max_reconnect_backoff_ms", self.max_reconnect_backoff_ms),
            ("grpc.keepalive_time_ms", self.keepalive_time_ms),
            ("grpc.max_receive_message_length", self.max_receive_bytes),
            ("grpc.use_local_subchannel_pool", 1),
        ]


def open_channel(
    target: GnmiTarget, options: ChannelOptions | None = None, *, aio: bool = False
) -> Any:
    """The one way a channel to a switch is opened: its TLS (the CA that signed the switch's
    certificate, mutual TLS, the name the certificate bears) and ``options``; blocking for
    Get and Set (``SessionPool``), asyncio (``aio``) for Subscribe's streams
    (``controller/southbound/subscribe.py``, ``EndpointChannels``)."""
    transport = grpc.aio if aio else grpc
    grpc_options: list[tuple[str, Any]] = list((options or ChannelOptions()).as_grpc())
    if target.tls is None:
        return transport.insecure_channel(target.endpoint, options=grpc_options)
    tls = target.tls
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.root_cert.read_bytes() if tls.root_cert else None,
        private_key=tls.client_key.read_bytes() if tls.client_key else None,
        certificate_chain=tls.client_cert.read_bytes() if tls.client_cert else None,
    )
    if tls.server_name:
        grpc_options.append(("grpc.ssl_target_name_override", tls.server_name))
    return transport.secure_channel(target.endpoint, credentials, options=grpc_options)


class SessionPool:
    """Sessions for a fleet: one channel per endpoint (address, port, TLS), reused by every
    session and every call to it, and one ``InFlightLimit`` over all of them. Close it (or
    use ``with``) to close the channels."""

    def __init__(
        self,
        *,
        policy: CallPolicy | None = None,
        max_in_flight: int = 64,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] | None = None,
        channel_options: ChannelOptions | None = None,
    ) -> None:
        self.policy = policy or CallPolicy()
        self.limit = InFlightLimit(max_in_flight)
        self._sleep = sleep
        self._rand = rand or random.Random().random
        self._channel_options = channel_options or ChannelOptions()
        self._channels: dict[tuple[str, TlsOptions | None], Any] = {}
        self._sessions: dict[str, SwitchSession] = {}
        self._lock = threading.Lock()

    def session(self, target: GnmiTarget) -> SwitchSession:
        """The session for ``target`` (the same object for the same target)."""
        with self._lock:
            existing = self._sessions.get(target.name)
            if existing is not None and existing.target == target:
                return existing
            key = (target.endpoint, target.tls)
            channel = self._channels.get(key)
            if channel is None:
                channel = open_channel(target, self._channel_options)
                self._channels[key] = channel
            session = SwitchSession(
                target,
                channel,
                policy=self.policy,
                sleep=self._sleep,
                rand=self._rand,
                limit=self.limit,
            )
            self._sessions[target.name] = session
            return session

    def sessions(self, targets: Iterable[GnmiTarget]) -> dict[str, SwitchSession]:
        return {t.name: self.session(t) for t in targets}

    @property
    def channel_count(self) -> int:
        return len(self._channels)

    def close(self) -> None:
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._sessions.clear()

    def __enter__(self) -> SessionPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
