"""A rolled-back version is rejected, and the head returns to the last good version.

When a rollout ends ``rolled_back`` (a gate failed, or an operator rolled it back), the fabric
runs its ``from_version`` again. In the same transaction (``reject_rolled_back``):

- the rollout's ``to_version`` is marked rejected (when, by which rollout, why);
- if that version is still the head, the head returns to ``from_version``: a new version with
  exactly its content and desired states, authored by ``rollback``, so the tuner's next pass
  builds on what the fabric runs and a plain ``sluice rollout start`` pushes nothing bad;
- both are audited (``reject`` of the ``intent_version``, ``revert`` of the ``intent``).

The head is left where it is when it moved past the rejected version (a later version was
written meanwhile, perhaps by hand: sluice never drops a change nobody saw; the audit says
so), or when there is no good version to return to (the first rollout, ``from_version`` 0).
A version whose rollout later completes with every switch verified is no longer rejected
(``accept_completed``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from controller.store.models import IntentVersion, Rollout
from controller.store.repositories import audit, intents
from controller.types import JsonObject

AUTHOR = "rollback"


def reject_rolled_back(session: Session, rollout: Rollout, at: datetime) -> int | None:
    """Mark ``rollout``'s target rejected and return the head to its origin (see the module
    docstring); the head's new number when it was returned, else None."""
    rejected = intents.get_version(session=session, number=rollout.to_version)
    good = intents.get_version(session=session, number=rollout.from_version)
    if rejected is None or (good is not None and good.content_sha256 == rejected.content_sha256):
        return None  # the rollback changed nothing: nothing was wrong with the target
    why = f"rollout {rollout.id} rolled back" + (f": {rollout.reason}" if rollout.reason else "")
    intents.mark_rejected(
        session=session, number=rejected.number, rollout_id=rollout.id, reason=why, at=at
    )
    intents.lock_intent_writes(session=session)
    head = intents.latest_version(session=session)
    restored = None
    if head is not None and head.number == rejected.number and good is not None:
        restored = _return_head(session, rollout, rejected, good, at).number
    left = (
        None
        if restored is not None
        else "no earlier version to return to"
        if good is None
        else f"the head moved past it (version {head.number if head else 0})"
    )
    _audit(
        session,
        rollout,
        "reject",
        "intent_version",
        str(rejected.number),
        rejected.number,
        None,
        {"rejected_reason": why, "from_version": rollout.from_version, "head": restored}
        | ({} if left is None else {"head_left": left}),
        at,
    )
    return restored


def _return_head(
    session: Session, rollout: Rollout, rejected: IntentVersion, good: IntentVersion, at: datetime
) -> IntentVersion:
    number = rejected.number + 1
    row = intents.insert_version(
        session=session,
        number=number,
        intent=dict(good.intent),
        content_sha256=good.content_sha256,
        author=AUTHOR,
        reason=(
            f"rollout {rollout.id} rolled back: version {rejected.number} rejected, "
            f"the intent returns to version {good.number}"
        ),
        created_at=at,
    )
    desired = intents.desired_states(session=session, version=good.number)
    intents.insert_desired_states(session=session, version=number, configs=desired)
    _audit(session, rollout, "revert", "intent", "intent", number, rejected.intent, good.intent, at)
    return row


def accept_completed(session: Session, rollout: Rollout, at: datetime) -> None:
    """A rollout that completed with every switch verified: its version is good after all."""
    if intents.clear_rejection(session=session, number=rollout.to_version):
        after: JsonObject = {"accepted_by_rollout": rollout.id}
        version = rollout.to_version
        _audit(session, rollout, "accept", "intent_version", str(version), version, None, after, at)


def _audit(
    session: Session,
    rollout: Rollout,
    action: str,
    resource_type: str,
    resource_id: str,
    version: int,
    before: JsonObject | None,
    after: JsonObject | None,
    at: datetime,
) -> None:
    audit.insert_audit(
        session=session,
        request_id=f"rollout-{rollout.id}",
        actor=AUTHOR,
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        version=version,
        before=before,
        after=after,
        at=at,
    )
