"""The pure parts of ``sluice check roce``: its answer as link rows, finding rows and a
summary, from what the checker makes of a fabric with one end altered."""

from __future__ import annotations

from typing import Any

from controller.cli.checks import finding_rows, findings_of, link_rows, summary_line
from tests.unit.sonic.roce_fabric import checked, discovered, on


def answer(alter: Any = None) -> dict[str, Any]:
    return {"discovery_id": 7, **checked(discovered(alter)).as_json()}


def test_a_ready_fabric_is_four_ok_links_and_no_finding() -> None:
    ready = answer()
    assert [row[3] for row in link_rows(ready)] == ["ok"] * 4
    assert findings_of(ready) == []
    assert summary_line(ready) == "4 links, 10 ports with PFC: ready for RoCE (discovery 7)"


def test_an_altered_end_is_one_row_on_its_link_and_one_finding() -> None:
    altered = answer(on("spine2", "PORT", "Ethernet4", mtu="1500"))
    rows = {(a, b): result for a, b, _, result in link_rows(altered)}
    assert rows[("leaf2:Ethernet52", "spine2:Ethernet4")] == "1 finding"
    assert list(rows.values()).count("ok") == 3
    assert finding_rows(findings_of(altered)) == [
        ("mtu", "spine2:Ethernet4", "PORT|Ethernet4.mtu", "9100", "1500")
    ]
    assert summary_line(altered).startswith("4 links, 10 ports with PFC: 1 finding ")
