"""The intent's optional ``fabric.health`` thresholds: defaults, ranges and their order."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from controller.intent.loader import parse_intent
from controller.intent.models import Health

from .helpers import assert_only_problem, problems_of
from .intents import intent_data


def test_an_intent_without_a_health_section_gets_the_defaults() -> None:
    intent = parse_intent(intent_data())
    assert intent.fabric.health == Health()
    assert intent.fabric.health.mark_fraction_warn == 0.5


def test_a_health_section_overrides_only_what_it_names() -> None:
    data = intent_data()
    data["fabric"]["health"] = {"drops_per_s_warn": 10, "drops_per_s_critical": 50}
    health = parse_intent(data).fabric.health
    assert (health.drops_per_s_warn, health.drops_per_s_critical) == (10, 50)
    assert health.collector_lag_s_warn == Health().collector_lag_s_warn


def test_a_critical_threshold_below_its_warn_threshold_is_refused() -> None:
    data = intent_data()
    data["fabric"]["health"] = {"occupancy_pct_warn": 80, "occupancy_pct_critical": 60}
    assert_only_problem(
        problems_of(data),
        "fabric.health.occupancy_pct_critical",
        "must be at least fabric.health.occupancy_pct_warn (80.0)",
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("mark_fraction_warn", 1.5), ("occupancy_pct_critical", 120), ("collector_lag_s_warn", 0)],
)
def test_out_of_range_health_thresholds_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValidationError):
        Health.model_validate({field: value})


def test_unknown_health_fields_are_refused() -> None:
    with pytest.raises(ValidationError):
        Health.model_validate({"drops_warn": 1})
