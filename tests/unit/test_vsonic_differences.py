"""The list of known differences between vsonic and SONiC's own gNMI server
(tests/realsonic/vsonic_differences.yaml) is what docs/vsonic.md shows, and names only probes
the differential suite sends, so neither can drift from what the suite checks."""

from __future__ import annotations

import re

import pytest

from tests.realsonic.differences import DOC, HERE, doc_section, entries, expect, known, render


def test_the_doc_shows_the_list_as_it_is_now() -> None:
    shown = doc_section(DOC.read_text())
    assert shown is not None, "docs/vsonic.md lost its known-differences markers"
    assert shown == render(), (
        "docs/vsonic.md is out of date: run `uv run python -m tests.realsonic.differences`"
    )


def test_every_listed_probe_is_one_the_suite_sends() -> None:
    suite = "".join(p.read_text() for p in sorted(HERE.glob("test_vsonic_diff_*.py")))
    sent = set(re.findall(r'"((?:get|set|sub|gcu|capabilities)[-a-z]*)"', suite))
    listed = {probe for entry in entries() for probe in entry.probes}
    assert listed, "the list is empty"
    assert listed <= sent, f"listed but never sent: {sorted(listed - sent)}"
    assert len(known()) == len(listed)


def test_a_listed_difference_that_is_gone_fails_and_so_does_an_unlisted_one() -> None:
    probe, entry = next(iter(known().items()))
    same = dict.fromkeys(entry.parts, "same")
    differing = dict.fromkeys(entry.parts, "vsonic")
    expect(probe, same, differing)  # differs in exactly the listed parts: passes
    with pytest.raises(AssertionError, match=re.escape("equal now (remove it)")):
        expect(probe, same, same)
    with pytest.raises(AssertionError, match="differ, and not listed"):
        expect(probe, {**same, "extra": 1}, {**differing, "extra": 2})
