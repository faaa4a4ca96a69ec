"""The known differences between vsonic and SONiC's own gNMI server: one list, read by the
differential tests and rendered into docs/vsonic.md, so the two cannot drift apart.

``vsonic_differences.yaml`` beside this file lists, per probe of the differential suite
(``test_vsonic_diff_*.py``), the parts of the answer that differ (``gnmi_diff.Answer`` keys),
what each server answers and why vsonic keeps its answer. ``expect`` fails a probe whose
differing parts are not exactly the listed ones: a new difference, or a listed one that is
gone (then the entry is stale and must be removed).

``python -m tests.realsonic.differences`` rewrites the doc's section from the list;
``tests/unit/test_vsonic_differences.py`` checks that the doc holds what it would write.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.realsonic.gnmi_diff import differing, report

HERE = Path(__file__).resolve().parent
LIST = HERE / "vsonic_differences.yaml"
DOC = HERE.parents[1] / "docs" / "vsonic.md"
BEGIN = "<!-- known-differences: generated from tests/realsonic/vsonic_differences.yaml -->"
END = "<!-- known-differences: end -->"


@dataclass(frozen=True)
class Difference:
    probes: tuple[str, ...]
    parts: frozenset[str]
    sonic: str
    vsonic: str
    why: str


@cache
def entries() -> tuple[Difference, ...]:
    """The list as written: each entry one difference, shared by the probes it names."""
    raw: list[dict[str, Any]] = yaml.safe_load(LIST.read_text())
    found = []
    for entry in raw:
        probes = tuple(str(p) for p in entry["probes"])
        parts = frozenset(str(p) for p in entry["parts"])
        if not probes or not parts:
            raise ValueError(f"{LIST.name}: an entry names no probe or no differing part")
        found.append(
            Difference(probes, parts, str(entry["sonic"]), str(entry["vsonic"]), str(entry["why"]))
        )
    return tuple(found)


@cache
def known() -> dict[str, Difference]:
    """The entry of each probe; a probe is listed once."""
    by_probe: dict[str, Difference] = {}
    for entry in entries():
        for probe in entry.probes:
            if probe in by_probe:
                raise ValueError(f"{LIST.name}: probe {probe!r} is listed twice")
            by_probe[probe] = entry
    return by_probe


def expect(probe: str, sonic: Mapping[str, Any], vsonic: Mapping[str, Any]) -> None:
    """The two answers are equal, or differ in exactly the parts the list names for ``probe``."""
    found = differing(sonic, vsonic)
    listed = known().get(probe)
    allowed = listed.parts if listed is not None else frozenset()
    if found == allowed:
        return
    unexpected = sorted(found - allowed)
    gone = sorted(allowed - found)
    lines = []
    if unexpected:
        lines.append(f"differ, and not listed in {LIST.name}: {unexpected}")
    if gone:
        lines.append(f"listed in {LIST.name} as differing, but equal now (remove it): {gone}")

    raise AssertionError("\n".join([*lines, report(probe, sonic, vsonic)]))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The doc's section: a table row per known difference."""
    rows = [
        "| probes | SONiC's server | vsonic | why vsonic keeps it |",
        "|---|---|---|---|",
    ]
    for diff in sorted(entries(), key=lambda d: d.probes):
        probes = ", ".join(f"`{p}`" for p in diff.probes)
        cells = [probes, diff.sonic, diff.vsonic, diff.why]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join([BEGIN, *rows, END])


def doc_section(text: str) -> str | None:
    """The generated section as it stands in the doc, markers included."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(END)]


def write_doc(doc: Path = DOC) -> None:
    text = doc.read_text()
    current = doc_section(text)
    if current is None:
        raise SystemExit(f"{doc}: no section between {BEGIN!r} and {END!r}")
    doc.write_text(text.replace(current, render()))


if __name__ == "__main__":
    write_doc(Path(sys.argv[1]) if len(sys.argv) > 1 else DOC)
