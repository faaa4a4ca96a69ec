"""The drift watch on an OpenConfig switch over real gRPC: vsonic streams the configuration
containers the watch subscribes to (``WATCH_PATHS``, ON_CHANGE on origin ``openconfig``), and
a change behind sluice's back reaches the watcher's callback with its table at once, while
a change to an operator's entry alone is not drift."""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from controller.intent.loader import parse_intent
from controller.intent.models import Dialect
from controller.openconfig.qos import QOS
from controller.openconfig.qos import compile_switch as compile_openconfig
from controller.reconcile.watch import DriftWatcher, WatchPolicy, WatchState
from controller.southbound.credentials import secret_resolver
from controller.southbound.gnmi import targets_for
from vsonic.db import MemoryStore
from vsonic.gnmi_server import Clock, Credentials, GnmiService, start_server
from vsonic.openconfig import OcOp, OpenConfigTree
from vsonic.switch import Switch, Targets

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
SWITCH = "leaf2"
PROFILES = "/qos/queue-management-profiles/queue-management-profile"


async def _until(check: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(30):
        while not check():
            await asyncio.sleep(0.02)
    assert check(), what


def test_a_change_behind_sluices_back_is_reported_at_once_and_the_operators_is_not() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["switches"][1]["dialect"] = "openconfig"
    intent = parse_intent(raw)
    tree = OpenConfigTree()
    payloads = compile_openconfig(intent, intent.switches[1])
    tree.apply([OcOp("replace", (("qos", ()),), payloads.document()[QOS])])
    profile = payloads.by_kind["queue-management-profiles"]["queue-management-profile"][0]
    password = secrets.token_hex(12)
    service = GnmiService(
        Targets([Switch(SWITCH, MemoryStore(), openconfig=tree)], fleet=False),
        Clock(),
        Credentials("admin", password),
    )
    server = start_server("127.0.0.1:0", service)
    raw["switches"][1]["gnmi"] = {"address": "127.0.0.1", "port": server.port}
    intent = parse_intent(raw)
    resolve = secret_resolver({"SLUICE_GNMI_PASSWORD": password})
    target = targets_for(intent.switches, resolve, username="admin", tls=None)[SWITCH]
    assert target.dialect is Dialect.OPENCONFIG
    reported: list[tuple[str, str | None]] = []

    async def scenario() -> None:
        watcher = DriftWatcher(
            lambda switch, table: reported.append((switch, table)),
            WatchPolicy(debounce_s=0.05),
            rand=random.Random(0).random,
        )
        try:
            watcher.sync({SWITCH: target})
            await _until(
                lambda: watcher.states().get(SWITCH) is WatchState.WATCHING, "the watch syncs"
            )
            assert reported == []  # the initial values are what the switch held
            # One Set: an operator's queue appears, and a sluice profile's threshold moves.
            operator = (("qos", ()), ("queues", ()), ("queue", (("name", "OPERATOR_Q"),)))
            wred = (
                ("qos", ()),
                ("queue-management-profiles", ()),
                ("queue-management-profile", (("name", profile["name"]),)),
                ("wred", ()),
                ("uniform", ()),
                ("config", ()),
            )
            tree.apply(
                [
                    OcOp(
                        "update", operator, {"name": "OPERATOR_Q", "config": {"name": "OPERATOR_Q"}}
                    ),
                    OcOp("update", wred, {"min-threshold": "12345", "max-threshold": "12345"}),
                ]
            )
            # The debouncer reports every table of one burst together: had the operator's
            # queue counted, it would be among them.
            await _until(lambda: bool(reported), "the drift reported")
        finally:
            await watcher.close()

    try:
        asyncio.run(scenario())
    finally:
        server.stop(grace_s=0.2)
    assert reported == [(SWITCH, PROFILES)]
