"""``sluice tune`` renderers: a proposal document in, lines out."""

from __future__ import annotations

from typing import Any

from controller.cli.tuning import explain_lines, follow_pass, list_rows, summary_lines

EVIDENCE = {
    "rule": "dwrr.weight",
    "source": "src",
    "inputs": {"bulk.tx_bytes_per_s": 3.125e8},
    "outputs": {"weight": 23},
    "bounds": ["max step 25%: 12 limited to 22.5"],
}


def proposal(**extra: Any) -> dict[str, Any]:
    return {
        "id": 4,
        "state": "pending",
        "base_version": 7,
        "new_version": None,
        "diff": [{"path": "service_classes[bulk].scheduling.weight", "before": 30, "after": 23}],
        "changes": [
            {"parameter": "weight/bulk", "current": 30, "proposed": 23, "held": None,
             "evidence": EVIDENCE}
        ],
        "held": [],
        "window_start": "t0",
        "window_end": "t1",
        "created_at": "t2",
    } | extra  # fmt: skip


def test_summary_lines() -> None:
    assert summary_lines(proposal()) == [
        "proposal 4: pending (on version 7)",
        "  service_classes[bulk].scheduling.weight: 30 -> 23",
    ]
    assert summary_lines(proposal(diff=[], state="no_change"))[1] == "  no change to the intent"


def test_explain_lines_show_rule_inputs_outputs_and_bounds() -> None:
    lines = explain_lines(proposal())
    assert lines[2:] == [
        "window: t0 .. t1",
        "change weight/bulk: 30 -> 23",
        "  rule: dwrr.weight (src)",
        "  inputs: bulk.tx_bytes_per_s=312500000.0",
        "  outputs: weight=23",
        "  bound: max step 25%: 12 limited to 22.5",
    ]


def test_a_verdict_on_no_one_value_shows_no_values() -> None:
    # The search's record when the twin does not fit: held, with why, and its evidence.
    refused = {
        "parameter": "search/twin",
        "current": None,
        "proposed": None,
        "held": "the twin does not reproduce the fabric: ...",
        "evidence": {**EVIDENCE, "rule": "search.twin", "bounds": []},
    }
    lines = explain_lines(proposal(changes=[], held=[refused], state="no_change"))
    assert lines[3] == "held search/twin (held: the twin does not reproduce the fabric: ...)"
    assert lines[4] == "  rule: search.twin (src)"


def test_list_rows() -> None:
    assert list_rows([proposal(new_version=8)]) == [("4", "pending", "7", "8", "weight/bulk", "t2")]


def test_a_searching_pass_is_followed_with_a_line_per_state() -> None:
    queued = proposal(state="queued", started_at=None, reason="tuner: queued")
    running = proposal(state="running", started_at="t3", reason="tuner: searching since t3")
    done = proposal(state="no_change", started_at="t3", reason="tuner: no change")
    answers = iter([queued, running, running, done])
    lines: list[str] = []
    slept: list[float] = []
    found = follow_pass(lambda: next(answers), queued, lines.append, slept.append, 2.0)
    assert found is done
    assert lines == [
        "proposal 4: queued: tuner: queued",  # as the API answered, before any wait
        "proposal 4: running: tuner: searching since t3",
        "proposal 4: no_change: tuner: no change",
    ]
    assert slept == [2.0] * 4
