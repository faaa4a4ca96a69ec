"""Properties over generated intents: valid ones survive dump -> parse unchanged and have no
problems; breaking one rule on purpose is always caught at the right field."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Intent
from controller.intent.validate import intent_problems

from .helpers import assert_has_problem, problems_of

SPEEDS = (10, 25, 40, 50, 100, 200, 400, 800)
DYNAMIC = ("mqecn", "dynaq", "hdcq")


def _fabric(draw: st.DrawFn, n_hosts: int, levels: list[int]) -> dict[str, Any]:
    # RTT >= 20 us and lambda >= 0.5 keep K >= 10 Gb/s x 20 us x 0.5 = 12 500 B above any MTU
    # (<= 9216 B); a buffer >= 50 MB stays above K <= 800 Gb/s x 100 us x 2 = 20 MB.
    fabric: dict[str, Any] = {
        "base_rtt_us": draw(st.floats(20.0, 100.0)),
        "ecn_lambda": draw(st.floats(0.5, 2.0)),
        "mtu_bytes": draw(st.integers(1500, 9216)),
        "port_buffer_bytes": draw(st.integers(50_000_000, 1_000_000_000)),
        "wred_drop_probability_pct": draw(st.integers(0, 100)),
    }
    if n_hosts:
        # f <= 2 <= 2n keeps every level at or below R / n <= R: rate = fP / (2nP/R + eps).
        # Factors fall as the level rises (QJUMP §3.2), so draw them and hand the largest to
        # the lowest level.
        drawn = sorted((draw(st.floats(0.01, 2.0)) for _ in levels), reverse=True)
        factors = dict(zip(sorted(levels), drawn, strict=True))
        fabric["qjump"] = {
            "hosts": draw(st.integers(n_hosts, 1000)),
            "packet_bytes": draw(st.integers(122, 1500)),  # QjumpPacketTooSmall below 122
            "epsilon_us": draw(st.floats(0.0, 10.0)),
            "factors": factors,
        }
    return fabric


def _switches(draw: st.DrawFn) -> list[dict[str, Any]]:
    switches = []
    for i in range(draw(st.integers(0, 4))):
        speeds = draw(st.lists(st.sampled_from(SPEEDS), min_size=1, max_size=4))
        ports = [
            {
                "name": f"Ethernet{4 * j}",
                "speed_gbps": speed,
                "buffer_bytes": draw(st.none() | st.integers(50_000_000, 10**9)),
            }
            for j, speed in enumerate(speeds)
        ]
        switches.append(
            {
                "name": f"sw-{i}",
                "role": draw(st.sampled_from(["leaf", "spine"])),
                "gnmi": {"address": f"10.1.0.{i + 1}", "port": draw(st.integers(1, 65535))},
                "credential_ref": draw(st.sampled_from(["env:GNMI_PW", "file:/etc/pw", "vault:x"])),
                "ports": ports,
            }
        )
    return switches


def _service_classes(draw: st.DrawFn, n_hosts: int) -> tuple[list[dict[str, Any]], list[int]]:
    queues = draw(st.permutations(range(8)))
    dscps = draw(st.permutations(range(64)))
    dynamic = draw(st.sampled_from(DYNAMIC))
    scale = draw(st.integers(1, 1000))  # any scale: the ratio stays within 1..100
    classes: list[dict[str, Any]] = []
    levels: list[int] = []
    q = d = 0
    wanted = draw(st.integers(0, 6))
    while q < len(queues) and len(classes) < wanted:
        strict = draw(st.booleans())
        ecn_modes = [
            "off",
            "standard",
            *(["dynaq", "hdcq"] if strict else ["per-queue-minimum", "mqecn"]),
        ]
        ecn = draw(st.sampled_from(ecn_modes))
        if ecn in DYNAMIC:
            ecn = dynamic if dynamic in ecn_modes else "standard"
        n_dscp = draw(st.integers(1, 3))
        service_class: dict[str, Any] = {
            "name": f"class-{len(classes)}",
            "dscp": list(dscps[d : d + n_dscp]),
            "queue": queues[q],
            "scheduling": {"type": "STRICT"}
            if strict
            else {"type": "DWRR", "weight": scale * draw(st.integers(1, 100))},
            "ecn": ecn,
        }
        q, d = q + 1, d + n_dscp
        if strict and n_hosts and draw(st.booleans()):
            service_class["qjump_level"] = len(levels)
            levels.append(len(levels))
        elif strict and q < len(queues) and draw(st.booleans()):
            stages = draw(st.integers(1, len(queues) - q))
            service_class["pias"] = {
                "workload": draw(st.sampled_from(["websearch", "datamining", "cache", "hadoop"])),
                "load": draw(st.floats(0.05, 0.95)),
                "demotions": [
                    {"dscp": dscps[d + k], "queue": queues[q + k]} for k in range(stages)
                ],
            }
            q, d = q + stages, d + stages
        classes.append(service_class)
    return classes, levels


@st.composite
def valid_intent_data(draw: st.DrawFn) -> dict[str, Any]:
    hosts = [
        {"name": f"h{i}", "address": f"10.2.0.{i + 1}", "nic_gbps": draw(st.sampled_from(SPEEDS))}
        for i in range(draw(st.integers(0, 4)))
    ]
    classes, levels = _service_classes(draw, len(hosts))
    return {
        "fabric": _fabric(draw, len(hosts), levels),
        "switches": _switches(draw),
        "hosts": hosts,
        "service_classes": classes,
    }


@settings(max_examples=150, deadline=None)
@given(valid_intent_data())
def test_dump_then_parse_is_identity(data: dict[str, Any]) -> None:
    intent = parse_intent(data)
    dumped = dump_intent(intent)
    # Through real JSON text, as the store and the API carry it.
    again = parse_intent(json.loads(json.dumps(dumped)))
    assert again == intent
    assert dump_intent(again) == dumped


@settings(max_examples=100, deadline=None)
@given(valid_intent_data())
def test_generated_intents_have_no_problems(data: dict[str, Any]) -> None:
    assert intent_problems(Intent.model_validate(data)) == []


@settings(max_examples=100, deadline=None)
@given(valid_intent_data(), st.data())
def test_reusing_any_dscp_is_caught_at_the_new_use(
    data: dict[str, Any], pick: st.DataObject
) -> None:
    classes = data["service_classes"]
    assume(len(classes) >= 2)
    source, target = pick.draw(st.permutations(range(len(classes))))[:2]
    reused = pick.draw(st.sampled_from(classes[source]["dscp"]))
    classes[target]["dscp"].append(reused)
    appended = f"service_classes[{target}].dscp[{len(classes[target]['dscp']) - 1}]"
    original = f"service_classes[{source}].dscp[{classes[source]['dscp'].index(reused)}]"
    # Classes are read in order, so whichever use comes later is the one reported.
    later, earlier = (appended, original) if source < target else (original, appended)
    assert_has_problem(problems_of(data), later, f"DSCP {reused} is already used at {earlier}")
