"""Properties of plan/apply over arbitrary desired and observed states (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.intent.models import ServiceClass
from controller.sonic.compile import compile_switch
from controller.sonic.diff import apply_plan, plan_switch
from controller.sonic.model import EntryKey, Fields, SwitchConfig
from controller.sonic.tables import SCHEMAS
from tests.unit.sonic import intents as t

NAMES = st.sampled_from(
    ["SLUICE_A", "SLUICE_B", "SLUICE_Q_Ethernet0_3", "AZURE", "scheduler.0", "legacy"]
)
PORT_QUEUES = st.sampled_from(["Ethernet0|3", "Ethernet4|3", "Ethernet0|5"])
VALUES = st.sampled_from(["SLUICE_A", "SLUICE_B", "AZURE", "1", "2", "true"])
OPERATOR_FIELDS = ("pfc_enable", "tc_to_pg_map")
FREE_FIELDS = ("type", "weight", "green_min_threshold", "ecn", "x")
# Tables sluice writes, plus one it never does: it must come through untouched.
TABLES = [*sorted(SCHEMAS), "PORT"]


@st.composite
def entry_key(draw: st.DrawFn, tables: list[str]) -> EntryKey:
    table = draw(st.sampled_from(tables))
    schema = SCHEMAS.get(table)
    key = draw(PORT_QUEUES if schema is not None and schema.shared else NAMES)
    return table, key


def field_names(table: str, *, operator: bool) -> list[str]:
    schema = SCHEMAS.get(table)
    if schema is not None and schema.shared:
        return sorted(schema.field_names) + (list(OPERATOR_FIELDS) if operator else [])
    return list(FREE_FIELDS)


@st.composite
def observed_config(draw: st.DrawFn) -> SwitchConfig:
    config: SwitchConfig = {}
    for key in draw(st.lists(entry_key(TABLES), max_size=12, unique=True)):
        names = field_names(key[0], operator=True)
        config[key] = draw(st.dictionaries(st.sampled_from(names), VALUES, min_size=1, max_size=4))
    return config


@st.composite
def desired_config(draw: st.DrawFn) -> SwitchConfig:
    """Only what the compiler can produce: entries sluice owns, and in shared tables only
    sluice's fields with SLUICE names; never an empty entry."""
    config: SwitchConfig = {}
    for table, key in draw(st.lists(entry_key(sorted(SCHEMAS)), max_size=12, unique=True)):
        schema = SCHEMAS[table]
        if schema.shared:
            values: st.SearchStrategy[str] = st.sampled_from(["SLUICE_A", "SLUICE_B"])
        elif not (table.startswith("SLUICE") or key.startswith("SLUICE")):
            continue
        else:
            values = VALUES
        names = field_names(table, operator=False)
        config[(table, key)] = draw(
            st.dictionaries(st.sampled_from(names), values, min_size=1, max_size=4)
        )
    return config


def owns(table: str, key: str, owned: set[EntryKey]) -> bool:
    return table.startswith("SLUICE") or key.startswith("SLUICE") or (table, key) in owned


@settings(max_examples=200, deadline=None)
@given(desired=desired_config(), observed=observed_config(), data=st.data())
def test_plan_then_apply_converges_and_spares_the_operator(
    desired: SwitchConfig, observed: SwitchConfig, data: st.DataObject
) -> None:
    owned_keys = data.draw(
        st.sets(st.sampled_from(sorted(observed))) if observed else st.just(set())
    )
    owned: set[EntryKey] | dict[EntryKey, Fields] = owned_keys
    if data.draw(st.booleans()):
        owned = {k: dict(observed[k]) for k in owned_keys}  # what sluice recorded writing

    plan = plan_switch("sw", desired, observed, owned)
    after = apply_plan(observed, plan)

    # Idempotence: nothing left to do, and the desired entries are in place.
    assert plan_switch("sw", desired, after, owned).ops == ()
    for entry, wanted in desired.items():
        agent_held = SCHEMAS[entry[0]].agent_owned(entry[1]) & set(observed.get(entry, {}))
        for name, value in wanted.items():
            if name not in agent_held:  # the agent's live value stands (no recorded start)
                assert after[entry][name] == value
    # Never touched: tables sluice does not write, and unowned entries of its tables.
    for (table, key), fields in observed.items():
        schema = SCHEMAS.get(table)
        if schema is None or (
            not schema.shared and not owns(table, key, owned_keys) and (table, key) not in desired
        ):
            assert after[(table, key)] == fields
        elif schema.shared:
            # In shared tables, a field survives unless sluice wants it or wrote it: a SLUICE
            # name, or the value recorded in ``owned``.
            recorded = owned.get((table, key), {}) if isinstance(owned, dict) else {}
            want = desired.get((table, key), {})
            for name, value in fields.items():
                wrote = name in schema.field_names and (
                    value.startswith("SLUICE") or recorded.get(name) == value
                )
                if name not in want and not wrote:
                    assert after[(table, key)][name] == value
    # The observed input is not modified.
    assert all(isinstance(v, dict) for v in observed.values())


CLASSES = [t.VOICE, t.BULK, t.STORAGE_MQECN, t.RPC_PIAS]


@settings(max_examples=25, deadline=None)
@given(
    first=st.lists(st.sampled_from(CLASSES), unique_by=lambda c: c.name),
    second=st.lists(st.sampled_from(CLASSES), unique_by=lambda c: c.name),
)
def test_any_intent_change_converges(first: list[ServiceClass], second: list[ServiceClass]) -> None:
    """From one compiled intent to another: apply, and the next plan is empty."""
    intent_a, intent_b = t.intent(*first), t.intent(*second)
    config_a = compile_switch(intent_a, intent_a.switches[0])
    config_b = compile_switch(intent_b, intent_b.switches[0])
    running = apply_plan({}, plan_switch("sw", config_a, {}))
    assert running == config_a
    plan = plan_switch("sw", config_b, running, config_a)
    after = apply_plan(running, plan)
    assert after == config_b
    assert plan_switch("sw", config_b, after, config_b).ops == ()
