"""Changes into the next intent: what maps where, and each class's one lambda."""

from __future__ import annotations

import pytest

from controller.errors import IntentInvalid
from controller.intent.loader import parse_intent
from controller.tuning.apply import apply_changes, lambda_from, reason_for
from controller.tuning.evidence import Change, Evidence
from tests.unit.intent.intents import intent_data


def change(parameter: str, current: object, proposed: object, **inputs: object) -> Change:
    held = None if current != proposed else "no change"
    evidence = Evidence("rule", "source", dict(inputs), {})  # type: ignore[arg-type]
    return Change(parameter, current, proposed, evidence, held=held)  # type: ignore[arg-type]


def test_weights_algorithm_qjump_and_pias_land_in_the_intent() -> None:
    intent = parse_intent(intent_data())
    result = apply_changes(
        intent,
        [
            change("weight/storage", 60, 70, tx=1.0),
            change("algorithm/bulk", "mqecn", "dynaq"),
            change("algorithm/storage", "mqecn", "dynaq"),
            change("qjump/hosts", 8, 6),
            change("pias/rpc", (4_517_081,), (610_575,)),
        ],
    )
    classes = {c.name: c for c in result.intent.service_classes}
    assert classes["storage"].scheduling.weight == 70
    assert classes["bulk"].ecn.value == classes["storage"].ecn.value == "dynaq"
    assert result.intent.fabric.qjump is not None
    assert result.intent.fabric.qjump.hosts == 6
    rpc = classes["rpc"].pias
    assert rpc is not None
    assert rpc.thresholds_bytes == (610_575,)  # the hosts run these (controller/hosts)
    assert result.not_expressible == ()
    assert len(result.applied) == 5


def test_pias_thresholds_that_do_not_fit_the_stages_are_refused() -> None:
    intent = parse_intent(intent_data())
    # rpc has one demotion, so one threshold; two would fail validation of the new intent.
    with pytest.raises(IntentInvalid, match="one per demotion"):
        apply_changes(intent, [change("pias/rpc", (4_517_081,), (10_000, 20_000))])


def test_one_class_alone_cannot_leave_the_fabrics_dynamic_algorithm() -> None:
    # bulk to DynaQ while storage stays on MQ-ECN: the agent runs one dynamic algorithm.
    intent = parse_intent(intent_data())
    result = apply_changes(intent, [change("algorithm/bulk", "mqecn", "dynaq")])
    assert result.intent == intent
    assert [c.parameter for c in result.not_expressible] == ["algorithm/bulk"]


def test_a_class_lambda_is_the_largest_any_of_its_groups_with_evidence_asks_for() -> None:
    # storage/25 wants 1.25, storage/100 is at its target (held: asks for the current 1.0),
    # storage/40 has no marking (no say): 1.25.
    lam, moved = lambda_from(
        1.0,
        [
            change("ecn_lambda/storage/25gbps", 1.0, 1.25),
            change("ecn_lambda/storage/100gbps", 1.0, 1.0),
            change("ecn_lambda/storage/40gbps", 1.0, 1.0, opinion=False),
        ],
    )
    assert lam == 1.25
    assert [c.parameter for c in moved] == ["ecn_lambda/storage/25gbps"]


def test_lambda_is_lowered_only_when_every_group_with_evidence_wants_lower() -> None:
    # storage/25 wants 0.8 but storage/100 holds at 1.0: stays 1.0.
    lam, moved = lambda_from(
        1.0,
        [
            change("ecn_lambda/storage/25gbps", 1.0, 0.8),
            change("ecn_lambda/storage/100gbps", 1.0, 1.0),
        ],
    )
    assert (lam, moved) == (1.0, [])
    # Both lower (0.8 and 0.9): the larger, 0.9.
    lam, _ = lambda_from(
        1.0,
        [
            change("ecn_lambda/storage/25gbps", 1.0, 0.8),
            change("ecn_lambda/storage/100gbps", 1.0, 0.9),
        ],
    )
    assert lam == 0.9


def test_each_class_gets_its_own_lambda_and_the_fabrics_stays() -> None:
    # storage asks 1.25, bulk asks 0.8 (a standing queue) and nothing holds either: each class
    # gets its own, one lowered while the other is raised; the fabric's 1.0 is untouched and
    # rpc (no ask) keeps running on it.
    intent = parse_intent(intent_data())
    result = apply_changes(
        intent,
        [
            change("ecn_lambda/storage/25gbps", 1.0, 1.25),
            change("ecn_lambda/bulk/25gbps", 1.0, 0.8),
        ],
    )
    classes = {c.name: c for c in result.intent.service_classes}
    assert (classes["storage"].ecn_lambda, classes["bulk"].ecn_lambda) == (1.25, 0.8)
    assert classes["rpc"].ecn_lambda is None
    assert result.intent.fabric.ecn_lambda == 1.0
    assert len(result.applied) == 2
    # The next pass starts from the class's own lambda: 1.25 asked again moves nothing.
    again = apply_changes(result.intent, [change("ecn_lambda/storage/25gbps", 1.25, 1.25)])
    assert again.intent == result.intent
    assert again.applied == ()


def test_the_reason_cites_the_metric_values() -> None:
    text = reason_for([change("weight/storage", 60, 70, tx_bytes_per_s=1.5e9, mark_fraction=0.1)])
    assert text == (
        "tuner: weight/storage: 60 -> 70 (rule; tx_bytes_per_s=1500000000.0, mark_fraction=0.1)"
    )


def test_the_intent_diff_names_entries_by_name() -> None:
    from controller.tuning.apply import intent_diff

    before = {"fabric": {"ecn_lambda": 1.0}, "service_classes": [{"name": "a", "w": 1}]}
    after = {"fabric": {"ecn_lambda": 1.25}, "service_classes": [{"name": "a", "w": 2}]}
    assert intent_diff(before, after) == [
        {"path": "fabric.ecn_lambda", "before": 1.0, "after": 1.25},
        {"path": "service_classes[a].w", "before": 1, "after": 2},
    ]
