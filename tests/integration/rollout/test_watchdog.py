"""A lossless class on switches whose PFC watchdog never ran (docs/lossless.md, "A switch's
first PFC watchdog"): SONiC's config updater refuses the PFC_WD table's first entry, so the
rollout worker refuses each such switch from its own read, before writing anything, and
names what its operator must run. Four vsonic switches (real gRPC, real Redis), never
discovered, so the rollout's start has nothing to judge them by."""

from __future__ import annotations

import pytest

from tests.support.lossless import with_lossless_storage
from vsonic.db import CONFIG_DB, redis_key
from vsonic.seed import WATCHDOG_GLOBAL, WATCHDOG_INTERVAL, lossless_pools

from .conftest import Controller, full_dump, statuses
from .test_rollout import start

pytestmark = [pytest.mark.integration]


def test_a_switch_without_a_watchdog_is_refused_unwritten_and_told_how_to_start_it(
    controller: Controller,
) -> None:
    pools = {redis_key(CONFIG_DB, "BUFFER_POOL", k): v for k, v in lossless_pools().items()}
    started = {redis_key(CONFIG_DB, "PFC_WD", WATCHDOG_GLOBAL): dict(WATCHDOG_INTERVAL)}
    for name, switch in controller.fabric.switches.items():
        switch.store.write_atomically(CONFIG_DB, pools | (started if name == "spine2" else {}))
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
