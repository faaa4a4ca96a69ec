"""A lossless class on switches whose PFC watchdog never ran (docs/lossless.md, "A switch's
first PFC watchdog"): SONiC's config updater refuses the PFC_WD table's first entry, so a
plan refuses a discovered switch without one (409, the command named), and the rollout worker
refuses a switch never discovered from its own read, before writing anything. Four vsonic
switches (real gRPC, real Redis); the API beside the real worker."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.intent.loader import dump_intent
from tests.integration.southbound.conftest import Fabric
from tests.support.lossless import with_lossless_storage
from vsonic.db import CONFIG_DB, redis_key
from vsonic.seed import WATCHDOG_GLOBAL, WATCHDOG_INTERVAL, lossless_pools

from .conftest import Controller, full_dump, load_neighbours, statuses
from .test_adopting import api as api
from .test_adopting import headers as headers
from .test_adopting import store
from .test_rollout import start

pytestmark = [pytest.mark.integration]

STARTED = {redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL): dict(WATCHDOG_INTERVAL)}


@pytest.fixture
def operated(fabric: Fabric) -> Fabric:
    """The fabric with LLDP everywhere and no watchdog (test_adopting's ``api`` and
    ``headers`` run over it: the app beside the real worker)."""
    load_neighbours(fabric)
    return fabric


def test_a_plan_names_a_discovered_switch_without_a_watchdog_until_it_is_started(
    operated: Fabric, api: TestClient, headers: dict[str, str]
) -> None:
    store(api, headers, dump_intent(with_lossless_storage(operated.intent)))
    found = api.post("/api/v1/discoveries", json={"switches": ["leaf1"]}, headers=headers)
    assert found.status_code == 201, found.text
    refused = api.post("/api/v1/plans", json={}, headers=headers)
    assert refused.status_code == 409, refused.text
    body: dict[str, Any] = refused.json()
    assert body["type"] == "urn:sluice:problem:pfc-watchdog-not-started"
    # Only leaf1 was discovered; the others are the worker's to judge.
    ((field, reason),) = [(e["field"], e["reason"]) for e in body["errors"]]
    assert field == "leaf1: PFC_WD"
    assert "`sudo pfcwd interval 200`" in reason
    assert "then discover the switch again" in reason

    # Started as ``pfcwd interval 200`` starts it, and discovered again: planned.
    operated.switches["leaf1"].store.write_atomically(CONFIG_DB, dict(STARTED))
    found = api.post("/api/v1/discoveries", json={"switches": ["leaf1"]}, headers=headers)
    assert found.status_code == 201, found.text
    planned = api.post("/api/v1/plans", json={}, headers=headers)
    assert planned.status_code == 200, planned.text
    (leaf1,) = [p for p in planned.json()["plans"] if p["switch"] == "leaf1"]
    assert "PFC_WD|Ethernet0" in {f"{op['table']}|{op['key']}" for op in leaf1["ops"]}


def test_a_switch_without_a_watchdog_is_refused_unwritten_and_told_how_to_start_it(
    controller: Controller,
) -> None:
    pools = {redis_key(CONFIG_DB, "BUFFER_POOL", k): v for k, v in lossless_pools().items()}
    for name, switch in controller.fabric.switches.items():
        switch.store.write_atomically(CONFIG_DB, pools | (STARTED if name == "spine2" else {}))
    before = full_dump(controller.fabric)
    controller.store_intent(with_lossless_storage(controller.fabric.intent))
    info = start(controller, batch_size=4)
    controller.runner().run_until_idle()
    done = controller.rollouts.get(info.id)
    assert statuses(done) == {
        "leaf1": "failed",
        "leaf2": "failed",
        "spine1": "failed",
        "spine2": "applied_verified",
    }
    reasons = {r.switch: r.reason or "" for r in done.results if r.status == "failed"}
    for name, reason in reasons.items():
        assert "not written: the switch's config updater would refuse" in reason, name
        assert "`sudo pfcwd interval 200`" in reason, name
    after = full_dump(controller.fabric)
    assert {n: after[n] for n in reasons} == {n: before[n] for n in reasons}
    assert any(key.startswith("PFC_WD|Ethernet") for key in after["spine2"])
