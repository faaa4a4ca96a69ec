"""Merging an inventory's switches into an intent document (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.cli.inventory import inventory_switches, merge_switches
from controller.errors import IntentInvalid


def test_named_switches_are_replaced_in_place_and_new_ones_appended() -> None:
    intent: dict[str, Any] = {
        "fabric": {"base_rtt_us": 40},
        "switches": [{"name": "a", "gnmi": {"port": 1}}, {"name": "b", "gnmi": {"port": 2}}],
        "hosts": [{"name": "h"}],
    }
    merged, replaced, added = merge_switches(
        intent, [{"name": "c", "gnmi": {"port": 3}}, {"name": "a", "gnmi": {"port": 9}}]
    )
    assert (replaced, added) == (1, 1)
    assert merged["switches"] == [
        {"name": "a", "gnmi": {"port": 9}},
        {"name": "b", "gnmi": {"port": 2}},
        {"name": "c", "gnmi": {"port": 3}},
    ]
    # Everything else is the intent's own, and the input is not changed.
    assert merged["hosts"] == intent["hosts"]
    assert merged["fabric"] == intent["fabric"]
    assert intent["switches"][0]["gnmi"]["port"] == 1


def test_an_intent_without_switches_gets_them_all() -> None:
    merged, replaced, added = merge_switches({"fabric": {}}, [{"name": "a"}])
    assert (merged["switches"], replaced, added) == ([{"name": "a"}], 0, 1)


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"fleet": {}}, "switches"),
        ({"switches": []}, "switches"),
        ({"switches": [{}]}, "switches[0]"),
    ],
)
def test_an_inventory_without_named_switches_is_refused(
    document: dict[str, object], path: str
) -> None:
    with pytest.raises(IntentInvalid) as refused:
        inventory_switches(document)
    assert [p.path for p in refused.value.problems] == [path]
