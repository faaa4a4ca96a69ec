"""Logins in the intent (issue 25, "Credentials"): a user name and a secret reference per
switch, or a named login shared by a group of switches, instead of one user for all."""

from __future__ import annotations

import pytest

from controller.intent.loader import dump_intent, parse_intent
from controller.intent.models import Login

from .helpers import assert_only_problem, problems_of
from .intents import intent_data

GROUP = {"name": "leafs", "username": "sluice-ops", "secret_ref": "vault:secret/fabric#leafs"}


def test_a_switch_logs_in_as_its_own_user_or_the_controllers_default() -> None:
    data = intent_data()
    data["switches"][0]["username"] = "leaf1-ops"
    intent = parse_intent(data)
    assert intent.switches[0].login("admin") == Login("leaf1-ops", "env:SLUICE_GNMI_PASSWORD")
    assert intent.switches[1].login("admin") == Login("admin", "env:SLUICE_GNMI_PASSWORD")


def test_switches_of_a_group_log_in_as_the_groups_login_and_it_survives_a_round_trip() -> None:
    data = intent_data()
    data["credentials"] = [GROUP]
    for switch in data["switches"]:
        del switch["credential_ref"]
        switch["credential"] = "leafs"
    intent = parse_intent(data)
    expected = Login("sluice-ops", "vault:secret/fabric#leafs")
    assert [s.login("admin") for s in intent.switches] == [expected, expected]
    # Stored as written (the group by name), and read back to the same logins.
    stored = dump_intent(intent)
    assert stored["switches"][0]["credential"] == "leafs"  # type: ignore[index]
    assert stored["switches"][0]["credential_ref"] is None  # type: ignore[index]
    again = parse_intent(stored)
    assert again == intent
    assert [s.login("admin") for s in again.switches] == [expected, expected]


def test_a_switch_naming_an_unknown_group_is_refused_with_the_groups_there_are() -> None:
    data = intent_data()
    data["credentials"] = [GROUP]
    del data["switches"][1]["credential_ref"]
    data["switches"][1]["credential"] = "spines"
    assert_only_problem(
        problems_of(data), "switches[1].credential", "no credential 'spines' in credentials"
    )


def test_a_switch_gives_a_group_or_its_own_login_never_both_nor_neither() -> None:
    data = intent_data()
    data["credentials"] = [GROUP]
    data["switches"][0]["credential"] = "leafs"
    assert_only_problem(problems_of(data), "switches[0]", "not both")
    data = intent_data()
    del data["switches"][0]["credential_ref"]
    assert_only_problem(problems_of(data), "switches[0]", "needs credential_ref")


def test_two_groups_of_one_name_are_refused() -> None:
    data = intent_data()
    data["credentials"] = [GROUP, {**GROUP, "username": "other"}]
    assert_only_problem(problems_of(data), "credentials[1].name", "duplicate name 'leafs'")


REFUSED_REFERENCES = {
    "a password": "hunter2-Pa55",
    "an unknown scheme": "keyring:gnmi",
    "vault without a path": "vault:gnmi",
    "vault climbing out": "vault:secret/../other#pw",
}


@pytest.mark.parametrize("ref", REFUSED_REFERENCES.values(), ids=REFUSED_REFERENCES.keys())
def test_a_reference_outside_the_schemes_is_refused_naming_the_schemes_not_the_value(
    ref: str,
) -> None:
    data = intent_data()
    data["credentials"] = [{**GROUP, "secret_ref": ref}]
    problems = problems_of(data)
    assert [p.path for p in problems] == ["credentials[0].secret_ref"]
    assert "vault:" in problems[0].reason
    assert ref.split(":")[-1] not in problems[0].reason
