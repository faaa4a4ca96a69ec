"""Smoke test of bench/telemetry_realsonic_bench.py at a tiny size: a switch of 2 ports x 2
queues (6 counter objects, rewritten every second) read by each client for 2 s through
SONiC's own gNMI server and vsonic over the same redis. Every client takes every object
without a fault; a table subscription costs a message a tick, a path per object a message per
object, as the server sends them. No timing assertions."""

from __future__ import annotations

import pytest

from bench.telemetry_realsonic_bench import ROLES, measure, render

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(300)]


def test_tiny_run_measures_every_client() -> None:
    r = measure(ports=2, queues=2, duration=2.0, warmup=2.0)
    assert r["objects"] == 6
    for role in ROLES:
        x = r[role]
        assert x["faults"] == [], role
        assert x["queues"] == 4, role  # every queue found through its map
        assert x["updates"] > 0, role
        assert x["updates"] <= 6 * 4, role  # six objects a second, a tick either side
    # One message a tick for a whole table; a message per object otherwise.
    # (Against the updates those messages applied, counted with them: the handler's own count
    # may be taken between a message and its updates on a loaded machine.)
    for role in ("vsonic", "table"):
        assert r[role]["messages"] < r[role]["message_updates"], role
    for role in ("per-object", "on-change"):
        assert r[role]["messages"] == r[role]["message_updates"], role
    assert r["per-object"]["server_fds"] > r["table"]["server_fds"]  # a redis connection a path
    text = render(r)
    assert "uv run python -m bench.telemetry_realsonic_bench --ports 2 --queues 2" in text
