"""vsonic held to SONiC's own gNMI server with the real Generic Config Updater behind it: the
same CONFIG_DB Sets to both over one redis, and what each answered and wrote compared
(``gnmi_diff``, ``vsonic_differences.yaml``). vsonic's ``GcuBehaviour`` and schema model GCU:
the patch semantics, the YANG refusals (a range, min above max, an unknown field, a missing
reference), the tables without a model, the empty-table rule.

The real switch runs no orchagent (only the server and GCU decide here) and has no model for
sluice's tables, as a switch without sluice's YANG extension; vsonic is started the same way
(``yang_extension=False``). Each real Set is a GCU run of seconds, so the probes are few.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.realsonic import SwitchParts
from vsonic.gcu import GcuBehaviour

from .conftest import StartSwitch
from .differences import expect
from .gnmi_diff import CONFIG, WRED, Pair, ietf, vsonic_over

pytestmark = [pytest.mark.realsonic, pytest.mark.timeout(600)]

SCHEDULER: dict[str | bytes, str] = {"type": "DWRR", "weight": "20"}


@pytest.fixture(scope="module")
def pair(start_switch: StartSwitch) -> Iterator[Pair]:
    switch = start_switch(SwitchParts(orchagent=False, buffermgrd=False, gcu=True))
    config = switch.db("CONFIG_DB")
    config.hset("WRED_PROFILE|diff_wred", mapping=WRED)
    config.hset("SCHEDULER|diff_sched", mapping=SCHEDULER)
    config.hset("SCHEDULER|diff_other", mapping=SCHEDULER)
    pair = vsonic_over(switch, GcuBehaviour(yang_extension=False))
    try:
        yield pair
    finally:
        pair.stop()


def test_accepted_sets(pair: Pair) -> None:
    # An entry added, a leaf updated, a leaf and an entry deleted: one GCU run (seconds each),
    # what each op wrote compared key by key.
    leaf = f"{CONFIG}/WRED_PROFILE/diff_wred/green_drop_probability"
    expect(
        "gcu-entry-and-leaf-ops",
        *pair.set(
            update=[(f"{CONFIG}/WRED_PROFILE/diff_new", ietf(WRED)), (leaf, ietf("9"))],
            delete=[f"{CONFIG}/WRED_PROFILE/diff_wred/ecn", f"{CONFIG}/SCHEDULER/diff_other"],
        ),
    )
    partial = {"green_min_threshold": "1000", "green_max_threshold": "2000"}
    expect(
        "gcu-update-entry-replaces-it",
        *pair.set(update=[(f"{CONFIG}/WRED_PROFILE/diff_wred", ietf(partial))]),
    )
    queue = {"scheduler": "diff_sched", "wred_profile": "diff_wred"}
    expect("gcu-add-queue", *pair.set(update=[(f"{CONFIG}/QUEUE/Ethernet4|3", ietf(queue))]))


def test_refused_sets(pair: Pair) -> None:
    bad_wred = {**WRED, "green_min_threshold": "3000000"}
    expect(
        "gcu-wred-min-above-max",
        *pair.set(update=[(f"{CONFIG}/WRED_PROFILE/diff_bad", ietf(bad_wred))]),
    )
    expect(
        "gcu-out-of-range",
        *pair.set(update=[(f"{CONFIG}/SCHEDULER/diff_sched/weight", ietf("101"))]),
    )
    expect(
        "gcu-unknown-field",
        *pair.set(update=[(f"{CONFIG}/SCHEDULER/diff_sched/wieght", ietf("5"))]),
    )
    missing = {"scheduler": "diff_sched", "wred_profile": "no_such_profile"}
    expect(
        "gcu-missing-reference",
        *pair.set(update=[(f"{CONFIG}/QUEUE/Ethernet8|3", ietf(missing))]),
    )
    expect("gcu-missing-port", *pair.set(update=[(f"{CONFIG}/QUEUE/Ethernet999|3", ietf({}))]))
    agent = {"algorithm": "static", "interval_ms": "100"}
    expect(
        "gcu-table-without-model",
        *pair.set(update=[(f"{CONFIG}/SLUICE_AGENT/global", ietf(agent))]),
    )
    expect(
        "gcu-number-in-entry",
        *pair.set(update=[(f"{CONFIG}/SCHEDULER/diff_num", ietf({"type": "DWRR", "weight": 5}))]),
    )


def test_emptying_a_table(pair: Pair) -> None:
    pair.db("CONFIG_DB").hset("DSCP_TO_TC_MAP|diff_map", mapping={"10": "1"})
    try:
        expect("gcu-delete-last-entry", *pair.set(delete=[f"{CONFIG}/DSCP_TO_TC_MAP/diff_map"]))
        expect("gcu-delete-table", *pair.set(delete=[f"{CONFIG}/DSCP_TO_TC_MAP"]))
    finally:
        pair.db("CONFIG_DB").delete("DSCP_TO_TC_MAP|diff_map")


def test_deleting_what_is_referenced(pair: Pair) -> None:
    config = pair.db("CONFIG_DB")
    config.hset("QUEUE|Ethernet12|3", mapping={"scheduler": "diff_sched"})
    try:
        expect("gcu-delete-referenced", *pair.set(delete=[f"{CONFIG}/SCHEDULER/diff_sched"]))
    finally:
        config.delete("QUEUE|Ethernet12|3")
