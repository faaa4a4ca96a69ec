"""A lossless class in the twin over the real netsim binary (``target/debug/netsim``): the
example intent with its storage class lossless on priority 3, 300 flows, seconds.

What the twin runs is what sluice compiles, egress buffer profile included: a lossless queue
gets sluice's lossy ``BUFFER_QUEUE`` profile (docs/lossless.md, "Not done yet"), so where the
egress queue's dynamic limit is reached before its senders' ingress groups pause, the twin
loses lossless packets and says so. Seed 1 keeps below it; seed 2 does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.intent.loader import load_intent_file
from controller.intent.models import Intent
from controller.settings import TwinSettings
from controller.twin.runner import run_twin
from controller.twin.translate import Request
from tests.support.lossless import with_lossless_storage

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


@pytest.fixture(scope="module")
def intent() -> Intent:
    return with_lossless_storage(load_intent_file(EXAMPLE))


def _run(intent: Intent, seed: int) -> dict[str, Any]:
    return run_twin(
        intent, Request(flows=300, load=0.6, seed=seed), TwinSettings().netsim, timeout_s=120
    )


def test_the_lossless_class_pauses_marks_and_loses_nothing(intent: Intent) -> None:
    res = _run(intent, seed=1)
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
    res = _run(intent, seed=2)
    lossless = res["lossless"]
    assert lossless["drops"] > 0
    # Most are lost at the egress queue (the lossy profile), not past a headroom.
    assert lossless["drops"] > lossless["headroom_overflows"]
    assert len(res["findings"]) == 1
    assert f"lossless class storage lost {lossless['drops']} packets" in res["findings"][0]
    # A DCQCN flow that lost a packet never finishes (RoCE's go-back-N is not modelled).
    assert res["unfinished"] > 0
