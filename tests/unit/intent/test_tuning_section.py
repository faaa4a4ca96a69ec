"""The intent's tuning policy and DWRR weight ranges (controller/intent/models.py)."""

from __future__ import annotations

import pytest

from controller.errors import IntentInvalid
from controller.intent.loader import parse_intent
from controller.intent.models import Tuning, TuningMode

from .intents import intent_data


def test_without_a_tuning_section_the_tuner_is_off_with_the_defaults() -> None:
    intent = parse_intent(intent_data())
    assert intent.fabric.tuning == Tuning()
    assert intent.fabric.tuning.mode is TuningMode.OFF


def test_a_weight_range_around_the_weight_is_accepted() -> None:
    data = intent_data()
    data["service_classes"][2]["scheduling"] |= {"weight_min": 20, "weight_max": 80}
    data["fabric"]["tuning"] = {"mode": "propose", "min_interval_s": 600}
    intent = parse_intent(data)
    assert intent.service_classes[2].scheduling.weight_min == 20
    assert intent.fabric.tuning.mode is TuningMode.PROPOSE


@pytest.mark.parametrize(
    ("scheduling", "message"),
    [
        ({"type": "DWRR", "weight": 60, "weight_min": 70}, "weight_min <= weight"),
        ({"type": "DWRR", "weight": 60, "weight_max": 50}, "weight_min <= weight"),
        ({"type": "STRICT", "weight_min": 10}, "need a weight"),
        ({"type": "DWRR", "weight": 60, "weight_min": 0}, "greater than 0"),
    ],
)
def test_a_weight_range_that_excludes_the_weight_is_refused(
    scheduling: dict[str, object], message: str
) -> None:
    data = intent_data()
    data["service_classes"][2]["scheduling"] = scheduling
    with pytest.raises(IntentInvalid, match=message):
        parse_intent(data)


def test_a_lambda_floor_above_its_ceiling_is_refused() -> None:
    data = intent_data()
    data["fabric"]["tuning"] = {"ecn_lambda_min": 3.0, "ecn_lambda_max": 2.0}
    with pytest.raises(IntentInvalid, match="ecn_lambda_min"):
        parse_intent(data)


def test_an_unknown_mode_is_refused() -> None:
    data = intent_data()
    data["fabric"]["tuning"] = {"mode": "sometimes"}
    with pytest.raises(IntentInvalid, match="mode"):
        parse_intent(data)
