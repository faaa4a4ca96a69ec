"""A rolled-back version is rejected and the head returns to the last good version
(controller/store/rejections.py), over the four vsonic switches and a real PostgreSQL: the
revert is a new version with the good one's content and desired states, both steps audited; a
plain start then pushes what the fabric runs (nothing to write), never the rejected version;
a first rollout that rolls back has nothing to return to, so the head stays rejected and a
plain start refuses it; a rejected version pushed by name and verified everywhere is accepted
again."""

from __future__ import annotations

import pytest

from controller.errors import Conflict
from controller.services.audit import AuditService
from controller.services.rollouts import RolloutPolicy

from .conftest import OPERATOR, Controller, full_dump
from .test_gates import ALL, holds, second_version


def roll(controller: Controller, version: int | None = None) -> int:
    """Start a rollout (of the head, or of ``version``) and run it to its end. Ports may flap:
    the first rollout binds sluice's queues on switches that ran nothing of it."""
    policy = RolloutPolicy(version, batch_size=4, allow_port_flaps=True)
    info = controller.rollouts.start(policy, actor=OPERATOR)
    controller.runner().run_until_idle()
    return info.id


def test_a_rolled_back_version_is_rejected_and_the_head_returns_to_the_good_one(
    controller: Controller,
) -> None:
    controller.store_intent(controller.fabric.intent)
    roll(controller)
    controller.store_intent(second_version(controller.fabric.intent), reason="weight 60")
    second = roll(controller)
    assert controller.rollouts.get(second).state == "completed"
    controller.rollouts.rollback(second, actor=OPERATOR)
    controller.runner().run_until_idle()
    assert controller.rollouts.get(second).state == "rolled_back"
    assert all(holds(controller, name, 1) for name in ALL)

    intents = controller.intents
    rejected = intents.version(2).info
    assert (rejected.rejected_by_rollout, rejected.rejected_at is not None) == (second, True)
    assert rejected.rejected_reason == f"rollout {second} rolled back"
    head = intents.current()
    assert head.info.number == 3
    assert head.info.author == "rollback"
    assert head.info.reason == (
        f"rollout {second} rolled back: version 2 rejected, the intent returns to version 1"
    )
    assert (head.data, head.info.content_sha256) == (
        intents.version(1).data,
        intents.version(1).info.content_sha256,
    )
    assert head.info.rejected_at is None
    entries = AuditService(controller.sessions).list(limit=5, offset=0).items
    found = {(e.action, e.resource_type, e.resource_id, e.version, e.actor) for e in entries}
    assert ("reject", "intent_version", "2", 2, "rollback") in found
    assert ("revert", "intent", "intent", 3, "rollback") in found

    # A plain start now pushes the head, what the fabric runs: nothing to write anywhere.
    before = full_dump(controller.fabric)
    third = controller.rollouts.get(roll(controller))
    assert (third.from_version, third.to_version, third.state) == (1, 3, "completed")
    assert full_dump(controller.fabric) == before


def test_a_first_rollout_that_rolls_back_leaves_a_rejected_head_a_plain_start_refuses(
    controller: Controller,
) -> None:
    controller.store_intent(controller.fabric.intent)
    first_rollout = RolloutPolicy(None, batch_size=4, allow_port_flaps=True)
    first = controller.rollouts.start(first_rollout, actor=OPERATOR)
    controller.rollouts.rollback(first.id, actor=OPERATOR)  # before it reached any switch
    controller.runner().run_until_idle()
    assert controller.rollouts.get(first.id).state == "rolled_back"
    assert controller.intents.head() == 1  # nothing earlier to return to
    assert controller.intents.version(1).info.rejected_by_rollout == first.id
    entries = AuditService(controller.sessions).list(limit=3, offset=0).items
    reject = next(e for e in entries if e.action == "reject")
    assert (reject.after or {})["head_left"] == "no earlier version to return to"
    with pytest.raises(Conflict, match="intent version 1 was rejected"):
        controller.rollouts.start(first_rollout, actor=OPERATOR)
    # Named, it is pushed; verified everywhere, it is good after all.
    pushed = roll(controller, 1)
    assert controller.rollouts.get(pushed).state == "completed"
    assert controller.intents.version(1).info.rejected_at is None
    entries = AuditService(controller.sessions).list(limit=3, offset=0).items
    assert any(e.action == "accept" and e.resource_id == "1" for e in entries)
