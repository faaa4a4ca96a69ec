"""Assertions shared by the policy tests."""

from __future__ import annotations

import pytest

from controller.errors import FieldProblem, IntentInvalid
from controller.intent.loader import load_intent_yaml, parse_intent


def problems_of(data: object) -> list[FieldProblem]:
    with pytest.raises(IntentInvalid) as caught:
        parse_intent(data)
    return caught.value.problems


def yaml_problems_of(text: str) -> list[FieldProblem]:
    with pytest.raises(IntentInvalid) as caught:
        load_intent_yaml(text)
    return caught.value.problems


def assert_only_problem(problems: list[FieldProblem], path: str, fragment: str) -> None:
    """Exactly one problem, at ``path``, whose reason contains ``fragment``."""
    assert [p.path for p in problems] == [path], problems
    assert fragment in problems[0].reason, problems[0]


def assert_has_problem(problems: list[FieldProblem], path: str, fragment: str) -> None:
    matching = [p for p in problems if p.path == path]
    assert matching, f"no problem at {path}: {problems}"
    assert any(fragment in p.reason for p in matching), matching
