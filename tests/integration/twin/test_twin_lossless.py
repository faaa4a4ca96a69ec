"""A lossless class in the twin over the real netsim binary (``target/debug/netsim``): the
example intent with its storage class lossless on priority 3 and RoCE's CNP priority (DSCP 48,
the strict control class's), 300 flows, seconds.

What the twin runs is what sluice compiles: the lossless queue on its static egress profile
(its own pool), links as long as the cables the headroom was sized for, CNPs in the queue the
switches map their DSCP to. Seeds 1 and 2 lose nothing (seed 2 lost 464 packets before the
egress profile, the cable-long links and the CNP priority); the control forces the lossy
egress profile sluice used to compile, and the twin loses lossless packets and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.intent.loader import load_intent_file
from controller.intent.models import Intent
from controller.settings import TwinSettings
from controller.twin.results import result
from controller.twin.runner import run_netsim, run_twin
from controller.twin.translate import Request, translate
from tests.support.lossless import with_lossless_storage

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


@pytest.fixture(scope="module")
def intent() -> Intent:
    return with_lossless_storage(load_intent_file(EXAMPLE), cnp=True)


def _run(intent: Intent, seed: int) -> dict[str, Any]:
    return run_twin(
        intent, Request(flows=300, load=0.6, seed=seed), TwinSettings().netsim, timeout_s=120
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_the_lossless_class_pauses_marks_and_loses_nothing(intent: Intent, seed: int) -> None:
    res = _run(intent, seed=seed)
    lossless = res["lossless"]
    (storage_row,) = lossless["classes"]
    assert storage_row["name"] == "storage"
    # One lossless class: its row is every lossless group's.
    assert {k: v for k, v in storage_row.items() if k not in ("name", "queue")} == {
        k: v for k, v in lossless.items() if k not in ("classes", "paused_us_by_port")
    }
    assert lossless["drops"] == 0
    assert res["findings"] == []
    # Its priority groups reached XOFF (PAUSE sent and held) and its queue marked (CNPs back).
    assert lossless["pause_frames"] > 0
    assert lossless["paused_us"] > 0
    assert lossless["cnps"] > 0
    assert lossless["peak_group_bytes"] > 0
    storage = next(row for row in res["classes"] if row["name"] == "storage")
    assert storage["flows"] == 60
    assert storage["mean_us"] > 0
    assert res["unfinished"] == 0


def test_a_lossless_loss_is_a_finding(intent: Intent) -> None:
    # The control: seed 2 again with the lossless queue on the lossy egress profile (its
    # dynamic_th on the port's shared pool), as sluice compiled it before the static one.
    twin = translate(intent, Request(flows=300, load=0.6, seed=2))
    twin.config["qos"]["lossless"]["egress_static_th_bytes"] = None
    summary = run_netsim(TwinSettings().netsim, twin.config, timeout_s=120)
    res = result(summary, twin.classes, twin.not_modelled, twin.lossless)
    lossless = res["lossless"]
    assert lossless["drops"] > 0
    # Lost at the egress queue, which refuses what the groups admitted, not past a headroom.
    assert lossless["drops"] > lossless["headroom_overflows"]
    assert len(res["findings"]) == 1
    assert f"lossless class storage lost {lossless['drops']} packets" in res["findings"][0]
    # A DCQCN flow that lost a packet never finishes (RoCE's go-back-N is not modelled).
    assert res["unfinished"] > 0
