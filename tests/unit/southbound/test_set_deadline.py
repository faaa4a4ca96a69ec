"""A Set's deadline: the switch's own (its platform's GCU time, from the intent), else the
policy's, and never the read deadline."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from controller.intent.loader import load_intent_file
from controller.intent.models import GnmiEndpoint
from controller.southbound.gnmi import CallPolicy, SessionPool, target_for_switch

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"


def _secret(ref: str) -> SecretStr:
    return SecretStr("x")


def test_the_intent_sets_a_switch_set_deadline_and_the_policy_fills_in_the_rest() -> None:
    intent = load_intent_file(EXAMPLE)
    slow, other = intent.switches[0], intent.switches[1]
    slow = slow.model_copy(
        update={"gnmi": GnmiEndpoint(address="127.0.0.1", port=50051, set_deadline_s=300)}
    )
    policy = CallPolicy(deadline_s=10, set_deadline_s=60)
    with SessionPool(policy=policy) as pool:
        assert pool.session(target_for_switch(slow, _secret)).set_deadline_s == 300
        assert pool.session(target_for_switch(other, _secret)).set_deadline_s == 60


@pytest.mark.parametrize("seconds", [0, -1, 3601])
def test_a_set_deadline_out_of_range_is_refused(seconds: float) -> None:
    with pytest.raises(ValidationError, match="set_deadline_s"):
        GnmiEndpoint(address="127.0.0.1", port=50051, set_deadline_s=seconds)
