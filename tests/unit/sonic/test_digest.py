"""Table digests: the digest diff gives the full diff's plan, and a digest follows its table."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.intent.models import Intent, Port
from controller.sonic.compile import compile_fleet, compile_fleet_digested, compile_switch
from controller.sonic.diff import diff_fleet, plan_switch
from controller.sonic.digest import (
    EMPTY_TABLE,
    AnswerDigests,
    DigestPair,
    changed_tables,
    table_digests,
    table_json_digest,
)
from controller.sonic.model import EntryKey, Fields, SwitchConfig
from tests.unit.sonic import intents as t
from tests.unit.sonic.test_diff_properties import desired_config, observed_config

CLASSES = (t.VOICE, t.BULK, t.STORAGE_MQECN, t.RPC_PIAS)
TWO_PORTS = (("Ethernet0", 10), ("Ethernet4", 25))


def compiled() -> SwitchConfig:
    intent = t.intent(*CLASSES, switches=(t.switch(ports=TWO_PORTS),))
    return compile_switch(intent, intent.switches[0])


def copy(config: SwitchConfig) -> SwitchConfig:
    return {entry_key: dict(fields) for entry_key, fields in config.items()}


def both_paths(desired: SwitchConfig, observed: SwitchConfig, owned: SwitchConfig) -> None:
    """The digest diff's plan is the full diff's, op for op and in the same order."""
    digests = (table_digests(desired), table_digests(observed))
    full = plan_switch("sw", desired, observed, owned)
    assert plan_switch("sw", desired, observed, owned, digests) == full


def test_identical_switch_needs_no_walk_and_no_op() -> None:
    desired = compiled()
    observed = copy(desired)
    assert changed_tables(table_digests(desired), table_digests(observed)) == frozenset()
    both_paths(desired, observed, desired)
    assert plan_switch("sw", desired, observed, desired).ops == ()


def test_one_changed_entry_is_planned_as_by_the_full_diff() -> None:
    desired = compiled()
    observed = copy(desired)
    observed[("SCHEDULER", "SLUICE_SCHED_1")]["weight"] = "99"
    assert changed_tables(table_digests(desired), table_digests(observed)) == {"SCHEDULER"}
    both_paths(desired, observed, desired)
    (op,) = plan_switch("sw", desired, observed, desired, _digests(desired, observed)).ops
    assert (op.kind, op.key, op.old_fields["weight"]) == ("change", "SLUICE_SCHED_1", "99")


def test_a_removed_entry_is_added_back() -> None:
    desired = compiled()
    observed = copy(desired)
    del observed[("QUEUE", "Ethernet4|3")]
    both_paths(desired, observed, desired)
    (op,) = plan_switch("sw", desired, observed, desired, _digests(desired, observed)).ops
    assert (op.kind, op.table, op.key) == ("add", "QUEUE", "Ethernet4|3")


def test_a_table_only_one_side_holds_is_added_or_deleted() -> None:
    desired = compiled()
    # The switch lacks a whole table sluice wants: every entry of it is an add.
    observed = {k: dict(v) for k, v in desired.items() if k[0] != "SLUICE_AGENT_QUEUE"}
    both_paths(desired, observed, desired)
    ops = plan_switch("sw", desired, observed, desired, _digests(desired, observed)).ops
    assert {op.kind for op in ops} == {"add"}
    assert {op.table for op in ops} == {"SLUICE_AGENT_QUEUE"}
    # Sluice no longer wants a table it wrote: its entries are deleted.
    both_paths(observed, desired, desired)
    ops = plan_switch("sw", observed, desired, desired, _digests(observed, desired)).ops
    assert {(op.kind, op.table) for op in ops} == {("delete", "SLUICE_AGENT_QUEUE")}


def test_an_operator_table_only_on_the_switch_is_not_walked() -> None:
    desired = compiled()
    observed = copy(desired)
    observed[("PORT", "Ethernet0")] = {"speed": "10000"}
    digests = _digests(desired, observed)
    assert changed_tables(*digests) == {"PORT"}
    assert plan_switch("sw", desired, observed, desired, digests).ops == ()
    both_paths(desired, observed, desired)


def _digests(desired: SwitchConfig, observed: SwitchConfig) -> DigestPair:
    return table_digests(desired), table_digests(observed)


@st.composite
def drifted(draw: st.DrawFn, desired: SwitchConfig) -> SwitchConfig:
    """``desired`` as a switch might hold it after drift: some entries changed or gone, some
    fields added, operator entries mixed in; most tables untouched."""
    observed = copy(desired)
    keys = sorted(observed)
    for entry_key in draw(st.lists(st.sampled_from(keys), max_size=3)) if keys else []:
        edit = draw(st.sampled_from(["drop", "change", "extra field"]))
        if edit == "drop":
            observed.pop(entry_key, None)
        elif entry_key in observed:
            fields = observed[entry_key]
            name = sorted(fields)[0] if edit == "change" else "x"
            fields[name] = draw(st.sampled_from(["SLUICE_A", "AZURE", "7"]))
    observed.update(draw(observed_config()))
    return observed


@settings(max_examples=300, deadline=None)
@given(desired=desired_config(), data=st.data())
def test_digest_diff_equals_full_diff_on_a_drifted_switch(
    desired: SwitchConfig, data: st.DataObject
) -> None:
    observed = data.draw(drifted(desired))
    owned = data.draw(st.sampled_from([{}, desired, observed]))
    both_paths(desired, observed, owned)


@settings(max_examples=200, deadline=None)
@given(desired=desired_config(), observed=observed_config())
def test_digest_diff_equals_full_diff_on_unrelated_states(
    desired: SwitchConfig, observed: SwitchConfig
) -> None:
    both_paths(desired, observed, {})


def _edits(fields: Fields) -> list[Fields]:
    """Every way to change one field: each value altered, each name renamed, each removed,
    and one field added."""
    out: list[Fields] = []
    for name in fields:
        out.append({**fields, name: fields[name] + "0"})
        out.append({(n + "_" if n == name else n): v for n, v in fields.items()})
        out.append({n: v for n, v in fields.items() if n != name})
    out.append({**fields, "added": "1"})
    return out


def test_a_digest_changes_when_any_field_of_its_table_changes() -> None:
    config = compiled()
    before = table_digests(config)
    for entry_key, fields in config.items():
        for edited in _edits(fields):
            after = table_digests({**config, entry_key: edited})
            assert changed_tables(before, after) == {entry_key[0]}, (entry_key, edited)


def test_a_digest_changes_when_a_key_changes_and_not_with_order() -> None:
    config = compiled()
    before = table_digests(config)
    entry_key: EntryKey = ("QUEUE", "Ethernet0|3")
    renamed = {(k if k != entry_key else ("QUEUE", "Ethernet8|3")): v for k, v in config.items()}
    assert changed_tables(before, table_digests(renamed)) == {"QUEUE"}
    # Entries read back in another order, fields too: the same digests.
    shuffled = {k: dict(reversed(v.items())) for k, v in reversed(config.items())}
    assert table_digests(shuffled) == before
    # A value that moves from one field to another is a change, not the same bytes.
    swapped = dict(config)
    swapped[("SCHEDULER", "SLUICE_SCHED_1")] = {"type": "weight", "weight": "DWRR"}
    assert changed_tables(before, table_digests(swapped)) == {"SCHEDULER"}


def _fleet_intent() -> Intent:
    """Switches of repeated and distinct shapes: same ports, other speeds, another buffer,
    another port name."""
    leaf = t.switch("leaf1", TWO_PORTS, 50051)
    roomy_ports = (Port(name="Ethernet0", speed_gbps=10, buffer_bytes=2_000_000), leaf.ports[1])
    switches = (
        leaf,
        t.switch("leaf2", TWO_PORTS, 50052),
        t.switch("leaf3", (("Ethernet0", 100), ("Ethernet4", 25)), 50053),
        t.switch("leaf4", TWO_PORTS, 50054).model_copy(update={"ports": roomy_ports}),
        t.switch("leaf5", (("Ethernet8", 10), ("Ethernet4", 25)), 50055),
        t.switch("leaf6", TWO_PORTS, 50056),
    )
    return t.intent(*CLASSES, switches=switches)


def test_shared_shapes_compile_what_each_switch_compiles_alone() -> None:
    intent = _fleet_intent()
    shared = compile_fleet_digested(intent)
    scratch = compile_fleet(intent, share_shapes=False)
    assert shared.configs == scratch
    for switch in intent.switches:
        alone = compile_switch(intent, switch)
        assert shared.configs[switch.name] == alone
        assert list(shared.configs[switch.name]) == list(alone)  # same entry order
        assert shared.digests[switch.name] == table_digests(alone)
    # A switch's entries are its own: changing one switch leaves its twin as it was.
    shared.configs["leaf2"][("SCHEDULER", "SLUICE_SCHED_1")]["weight"] = "99"
    assert shared.configs["leaf1"][("SCHEDULER", "SLUICE_SCHED_1")]["weight"] != "99"


def test_diff_fleet_with_digests_plans_what_the_full_diff_plans() -> None:
    compiled_fleet = compile_fleet_digested(_fleet_intent())
    desired = compiled_fleet.configs
    observed = {name: copy(config) for name, config in desired.items()}
    observed["leaf3"][("QUEUE", "Ethernet0|5")]["scheduler"] = "SLUICE_SCHED_1"
    del observed["leaf4"][("WRED_PROFILE", "SLUICE_Q_Ethernet0_3")]
    digests = {n: (compiled_fleet.digests[n], table_digests(c)) for n, c in observed.items()}
    with_digests = diff_fleet(desired, observed, desired, digests)
    assert with_digests == diff_fleet(desired, observed, desired)
    assert {n for n, plan in with_digests.items() if plan.ops} == {"leaf3", "leaf4"}


# --------------------------------------------------------------------------------------------
# digests straight from a switch's JSON answer


def _table_texts(config: SwitchConfig, *, reverse: bool = False) -> dict[str, bytes]:
    """Each table of ``config`` as a switch renders it, ``{key: {field: value}}``; reversed
    key and field order, and sonic-gnmi's spacing, when ``reverse``."""
    tables: dict[str, dict[str, Fields]] = {}
    for (table, key), fields in config.items():
        tables.setdefault(table, {})[key] = dict(reversed(fields.items())) if reverse else fields
    if reverse:
        tables = {t: dict(reversed(entries.items())) for t, entries in tables.items()}
    return {
        t: json.dumps(entries, indent=1 if reverse else None).encode()
        for t, entries in tables.items()
    }


@settings(max_examples=200, deadline=None)
@given(config=observed_config(), reverse=st.booleans())
def test_a_table_answer_has_the_digest_of_its_decoded_entries(
    config: SwitchConfig, reverse: bool
) -> None:
    texts = _table_texts(config, reverse=reverse)
    assert {t: table_json_digest(text) for t, text in texts.items()} == dict(table_digests(config))
    assert AnswerDigests().of_tables(texts) == dict(table_digests(config))


def test_an_answer_that_is_not_entries_of_strings_never_matches() -> None:
    config = compiled()
    texts = _table_texts(config)
    desired = table_digests(config)
    # A number where CONFIG_DB has the string "20": decoded, the two would look alike.
    numeric = json.loads(texts["SCHEDULER"])
    numeric["SLUICE_SCHED_1"]["weight"] = int(numeric["SLUICE_SCHED_1"]["weight"])
    assert table_json_digest(json.dumps(numeric).encode()) != desired["SCHEDULER"]
    assert table_json_digest(b"[1, 2]") is None
    assert table_json_digest(b"{not json") is None
    assert AnswerDigests().of_tables({**texts, "QUEUE": b"[]"}) is None
    # A table without entries is left out, as table_digests leaves out an absent table.
    assert table_json_digest(b"{}") == EMPTY_TABLE
    assert AnswerDigests().of_tables({**texts, "FLEX_COUNTER_TABLE": b"{}"}) == {
        t: d for t, d in desired.items() if t != "FLEX_COUNTER_TABLE"
    }


def test_identical_answers_are_decoded_once_and_memory_is_bounded() -> None:
    texts = _table_texts(compiled())
    answers = AnswerDigests(max_entries=len(texts))
    first = answers.of_tables(texts)
    assert answers.decoded == len(texts)
    assert answers.of_tables(dict(texts)) == first
    assert answers.decoded == len(texts)  # every answer remembered
    # One more distinct answer pushes out the least recently used; that one is decoded again.
    oldest = next(iter(texts.values()))
    answers.of_text(b'{"k": {"f": "v"}}')
    answers.of_text(oldest)
    assert answers.decoded == len(texts) + 2
    with pytest.raises(ValueError, match="at least 1"):
        AnswerDigests(max_entries=0)
