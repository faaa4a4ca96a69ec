"""The files generated from sonic-sluice-agent.yang are what the generator makes of it now.

Edit the YANG model, run ``uv run python scripts/gen_sluice_yang.py``, commit both.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from functools import partial
from pathlib import Path
from types import ModuleType

import pytest

GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "gen_sluice_yang.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_sluice_yang", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


RENDERED: dict[Path, str] = _generator().render()


@pytest.mark.parametrize("path", sorted(RENDERED), ids=lambda p: p.name)
def test_generated_file_is_up_to_date(path: Path) -> None:
    assert path.read_text() == RENDERED[path], f"{path}: run scripts/gen_sluice_yang.py"


def test_the_generator_reads_every_leaf_of_the_model() -> None:
    tables = {t.name: t for t in _generator().read_tables()}
    assert sorted(tables) == ["SLUICE_AGENT", "SLUICE_AGENT_QUEUE"]
    assert [k.name for k in tables["SLUICE_AGENT_QUEUE"].keys] == ["ifname", "qindex"]
    assert len(tables["SLUICE_AGENT"].leaves) == 9  # the nine fields of SLUICE_AGENT|global
    assert len(tables["SLUICE_AGENT_QUEUE"].leaves) == 10  # with the per-class lambda


def test_the_generator_reads_every_must_of_the_model() -> None:
    model = (GENERATOR.parents[1] / "agents/qos-agent/yang/sonic-sluice-agent.yang").read_text()
    messages = re.findall(r'error-message "([^"]+)"', model)
    read = [must for table in _generator().read_tables() for must in table.musts]
    assert {must.message for must in read} == set(messages)
    # static_bytes' one must is two comparisons: each reader applies both.
    assert len(read) == len(messages) + 1


@pytest.mark.parametrize(
    ("where", "condition"),
    [("entry", "count(../x) > 1"), ("leaf", "../managed != 'true'"), ("leaf", "current() > ../a")],
)
def test_the_generator_stops_at_a_must_it_cannot_translate(where: str, condition: str) -> None:
    generator = _generator()
    read = generator._entry_must if where == "entry" else partial(generator._leaf_musts, "x")
    with pytest.raises(ValueError, match="a form the generator does not know"):
        read(condition, "why", {})
