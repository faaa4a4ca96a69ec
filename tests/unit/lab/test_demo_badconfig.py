"""The bad-config step's check that the rollback returned the head by itself (the step runs
in the demo, scripts/demo.sh)."""

from __future__ import annotations

from typing import Any

import pytest

from lab.demo_badconfig import BAD_LAMBDA, check_head_restored
from lab.demo_common import DemoError

BAD = {"number": 7, "author": "admin", "reason": "demo: ECN thresholds far too low"}
REVERT = {
    "number": 8,
    "author": "rollback",
    "reason": "rollout 5 rolled back: version 7 rejected, the intent returns to version 6",
}


def versions(**bad: Any) -> list[dict[str, Any]]:
    return [REVERT, {**BAD, "rejected_by_rollout": 5, **bad}, {"number": 6, "author": "tuner"}]


def test_the_head_written_back_by_the_rollback_passes() -> None:
    check_head_restored(versions(), {"fabric": {"ecn_lambda": 1.0}}, 5)


def test_a_head_the_operator_wrote_or_a_bad_lambda_or_no_rejection_fails() -> None:
    good = {"fabric": {"ecn_lambda": 1.0}}
    with pytest.raises(DemoError, match="not the rollback's"):
        check_head_restored(versions()[1:], good, 5)  # the bad version is still the head
    with pytest.raises(DemoError, match="not the rollback's"):
        check_head_restored(versions(), good, 4)  # another rollout's revert
    with pytest.raises(DemoError, match="rejected by rollout 5"):
        check_head_restored(versions(rejected_by_rollout=None), good, 5)
    with pytest.raises(DemoError, match="still has ecn_lambda"):
        check_head_restored(versions(), {"fabric": {"ecn_lambda": BAD_LAMBDA}}, 5)
