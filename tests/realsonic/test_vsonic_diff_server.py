"""vsonic held to SONiC's own gNMI server: the same requests to both, over one redis, and
their answers compared (``gnmi_diff``): equal, or in the list of known differences
(``vsonic_differences.yaml``, rendered into docs/vsonic.md).

This module is the server alone: the real switch runs sonic-gnmi's ``telemetry`` with the
bundle's stub host service (CONFIG_DB patches applied unchecked) and no orchagent, so only
what the gNMI server itself decides is compared here: Capabilities, Get, the Set requests it
refuses or turns into a patch, and every Subscribe mode. ``test_vsonic_diff_gcu.py`` compares
Sets with the real GCU behind the server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from lab.realsonic import SwitchParts
from vsonic.gcu import GcuBehaviour

from .conftest import StartSwitch
from .differences import expect
from .gnmi_diff import (
    CONFIG,
    ON_CHANGE,
    ONCE,
    POLL,
    PROTO,
    SAMPLE,
    STREAM,
    TARGET_DEFINED,
    WRED,
    Answer,
    Pair,
    Stream,
    ietf,
    streams,
    subscribe_request,
    subscription,
    vsonic_over,
)
from .streams import seed_counters

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(300)]

JSON = gnmi_pb2.Encoding.Value("JSON")
ASCII = gnmi_pb2.Encoding.Value("ASCII")


@pytest.fixture(scope="module")
def pair(start_switch: StartSwitch) -> Iterator[Pair]:
    switch = start_switch(SwitchParts(orchagent=False, buffermgrd=False, gcu=False))
    seed_counters(switch, ports=2)
    switch.db("CONFIG_DB").hset("WRED_PROFILE|diff_wred", mapping=WRED)
    # The stub checks nothing; vsonic models GCU, which refuses to empty a table: a second
    # profile keeps the Sets here clear of GCU's rules (test_vsonic_diff_gcu.py has them).
    switch.db("CONFIG_DB").hset("WRED_PROFILE|diff_keep", mapping=WRED)
    switch.db("APPL_DB").hset("PORT_TABLE:Ethernet0", mapping={"oper_status": "up"})
    pair = vsonic_over(switch, GcuBehaviour())
    try:
        yield pair
    finally:
        pair.stop()


def oids(pair: Pair, name_map: str) -> dict[str, str]:
    return dict(pair.db("COUNTERS_DB").hgetall(name_map))


# -- Capabilities and Get -------------------------------------------------------------------------


def test_capabilities(pair: Pair) -> None:
    expect("capabilities", pair.sonic.capabilities(), pair.vsonic.capabilities())


@pytest.mark.parametrize(
    ("probe", "paths"),
    [
        ("get-config-root", [CONFIG]),
        ("get-state-root", ["/STATE_DB/localhost"]),
        ("get-appl-root", ["/APPL_DB/localhost"]),
        ("get-counters-root", ["/COUNTERS_DB/localhost"]),
        ("get-table", [f"{CONFIG}/PORT"]),
        ("get-key", [f"{CONFIG}/PORT/Ethernet0"]),
        ("get-field", [f"{CONFIG}/PORT/Ethernet0/mtu"]),
        ("get-two-paths", [f"{CONFIG}/PORT/Ethernet0/mtu", f"{CONFIG}/WRED_PROFILE"]),
        ("get-missing-table", [f"{CONFIG}/NOPE_TABLE"]),
        ("get-missing-table-prefix", [f"{CONFIG}/WRED"]),
        ("get-missing-key", [f"{CONFIG}/PORT/Ethernet999"]),
        ("get-missing-field", [f"{CONFIG}/PORT/Ethernet0/nope"]),
        ("get-missing-after-found", [f"{CONFIG}/PORT/Ethernet0", f"{CONFIG}/PORT/Ethernet999"]),
        ("get-mixed-dbs", [f"{CONFIG}/PORT/Ethernet0", "/STATE_DB/localhost/CREDENTIALS"]),
        ("get-state-table", ["/STATE_DB/localhost/CREDENTIALS"]),
        ("get-appl-key", ["/APPL_DB/localhost/PORT_TABLE/Ethernet0"]),
        ("get-short-path", ["/CONFIG_DB"]),
        ("get-unknown-db", ["/NOPE_DB/localhost/PORT"]),
        ("get-other-instance", ["/CONFIG_DB/asic9/PORT/Ethernet0"]),
        ("get-too-deep", [f"{CONFIG}/PORT/Ethernet0/mtu/extra"]),
        ("get-counters-name-map", ["/COUNTERS_DB/localhost/COUNTERS_PORT_NAME_MAP"]),
        (
            "get-counters-name-map-field",
            ["/COUNTERS_DB/localhost/COUNTERS_PORT_NAME_MAP/Ethernet0"],
        ),
        ("get-counters-virtual-port", ["/COUNTERS_DB/localhost/COUNTERS/Ethernet0"]),
        ("get-counters-virtual-queue", ["/COUNTERS_DB/localhost/COUNTERS/Ethernet0:3"]),
        ("get-counters-table", ["/COUNTERS_DB/localhost/COUNTERS"]),
    ],
)
def test_get(pair: Pair, probe: str, paths: list[str]) -> None:
    expect(probe, *pair.get(*paths))


def test_get_counters_by_oid(pair: Pair) -> None:
    queue = oids(pair, "COUNTERS_QUEUE_NAME_MAP")["Ethernet0:3"]
    port = oids(pair, "COUNTERS_PORT_NAME_MAP")["Ethernet0"]
    paths = [f"/COUNTERS_DB/localhost/COUNTERS/{queue}", f"/COUNTERS_DB/localhost/COUNTERS/{port}"]
    expect("get-counters-oid", *pair.get(*paths))
    field = f"/COUNTERS_DB/localhost/COUNTERS/{queue}/SAI_QUEUE_STAT_BYTES"
    expect("get-counters-oid-field", *pair.get(field))


def test_get_with_a_prefix(pair: Pair) -> None:
    expect("get-prefix", *pair.get("PORT/Ethernet0", prefix=CONFIG))


@pytest.mark.parametrize(
    ("probe", "encoding"),
    [("get-encoding-json", JSON), ("get-encoding-proto", PROTO), ("get-encoding-ascii", ASCII)],
)
def test_get_encodings(pair: Pair, probe: str, encoding: int) -> None:
    expect(probe, *pair.get(f"{CONFIG}/PORT/Ethernet0", encoding=encoding))


def test_get_proto_bytes(pair: Pair) -> None:
    appl = pair.db("APPL_DB")
    appl.hset("DIFF_PB_TABLE:k1", mapping={"pb": "\x08\x01"})
    try:
        path = "/APPL_DB/localhost/DIFF_PB_TABLE/k1"
        expect("get-proto-bytes", *pair.get(path, encoding=PROTO))
    finally:
        appl.delete("DIFF_PB_TABLE:k1")


# -- Set: what the server decides before a host service sees it ---------------------------------


def test_set_updates_and_replaces_an_entry_whole(pair: Pair) -> None:
    fields = {**WRED, "green_drop_probability": "7"}
    expect(
        "set-update-entry", *pair.set(update=[(f"{CONFIG}/WRED_PROFILE/diff_wred", ietf(fields))])
    )
    expect(
        "set-update-new-entry", *pair.set(update=[(f"{CONFIG}/WRED_PROFILE/diff_new", ietf(WRED))])
    )
    expect(
        "set-replace-entry", *pair.set(replace=[(f"{CONFIG}/WRED_PROFILE/diff_wred", ietf(WRED))])
    )
    expect(
        "set-replace-missing-entry",
        *pair.set(replace=[(f"{CONFIG}/WRED_PROFILE/diff_none", ietf(WRED))]),
    )


def test_set_leaves(pair: Pair) -> None:
    leaf = f"{CONFIG}/WRED_PROFILE/diff_wred/green_drop_probability"
    expect("set-update-leaf", *pair.set(update=[(leaf, ietf("9"))]))
    expect("set-replace-leaf", *pair.set(replace=[(leaf, ietf("9"))]))
    expect("set-delete-leaf", *pair.set(delete=[leaf]))
    expect("set-delete-entry", *pair.set(delete=[f"{CONFIG}/WRED_PROFILE/diff_wred"]))
    expect("set-delete-missing", *pair.set(delete=[f"{CONFIG}/WRED_PROFILE/diff_none"]))


def test_set_values_the_server_refuses(pair: Pair) -> None:
    leaf = f"{CONFIG}/WRED_PROFILE/diff_wred/green_drop_probability"
    json_val = gnmi_pb2.TypedValue(json_val=b'"9"')
    expect("set-json-val", *pair.set(update=[(leaf, json_val)]))
    string_val = gnmi_pb2.TypedValue(string_val="9")
    expect("set-string-val", *pair.set(update=[(leaf, string_val)]))
    expect("set-bare-number", *pair.set(update=[(leaf, ietf(9))]))
    expect("set-leaf-object", *pair.set(update=[(leaf, ietf({"a": "b"}))]))
    entry = f"{CONFIG}/WRED_PROFILE/diff_wred"
    expect("set-entry-not-object", *pair.set(update=[(entry, ietf("x"))]))
    expect("set-not-json", *pair.set(update=[(leaf, gnmi_pb2.TypedValue(json_ietf_val=b"{"))]))


def test_set_other_databases(pair: Pair) -> None:
    expect(
        "set-state-db",
        *pair.set(("STATE_DB",), update=[("/STATE_DB/localhost/DIFF/k", ietf({"f": "v"}))]),
    )
    expect(
        "set-counters-db",
        *pair.set(("COUNTERS_DB",), update=[("/COUNTERS_DB/localhost/DIFF/k", ietf({"f": "v"}))]),
    )
    expect(
        "set-mixed-dbs",
        *pair.set(
            ("CONFIG_DB", "APPL_DB"),
            update=[
                (f"{CONFIG}/WRED_PROFILE/diff_wred/ecn", ietf("ecn_none")),
                ("/APPL_DB/localhost/DIFF_TABLE/k", ietf({"f": "v"})),
            ],
        ),
    )
    expect(
        "set-appl-db",
        *pair.set(("APPL_DB",), update=[("/APPL_DB/localhost/DIFF_TABLE/k", ietf({"f": "v"}))]),
    )
    expect("set-config-root", *pair.set(replace=[(CONFIG, ietf({"PORT": {}}))]))


# -- Subscribe ------------------------------------------------------------------------------------


def canon(messages: list[Answer]) -> list[Answer]:
    """Messages in a fixed order: the server's per-path goroutines race, so the order of
    messages for different paths is not something a client may rely on."""
    return sorted(messages, key=lambda m: json.dumps(m, sort_keys=True))


def distinct(messages: list[Answer]) -> list[Answer]:
    """The different messages a SAMPLE stream sent (how many ticks fit a window is timing)."""
    seen = {json.dumps(m, sort_keys=True): m for m in messages}
    return [seen[k] for k in sorted(seen)]


def opened(stream: Stream) -> Answer:
    """What a Subscribe sent up to its sync (or its end)."""
    seen = stream.until_sync()
    form: Answer = {"initial": canon([m for m in seen if not m.get("sync") and "end" not in m])}
    form["synced"] = any(m.get("sync") for m in seen)
    ended = [m for m in seen if "end" in m]
    if ended:
        form["end"] = ended[0]
    return form


@contextmanager
def both_opened(request: Any, pair: Pair) -> Iterator[tuple[Stream, Stream, Answer, Answer]]:
    """The same Subscribe on both servers, each read up to its sync."""
    with streams(pair.servers(), request) as (sonic, vsonic):
        yield sonic, vsonic, opened(sonic), opened(vsonic)


def messages_until(stream: Stream, count: int, timeout_s: float = 10.0) -> list[Answer]:
    return stream.collect_until(lambda seen: len(seen) >= count, timeout_s)


SUBSCRIBE_REFUSALS = {
    "sub-target-defined": ([f"{CONFIG}/PORT"], STREAM, TARGET_DEFINED, 0.0),
    "sub-mixed-dbs": (
        [f"{CONFIG}/PORT", "/STATE_DB/localhost/CREDENTIALS"],
        STREAM,
        ON_CHANGE,
        0.0,
    ),
    "sub-absent-table": ([f"{CONFIG}/NOPE_TABLE"], STREAM, ON_CHANGE, 0.0),
    "sub-absent-table-sample": ([f"{CONFIG}/NOPE_TABLE"], STREAM, SAMPLE, 1.0),
    "sub-absent-table-once": ([f"{CONFIG}/NOPE_TABLE"], ONCE, ON_CHANGE, 0.0),
    "sub-sample-below-minimum": ([f"{CONFIG}/PORT"], STREAM, SAMPLE, 0.5),
    "sub-unknown-db": (["/NOPE_DB/localhost/PORT"], STREAM, ON_CHANGE, 0.0),
    "sub-too-deep": ([f"{CONFIG}/PORT/Ethernet0/mtu/x"], STREAM, ON_CHANGE, 0.0),
}


@pytest.mark.parametrize("probe", sorted(SUBSCRIBE_REFUSALS))
def test_subscribe_refusals(pair: Pair, probe: str) -> None:
    paths, mode, sub_mode, sample_s = SUBSCRIBE_REFUSALS[probe]
    subs = [subscription(p, sub_mode, sample_s) for p in paths]
    with both_opened(subscribe_request(subs, mode=mode), pair) as (_, _, sonic, vsonic):
        expect(probe, sonic, vsonic)


def test_subscribe_absent_table_named_by_a_prefix(pair: Pair) -> None:
    # WRED_PROFILE exists, so a table named WRED passes the server's "TABLE*" key check.
    with both_opened(subscribe_request([subscription(f"{CONFIG}/WRED")]), pair) as (
        sonic,
        vsonic,
        opened_s,
        opened_v,
    ):
        pair.db("CONFIG_DB").hset("WRED|diff", "f", "v")
        try:
            opened_s["after"] = messages_until(sonic, 1, 5.0)
            opened_v["after"] = messages_until(vsonic, 1, 5.0)
        finally:
            pair.db("CONFIG_DB").delete("WRED|diff")
        expect("sub-absent-table-prefix", opened_s, opened_v)


def test_once(pair: Pair) -> None:
    paths = [f"{CONFIG}/PORT/Ethernet0", f"{CONFIG}/PORT/Ethernet999", f"{CONFIG}/WRED_PROFILE"]
    request = subscribe_request([subscription(p) for p in paths], mode=ONCE)
    with both_opened(request, pair) as (sonic, vsonic, opened_s, opened_v):
        # After its sync a ONCE stays open on SONiC's server until the client ends it.
        opened_s["after_sync"] = sonic.collect(1.5)
        opened_v["after_sync"] = vsonic.collect(0.1)
        expect("sub-once", opened_s, opened_v)


def ended(stream: Stream) -> list[Answer]:
    """How a stream ended (the server may or may not have sent values first: racing)."""
    seen = stream.collect_until(lambda s: any("end" in m for m in s), 10.0)
    return [m for m in seen if "end" in m]


def half_closed_endings(pair: Pair, request: Any) -> list[Answer]:
    """How a Subscribe whose request side ends right after ``request`` ends, on each server."""
    forms = []
    for server in pair.servers():
        stream = Stream(server, request).open(half_closed=True)
        try:
            forms.append({"end": ended(stream)})
        finally:
            stream.cancel()
    return forms


@pytest.mark.parametrize("mode", [ONCE, POLL])
def test_once_and_poll_half_closed(pair: Pair, mode: int) -> None:
    request = subscribe_request([subscription(f"{CONFIG}/PORT/Ethernet0")], mode=mode)
    probe = "sub-once-half-closed" if mode == ONCE else "sub-poll-half-closed"
    expect(probe, *half_closed_endings(pair, request))


def test_no_request_before_half_close(pair: Pair) -> None:
    expect("sub-no-request", *half_closed_endings(pair, None))


def test_stream_half_closed_goes_on(pair: Pair) -> None:
    request = subscribe_request([subscription(f"{CONFIG}/PORT/Ethernet4/mtu")])
    forms = []
    for server in pair.servers():
        stream = Stream(server, request).open(half_closed=True)
        try:
            form = opened(stream)
            pair.db("CONFIG_DB").hset("PORT|Ethernet4", "mtu", "9000")
            form["after"] = messages_until(stream, 1, 3.0)
        finally:
            stream.cancel()
            pair.db("CONFIG_DB").hset("PORT|Ethernet4", "mtu", "9100")
        forms.append(form)
    expect("sub-stream-half-closed", forms[0], forms[1])


def test_poll(pair: Pair) -> None:
    config = pair.db("CONFIG_DB")
    config.hset("WRED_PROFILE|diff_poll", mapping=WRED)
    paths = [f"{CONFIG}/WRED_PROFILE/diff_poll", f"{CONFIG}/PORT/Ethernet0/mtu"]
    request = subscribe_request([subscription(p) for p in paths], mode=POLL)
    try:
        with both_opened(request, pair) as (sonic, vsonic, opened_s, opened_v):
            config.delete("WRED_PROFILE|diff_poll")
            for stream, form in ((sonic, opened_s), (vsonic, opened_v)):
                stream.poll()
                form["poll"] = canon(stream.until_sync(10.0))
            expect("sub-poll", opened_s, opened_v)
    finally:
        config.delete("WRED_PROFILE|diff_poll")


def test_on_change_table(pair: Pair) -> None:
    config = pair.db("CONFIG_DB")
    request = subscribe_request([subscription(f"{CONFIG}/WRED_PROFILE")])
    try:
        with both_opened(request, pair) as (sonic, vsonic, opened_s, opened_v):
            steps: list[tuple[str, Callable[[], object]]] = [
                ("hset-new", lambda: config.hset("WRED_PROFILE|diff_oc", mapping=WRED)),
                ("hset-field", lambda: config.hset("WRED_PROFILE|diff_oc", "ecn", "ecn_none")),
                ("hdel-field", lambda: config.hdel("WRED_PROFILE|diff_oc", "ecn")),
                ("del", lambda: config.delete("WRED_PROFILE|diff_oc")),
            ]
            for name, step in steps:
                step()
                opened_s[name] = canon(messages_until(sonic, 1, 5.0) + sonic.collect(0.3))
                opened_v[name] = canon(messages_until(vsonic, 1, 5.0) + vsonic.collect(0.3))
            expect("sub-on-change-table", opened_s, opened_v)
    finally:
        config.delete("WRED_PROFILE|diff_oc")


def test_on_change_key_and_field(pair: Pair) -> None:
    config = pair.db("CONFIG_DB")
    config.hset("WRED_PROFILE|diff_key", mapping=WRED)
    paths = [
        f"{CONFIG}/WRED_PROFILE/diff_key",
        f"{CONFIG}/WRED_PROFILE/diff_key/ecn",
        f"{CONFIG}/WRED_PROFILE/diff_absent",
    ]
    request = subscribe_request([subscription(p) for p in paths])
    try:
        with both_opened(request, pair) as (sonic, vsonic, opened_s, opened_v):
            steps: list[tuple[str, Callable[[], object], int]] = [
                ("hset", lambda: config.hset("WRED_PROFILE|diff_key", "ecn", "ecn_none"), 2),
                ("absent-key-written",
                 lambda: config.hset("WRED_PROFILE|diff_absent", mapping=WRED), 1),
                ("del", lambda: config.delete("WRED_PROFILE|diff_key"), 1),
            ]  # fmt: skip
            for name, step, count in steps:
                step()
                opened_s[name] = canon(messages_until(sonic, count, 5.0) + sonic.collect(0.5))
                opened_v[name] = canon(messages_until(vsonic, count, 5.0) + vsonic.collect(0.5))
            expect("sub-on-change-key-field", opened_s, opened_v)
    finally:
        config.delete("WRED_PROFILE|diff_key", "WRED_PROFILE|diff_absent")


def test_on_change_updates_only(pair: Pair) -> None:
    paths = [f"{CONFIG}/PORT/Ethernet0", f"{CONFIG}/PORT/Ethernet0/mtu"]
    request = subscribe_request([subscription(p) for p in paths], updates_only=True)
    with both_opened(request, pair) as (_, _, opened_s, opened_v):
        expect("sub-on-change-updates-only", opened_s, opened_v)


def test_sample(pair: Pair) -> None:
    queue = oids(pair, "COUNTERS_QUEUE_NAME_MAP")["Ethernet0:3"]
    port = oids(pair, "COUNTERS_PORT_NAME_MAP")["Ethernet0"]
    counters = pair.db("COUNTERS_DB")
    paths = [f"/COUNTERS_DB/localhost/COUNTERS/{queue}", f"/COUNTERS_DB/localhost/COUNTERS/{port}"]
    request = subscribe_request([subscription(p, SAMPLE, 1.0) for p in paths])
    with both_opened(request, pair) as (sonic, vsonic, opened_s, opened_v):
        time.sleep(2.5)  # both streams tick meanwhile, each read by a thread of its own
        opened_s["ticks"] = distinct(sonic.drain())
        opened_v["ticks"] = distinct(vsonic.drain())
        expect("sub-sample", opened_s, opened_v)
        # HSET, as flex counters write: an event, so both re-send the new value.
        counters.hset(f"COUNTERS:{queue}", "SAI_QUEUE_STAT_BYTES", "1000")
        time.sleep(0.2)
        # HINCRBY: no event sonic-gnmi follows, so its cache keeps the value above.
        counters.hincrby(f"COUNTERS:{queue}", "SAI_QUEUE_STAT_BYTES", 500)
        time.sleep(1.2)
        sonic.drain()
        vsonic.drain()  # the ticks that may straddle the writes
        time.sleep(2.5)
        cached = {"sonic": distinct(sonic.drain()), "vsonic": distinct(vsonic.drain())}
        counters.hset(f"COUNTERS:{queue}", "SAI_QUEUE_STAT_BYTES", "0")
        expect("sub-sample-cache", {"ticks": cached["sonic"]}, {"ticks": cached["vsonic"]})


def test_sample_updates_only(pair: Pair) -> None:
    path = f"{CONFIG}/PORT/Ethernet0"
    request = subscribe_request([subscription(path, SAMPLE, 1.0)], updates_only=True)
    with both_opened(request, pair) as (sonic, vsonic, opened_s, opened_v):
        time.sleep(2.5)
        opened_s["ticks"] = distinct(sonic.drain())
        opened_v["ticks"] = distinct(vsonic.drain())
        expect("sub-sample-updates-only", opened_s, opened_v)


def test_a_second_subscribe_on_a_connection_silences_the_first(pair: Pair) -> None:
    request = subscribe_request([subscription(f"{CONFIG}/PORT/Ethernet4/mtu")])
    forms = []
    for server in pair.servers():
        first = Stream(server, request).open()
        assert first.channel is not None
        form: Answer = {"first": opened(first)}
        second = Stream(server, request, channel=first.channel).open()
        try:
            form["second"] = opened(second)
            pair.db("CONFIG_DB").hset("PORT|Ethernet4", "mtu", "9000")
            form["second_after"] = messages_until(second, 1, 3.0)
            form["first_after"] = first.collect(1.0)
        finally:
            second.cancel()
            first.cancel()
            pair.db("CONFIG_DB").hset("PORT|Ethernet4", "mtu", "9100")
        forms.append(form)
    expect("sub-second-on-one-connection", forms[0], forms[1])


def test_subscribe_encoding_is_not_looked_at(pair: Pair) -> None:
    paths = [f"{CONFIG}/PORT/Ethernet0", f"{CONFIG}/PORT/Ethernet0/mtu"]
    for encoding, probe in ((JSON, "sub-encoding-json"), (PROTO, "sub-encoding-proto")):
        request = subscribe_request([subscription(p) for p in paths], encoding=encoding)
        with both_opened(request, pair) as (_, _, opened_s, opened_v):
            expect(probe, opened_s, opened_v)
        once = subscribe_request([subscription(p) for p in paths], mode=ONCE, encoding=encoding)
        with both_opened(once, pair) as (_, _, opened_s, opened_v):
            expect(probe + "-once", opened_s, opened_v)
