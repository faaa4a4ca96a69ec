"""``decode`` with a stream's path-name cache and orjson gives what the plain reading gives:
the same names for every path (however often it repeats, with or without a prefix), the
standard library's answer for JSON orjson refuses, and a bounded cache."""

from __future__ import annotations

import json
import math
from typing import Any

from pygnmi.spec.v080 import gnmi_pb2  # type: ignore[import-untyped]

from controller.southbound.subscribe import PathNames, counters_path, decode


def _path(*names: str) -> Any:
    return gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=n) for n in names])


def _response(prefix: tuple[str, ...], updates: list[tuple[tuple[str, ...], bytes]]) -> Any:
    note = gnmi_pb2.Notification(
        timestamp=5,
        prefix=_path(*prefix),
        update=[
            gnmi_pb2.Update(path=_path(*p), val=gnmi_pb2.TypedValue(json_ietf_val=text))
            for p, text in updates
        ],
        delete=[_path("SLUICE_AGENT_STATE", "Ethernet0|1")],
    )
    return gnmi_pb2.SubscribeResponse(update=note)


def test_cached_names_equal_the_plain_reading_with_and_without_a_prefix() -> None:
    names = PathNames()
    fields = json.dumps({"SAI_QUEUE_STAT_BYTES": "10"}).encode()
    for prefix in ((), ("COUNTERS_DB", "localhost")):
        updates = [(counters_path(f"oid:0x{i}")[len(prefix) :], fields) for i in range(3)]
        response = _response(prefix, updates * 2)  # every path twice: the second from the cache
        cached, plain = decode(response, names), decode(response)
        assert cached == plain
        assert cached is not None
        assert [c.elems for c in cached.changes[:3]] == [
            counters_path(f"oid:0x{i}") for i in range(3)
        ]
        assert cached.changes[-1] == ((*prefix, "SLUICE_AGENT_STATE", "Ethernet0|1"), None)


def test_json_orjson_refuses_is_read_by_the_standard_library() -> None:
    big = 2**70  # beyond orjson's 64-bit integers
    response = _response((), [(("a",), b'{"x": NaN}'), (("b",), str(big).encode())])
    note = decode(response, PathNames())
    assert note is not None
    assert math.isnan(note.changes[0].value["x"])
    assert note.changes[1].value == big


def test_the_cache_starts_afresh_past_its_limit() -> None:
    names = PathNames(limit=2)
    for i in range(5):
        assert names(_path("COUNTERS", str(i))) == ("COUNTERS", str(i))
    assert len(names._names) <= 2
