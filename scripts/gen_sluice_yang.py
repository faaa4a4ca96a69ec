"""Generate the controller's, vsonic's and the agent tests' field tables from the YANG model.

``agents/qos-agent/yang/sonic-sluice-agent.yang`` is the one definition of the SLUICE_AGENT
and SLUICE_AGENT_QUEUE contract. This script reads it with libyang (resolving types, ranges,
patterns and leafrefs as a switch's GCU does) and writes, each in its reader's own vocabulary:

- ``controller/sonic/sluice_yang.py``: ``FieldSpec`` tuples for the table modules;
- ``vsonic/sluice_yang.py``: field types for vsonic's schema (vsonic does not import the
  controller, so it gets its own rendering);
- ``agents/qos-core/src/sluice_yang.rs``: what the orders parser applies (the field names,
  the queue indexes, the cross-field rules);
- ``agents/qos-core/tests/yang/sluice_leaves.rs``: each field's type, which the orders-parser
  contract test checks the parser against.

The cross-field rules are the model's ``must`` statements (XPath). The generator knows the
three forms the model uses and translates each into a rule every reader applies the same
way, with the model's own error-message; a ``must`` of any other form stops it (teach it the
form, and each reader its rule). ``agents/qos-agent/yang/sonic-sluice-agent-verdicts.json``
holds entries with libyang's verdict that the controller, vsonic and qos-core must all give
(``tests/yang/test_agent_verdicts.py``, ``agents/qos-core/tests/yang_contract.rs``).

Run ``uv run python scripts/gen_sluice_yang.py`` after editing the YANG file;
``tests/yang/test_generated.py`` fails while any output is out of date.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libyang
from _libyang import ffi  # type: ignore[import-not-found]  # libyang's CFFI module
from libyang.util import c2str, ly_array_iter

REPO = Path(__file__).resolve().parents[1]
YANG_DIR = REPO / "agents" / "qos-agent" / "yang"
MODULE = "sonic-sluice-agent"
SOURCE = f"agents/qos-agent/yang/{MODULE}.yang"
CONTROLLER_OUT = REPO / "controller" / "sonic" / "sluice_yang.py"
VSONIC_OUT = REPO / "vsonic" / "sluice_yang.py"
RUST_OUT = REPO / "agents" / "qos-core" / "src" / "sluice_yang.rs"
RUST_TEST_OUT = REPO / "agents" / "qos-core" / "tests" / "yang" / "sluice_leaves.rs"
HEADER = f"Generated from {SOURCE} by scripts/gen_sluice_yang.py."

_UINTS = {libyang.Type.UINT8, libyang.Type.UINT16, libyang.Type.UINT32, libyang.Type.UINT64}


@dataclass(frozen=True)
class Leaf:
    name: str
    kind: str  # uint, decimal, enum, bool, string, leafref
    low: str | None = None
    high: str | None = None
    fraction_digits: int | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    ref_table: str | None = None
    mandatory: bool = False
    default: str | None = None  # as CONFIG_DB would hold it ("true")


@dataclass(frozen=True)
class Must:
    """One ``must`` of the model, in one of the forms the generator knows:

    - ``needs``: on the entry, ``<switch> = '<value>' or (<a> and <b> ...)``: unless
      ``switch`` (its default when absent) is ``value``, every one of ``fields`` is present;
    - ``only_when``: on ``leaf``, ``../<switch> = '<value>'``: ``leaf``, when present, needs
      ``switch`` (its default when absent) to be ``value``;
    - ``at_least`` / ``at_most``: on ``leaf``, ``current() >= ../<other>`` (or ``<=``):
      ``leaf``, when present, is a number at least (at most) ``other``'s, which must be
      present (XPath compares an absent node as false).
    """

    kind: str
    message: str
    leaf: str | None = None
    switch: str | None = None
    value: str | None = None
    default: str | None = None
    fields: tuple[str, ...] = ()
    other: str | None = None


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[Leaf, ...]
    leaves: tuple[Leaf, ...]  # the fields, keys excluded
    musts: tuple[Must, ...] = ()

    def mandatory(self) -> tuple[str, ...]:
        return tuple(leaf.name for leaf in self.leaves if leaf.mandatory)

    def default_of(self, name: str) -> str | None:
        return next((leaf.default for leaf in self.leaves if leaf.name == name), None)


class StubModels:
    """The two SONiC modules ours imports, reduced to the nodes its leafrefs point at, so the
    generator needs nothing beyond this repository."""

    PORT = (
        "module sonic-port { yang-version 1.1; namespace 'http://github.com/sonic-net/"
        "sonic-port'; prefix port; container sonic-port { container PORT { list PORT_LIST {"
        " key name; leaf name { type string; } } } } }"
    )
    WRED = (
        "module sonic-wred-profile { yang-version 1.1; namespace 'http://github.com/"
        "sonic-net/sonic-wred-profile'; prefix wrd; container sonic-wred-profile { container"
        " WRED_PROFILE { list WRED_PROFILE_LIST { key name; leaf name { type string; } } } } }"
    )


def _context() -> libyang.Context:
    ctx = libyang.Context(str(YANG_DIR))
    ctx.parse_module_str(StubModels.PORT)
    ctx.parse_module_str(StubModels.WRED)
    ctx.load_module(MODULE)
    return ctx


def _range(text: str | None) -> tuple[str | None, str | None]:
    if text is None:
        return None, None
    low, _, high = text.partition("..")
    if "|" in text or not high:
        raise ValueError(f"range {text!r}: only one low..high interval is supported")
    return low.strip(), high.strip()


def _leaf(node: libyang.SLeaf) -> Leaf:
    ytype = node.type()
    base = ytype.base()
    name, mandatory = node.name(), node.mandatory()
    if base in _UINTS:
        low, high = _range(ytype.range())
        return Leaf(name, "uint", low, high, mandatory=mandatory)
    if base == libyang.Type.DEC64:
        low, high = _range(ytype.range())
        digits = int(ffi.cast("struct lysc_type_dec *", ytype.cdata).fraction_digits)
        return Leaf(name, "decimal", low, high, digits, mandatory=mandatory)
    if base == libyang.Type.ENUM:
        choices = tuple(e.name() for e in ytype.enums())
        return Leaf(name, "enum", choices=choices, mandatory=mandatory)
    if base == libyang.Type.BOOL:
        default = node.default()
        text = None if default is None else str(default).lower()
        return Leaf(name, "bool", mandatory=mandatory, default=text)
    if base == libyang.Type.LEAFREF:
        # "/wrd:sonic-wred-profile/wrd:WRED_PROFILE/wrd:WRED_PROFILE_LIST/wrd:name"
        table = str(ytype.leafref_path()).split("/")[2].split(":")[-1]
        return Leaf(name, "leafref", ref_table=table, mandatory=mandatory)
    if base == libyang.Type.STRING:
        patterns = [p for p, inverted in ytype.all_patterns() if not inverted]
        if len(patterns) != 1:
            raise ValueError(f"leaf {name}: a string needs exactly one pattern")
        return Leaf(name, "string", pattern=patterns[0], mandatory=mandatory)
    raise ValueError(f"leaf {name}: type {ytype.basename()} is not supported")


_NEEDS = re.compile(r"(\w+) = '([^']*)' or \(([\w ]+)\)")
_ONLY_WHEN = re.compile(r"\.\./(\w+) = '([^']*)'")
_COMPARE = re.compile(r"current\(\) (>=|<=) \.\./(\w+)")


def _musts_of(parsed: Any) -> list[tuple[str, str]]:
    """``(condition, error-message)`` of each ``must`` on a node (libyang's parsed tree)."""
    if parsed.musts == ffi.NULL:
        return []
    musts = ly_array_iter(parsed.musts)  # type: ignore[no-untyped-call]  # libyang's, untyped
    return [(c2str(must.arg.str), c2str(must.emsg)) for must in musts]


def _entry_must(condition: str, message: str, defaults: dict[str, str | None]) -> Must:
    found = _NEEDS.fullmatch(condition)
    if found is None:
        raise ValueError(f"must {condition!r} on the entry: a form the generator does not know")
    switch, value, conjunction = found.groups()
    fields = tuple(name.strip() for name in conjunction.split(" and "))
    return Must("needs", message, None, switch, value, defaults.get(switch), fields)


def _leaf_musts(
    leaf: str, condition: str, message: str, defaults: dict[str, str | None]
) -> list[Must]:
    only_when = _ONLY_WHEN.fullmatch(condition)
    if only_when is not None:
        switch, value = only_when.groups()
        return [Must("only_when", message, leaf, switch, value, defaults.get(switch))]
    parts = condition.split(" and ")
    compares = [_COMPARE.fullmatch(part) for part in parts]
    if not all(compares):
        raise ValueError(f"must {condition!r} on {leaf}: a form the generator does not know")
    kinds = {">=": "at_least", "<=": "at_most"}
    return [
        Must(kinds[found.group(1)], message, leaf, other=found.group(2))
        for found in compares
        if found is not None
    ]


def _table_musts(slist: libyang.SList, leaves: list[Leaf]) -> tuple[Must, ...]:
    """The list's own musts, then each leaf's, in the model's order."""
    defaults = {leaf.name: leaf.default for leaf in leaves}
    musts = [_entry_must(c, m, defaults) for c, m in _musts_of(slist.cdata_list_parsed)]
    for node in slist.children():
        if isinstance(node, libyang.SLeaf):
            for condition, message in _musts_of(node.cdata_leaf_parsed):
                musts += _leaf_musts(node.name(), condition, message, defaults)
    kinds = {leaf.name: leaf.kind for leaf in leaves}
    for must in musts:
        compared = (must.leaf or "", must.other) if must.other is not None else ()
        if any(kinds.get(name) != "uint" for name in compared):
            raise ValueError(f"must on {must.leaf}: the readers compare whole numbers only")
    return tuple(musts)


def read_tables() -> list[Table]:
    """The module's tables: one list per table container, its keys and its leaves."""
    tables = []
    for top in _context().get_module(MODULE).children():
        if not isinstance(top, libyang.SContainer):
            continue
        for container in top.children():
            if not isinstance(container, libyang.SContainer):
                continue
            (slist,) = [n for n in container.children() if isinstance(n, libyang.SList)]
            key_names = [k.name() for k in slist.keys()]  # noqa: SIM118 (libyang's keys)
            leaves = [_leaf(n) for n in slist.children() if isinstance(n, libyang.SLeaf)]
            keys = tuple(leaf for leaf in leaves if leaf.name in key_names)
            fields = tuple(leaf for leaf in leaves if leaf.name not in key_names)
            musts = _table_musts(slist, leaves)
            tables.append(Table(container.name(), keys, fields, musts))
    return tables


def _by_name(tables: list[Table]) -> dict[str, Table]:
    return {t.name: t for t in tables}


def _key_leaf(table: Table, name: str) -> Leaf:
    return next(k for k in table.keys if k.name == name)


# ---- controller -------------------------------------------------------------------------


def _field_spec(leaf: Leaf) -> str:
    required = ", required=True" if leaf.mandatory else ""
    name = repr(leaf.name).replace("'", '"')
    if leaf.kind == "uint":
        return f'FieldSpec({name}, "uint", {leaf.low}, {leaf.high}{required})'
    if leaf.kind == "decimal":
        bounds = f'("{leaf.low}", "{leaf.high}")'
        return (
            f'FieldSpec({name}, "decimal", decimal_range={bounds}, '
            f"fraction_digits={leaf.fraction_digits}{required})"
        )
    if leaf.kind == "enum":
        choices = ", ".join(f'"{c}"' for c in leaf.choices)
        return f'FieldSpec({name}, "enum", choices=({choices}){required})'
    if leaf.kind == "bool":
        return f'FieldSpec({name}, "bool"{required})'
    if leaf.kind == "leafref":
        return f'FieldSpec({name}, "ref", ref="{leaf.ref_table}"{required})'
    return f'FieldSpec({name}, "string", pattern=r"{leaf.pattern}"{required})'


def _fields_tuple(name: str, table: Table) -> str:
    lines = [f"{name} = ("]
    lines += [f"    {_field_spec(leaf)}," for leaf in table.leaves]
    return "\n".join([*lines, ")"])


def _py(text: str | None) -> str:
    return "None" if text is None else '"' + text.replace('"', '\\"') + '"'


def _py_tuple(items: tuple[str, ...]) -> str:
    inside = ", ".join(_py(item) for item in items)
    return f"({inside},)" if len(items) == 1 else f"({inside})"


def _rule(must: Must) -> str:
    if must.kind == "needs":
        fields = _py_tuple(must.fields)
        return (
            f"needs({fields}, unless=({_py(must.switch)}, {_py(must.value)}), "
            f"default={_py(must.default)}, message={_py(must.message)})"
        )
    if must.kind == "only_when":
        return (
            f"only_when({_py(must.leaf)}, ({_py(must.switch)}, {_py(must.value)}), "
            f"default={_py(must.default)}, message={_py(must.message)})"
        )
    return f"{must.kind}({_py(must.leaf)}, {_py(must.other)}, message={_py(must.message)})"


def _rules_tuple(name: str, table: Table) -> str:
    lines = [f"{name}: tuple[Rule, ...] = ("]
    lines += [f"    {_rule(must)}," for must in table.musts]
    return "\n".join([*lines, ")"])


def render_controller(tables: list[Table]) -> str:
    t = _by_name(tables)
    agent, queue = t["SLUICE_AGENT"], t["SLUICE_AGENT_QUEUE"]
    qindex = _key_leaf(queue, "qindex")
    kinds = sorted({must.kind for table in tables for must in table.musts})
    return "\n".join(
        [
            f'"""{HEADER}',
            "",
            "The fields of SLUICE_AGENT and SLUICE_AGENT_QUEUE as the YANG model defines them, and",
            "its cross-field rules (its ``must`` statements, each with the model's error-message).",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            f"from controller.sonic.schema import FieldSpec, Rule, {', '.join(kinds)}",
            "",
            f'AGENT_KEY_PATTERN = r"{_key_leaf(agent, "name").pattern}"',
            f"QUEUE_INDEX_MAX = {qindex.high}",
            "",
            _fields_tuple("AGENT_FIELDS", agent),
            _rules_tuple("AGENT_MUSTS", agent),
            "",
            _fields_tuple("AGENT_QUEUE_FIELDS", queue),
            _rules_tuple("AGENT_QUEUE_MUSTS", queue),
            "",
        ]
    )


# ---- vsonic -----------------------------------------------------------------------------


def _field_type(leaf: Leaf) -> str:
    if leaf.kind == "uint":
        return f"Integer({leaf.low}, {leaf.high})"
    if leaf.kind == "decimal":
        return f"Decimal({leaf.low}, {leaf.high}, fraction_digits={leaf.fraction_digits})"
    if leaf.kind == "enum":
        return "OneOf((" + ", ".join(f'"{c}"' for c in leaf.choices) + "))"
    if leaf.kind == "bool":
        return "BOOLEAN"
    if leaf.kind == "leafref":
        return f'Ref("{leaf.ref_table}")'
    return f'Text(r"{leaf.pattern}", "a string matching {leaf.pattern}")'


def _types_dict(name: str, table: Table) -> str:
    lines = [f"{name}: dict[str, FieldType] = {{"]
    lines += [f'    "{leaf.name}": {_field_type(leaf)},' for leaf in table.leaves]
    return "\n".join([*lines, "}"])


def _tuple(name: str, items: tuple[str, ...]) -> str:
    body = "".join(f'    "{item}",\n' for item in items)
    return f"{name} = (\n{body})"


def _vsonic_must(must: Must) -> str:
    parts = [_py(must.kind), _py(must.message)]
    for name in ("leaf", "switch", "value", "default", "other"):
        value = getattr(must, name)
        if value is not None:
            parts.append(f"{name}={_py(value)}")
    if must.fields:
        parts.append(f"fields={_py_tuple(must.fields)}")
    return f"Must({', '.join(parts)})"


def _musts_tuple(name: str, table: Table) -> str:
    lines = [f"{name}: tuple[Must, ...] = ("]
    lines += [f"    {_vsonic_must(must)}," for must in table.musts]
    return "\n".join([*lines, ")"])


def render_vsonic(tables: list[Table]) -> str:
    t = _by_name(tables)
    agent, queue = t["SLUICE_AGENT"], t["SLUICE_AGENT_QUEUE"]
    used = {_field_type(leaf).split("(")[0] for tb in tables for leaf in tb.leaves}
    imports = ", ".join(sorted(used | {"FieldType", "Must"}))
    return "\n".join(
        [
            f'"""{HEADER}',
            "",
            "What a switch with sonic-sluice-agent.yang installed accepts in SLUICE_AGENT and",
            "SLUICE_AGENT_QUEUE: fields, mandatory ones, and the model's cross-field rules (its",
            '``must`` statements, each with the model\'s error-message)."""',
            "",
            "from __future__ import annotations",
            "",
            f"from vsonic.schema_types import {imports}",
            "",
            f'AGENT_KEY = "{_key_leaf(agent, "name").pattern}"',
            f"QUEUE_INDEX_MAX = {_key_leaf(queue, 'qindex').high}",
            "",
            _types_dict("AGENT_FIELDS", agent),
            _tuple("AGENT_MANDATORY", agent.mandatory()),
            _musts_tuple("AGENT_MUSTS", agent),
            "",
            _types_dict("AGENT_QUEUE_FIELDS", queue),
            _tuple("AGENT_QUEUE_MANDATORY", queue.mandatory()),
            _musts_tuple("AGENT_QUEUE_MUSTS", queue),
            "",
        ]
    )


# ---- Rust (qos-core: the orders parser and its contract test) ----------------------------


def _rust_kind(leaf: Leaf) -> str:
    if leaf.kind == "uint":
        return f"Kind::Uint({leaf.low}, {leaf.high})"
    if leaf.kind == "decimal":
        return f'Kind::Decimal("{leaf.low}", "{leaf.high}")'
    if leaf.kind == "enum":
        return "Kind::Enum(&[" + ", ".join(f'"{c}"' for c in leaf.choices) + "])"
    if leaf.kind == "bool":
        return "Kind::Bool"
    if leaf.kind == "leafref":
        return f'Kind::Leafref("{leaf.ref_table}")'
    return f'Kind::Pattern(r"{leaf.pattern}")'


def _rust_leaves(name: str, table: Table) -> str:
    lines = [f"pub const {name}: &[Leaf] = &["]
    for leaf in table.leaves:
        kind, mandatory = _rust_kind(leaf), str(leaf.mandatory).lower()
        lines.append(f'    Leaf {{ name: "{leaf.name}", kind: {kind}, mandatory: {mandatory} }},')
    return "\n".join([*lines, "];"])


def _rs(text: str | None) -> str:
    return "None" if text is None else "Some(" + _rs_str(text) + ")"


def _rs_str(text: str | None) -> str:
    return '"' + (text or "").replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rust_must(must: Must) -> str:
    message = _rs_str(must.message)
    if must.kind == "needs":
        fields = "&[" + ", ".join(_rs_str(f) for f in must.fields) + "]"
        return (
            f"Must::Needs {{ switch: {_rs_str(must.switch)}, value: {_rs_str(must.value)}, "
            f"default: {_rs(must.default)}, fields: {fields}, message: {message} }}"
        )
    if must.kind == "only_when":
        return (
            f"Must::OnlyWhen {{ leaf: {_rs_str(must.leaf)}, switch: {_rs_str(must.switch)}, "
            f"value: {_rs_str(must.value)}, default: {_rs(must.default)}, message: {message} }}"
        )
    bound = {"at_least": "AtLeast", "at_most": "AtMost"}[must.kind]
    return (
        f"Must::Compare {{ leaf: {_rs_str(must.leaf)}, bound: Bound::{bound}, "
        f"other: {_rs_str(must.other)}, message: {message} }}"
    )


def _rust_musts(name: str, table: Table) -> str:
    lines = [f"pub const {name}: &[Must] = &["]
    lines += [f"    {_rust_must(must)}," for must in table.musts]
    return "\n".join([*lines, "];"])


RUST_MUST = """
/// A cross-field rule of the model (one of its `must` statements), refused with `message`,
/// the model's own error-message.
#[derive(Debug, Clone, Copy)]
pub enum Must {
    /// Unless `switch` (`default` when absent) is `value`, every one of `fields` is present.
    Needs {
        /// The field that decides.
        switch: &'static str,
        /// The value that lets the fields be absent.
        value: &'static str,
        /// The model's default of `switch`.
        default: Option<&'static str>,
        /// The fields needed otherwise.
        fields: &'static [&'static str],
        /// The model's error-message.
        message: &'static str,
    },
    /// `leaf`, when present, needs `switch` (`default` when absent) to be `value`.
    OnlyWhen {
        /// The field the rule is on.
        leaf: &'static str,
        /// The field that decides.
        switch: &'static str,
        /// The value `switch` must have.
        value: &'static str,
        /// The model's default of `switch`.
        default: Option<&'static str>,
        /// The model's error-message.
        message: &'static str,
    },
    /// `leaf`, when present, is a whole number on the `bound` side of `other`'s, which is
    /// present (XPath compares an absent node as false).
    Compare {
        /// The field the rule is on.
        leaf: &'static str,
        /// Whether `leaf` is at least or at most `other`.
        bound: Bound,
        /// The field it is compared with.
        other: &'static str,
        /// The model's error-message.
        message: &'static str,
    },
}

/// The side of the other field a compared one lies on (`>=` or `<=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `current() >= ../other`.
    AtLeast,
    /// `current() <= ../other`.
    AtMost,
}"""


def _rust_names(name: str, table: Table) -> str:
    lines = [f"pub const {name}: &[&str] = &["]
    lines += [f'    "{leaf.name}",' for leaf in table.leaves]
    return "\n".join([*lines, "];"])


def render_rust(tables: list[Table]) -> str:
    """qos-core's module: what the orders parser applies (field names, queue indexes, rules)."""
    t = _by_name(tables)
    qindex_max = _key_leaf(t["SLUICE_AGENT_QUEUE"], "qindex").high
    return "\n".join(
        [
            f"//! {HEADER}",
            "//!",
            "//! What the orders parser applies: the fields of SLUICE_AGENT and",
            "//! SLUICE_AGENT_QUEUE (any other is refused), the queue indexes and the model's",
            "//! cross-field rules. Each field's type is the contract test's",
            "//! (`tests/yang/sluice_leaves.rs`): the agent keeps its own, wider sanity bounds.",
            "",
            "/// Highest queue index of a SLUICE_AGENT_QUEUE key.",
            f"pub const QUEUE_INDEX_MAX: u64 = {qindex_max};",
            "",
            "/// The fields of SLUICE_AGENT|global.",
            _rust_names("SLUICE_AGENT_FIELDS", t["SLUICE_AGENT"]),
            "",
            "/// The fields of SLUICE_AGENT_QUEUE|<port>|<queue>.",
            _rust_names("SLUICE_AGENT_QUEUE_FIELDS", t["SLUICE_AGENT_QUEUE"]),
            RUST_MUST,
            "",
            "/// The cross-field rules of SLUICE_AGENT|global.",
            _rust_musts("SLUICE_AGENT_MUSTS", t["SLUICE_AGENT"]),
            "",
            "/// The cross-field rules of SLUICE_AGENT_QUEUE, in the model's order.",
            _rust_musts("SLUICE_AGENT_QUEUE_MUSTS", t["SLUICE_AGENT_QUEUE"]),
            "",
        ]
    )


def render_rust_leaves(tables: list[Table]) -> str:
    """The contract test's leaf tables: each field's type, as the model gives it."""
    t = _by_name(tables)
    return "\n".join(
        [
            f"//! {HEADER}",
            "",
            "/// A leaf's YANG type, reduced to what the orders parser has to agree with.",
            "#[derive(Debug, Clone, Copy)]",
            "pub enum Kind {",
            "    /// Unsigned integer, inclusive range.",
            "    Uint(u64, u64),",
            "    /// decimal64, inclusive range as written in the model.",
            "    Decimal(&'static str, &'static str),",
            "    /// One of these names.",
            "    Enum(&'static [&'static str]),",
            "    /// true or false.",
            "    Bool,",
            "    /// A string matching this pattern.",
            "    Pattern(&'static str),",
            "    /// The name of an entry of this table.",
            "    Leafref(&'static str),",
            "}",
            "",
            "/// One field of a table.",
            "#[derive(Debug, Clone, Copy)]",
            "pub struct Leaf {",
            "    /// Field name in CONFIG_DB.",
            "    pub name: &'static str,",
            "    /// Its type.",
            "    pub kind: Kind,",
            "    /// YANG `mandatory true`.",
            "    pub mandatory: bool,",
            "}",
            "",
            "/// SLUICE_AGENT|global.",
            _rust_leaves("SLUICE_AGENT", t["SLUICE_AGENT"]),
            "",
            "/// SLUICE_AGENT_QUEUE|<port>|<queue>.",
            _rust_leaves("SLUICE_AGENT_QUEUE", t["SLUICE_AGENT_QUEUE"]),
            "",
        ]
    )


def _formatted(path: Path, text: str) -> str:
    """The text as the repository's formatters leave it (ruff format, rustfmt)."""
    if path.suffix == ".py":
        command = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"]
    else:
        # rustup puts rustfmt in ~/.cargo/bin, which a plain shell may not have on PATH.
        rustfmt = shutil.which("rustfmt") or str(Path.home() / ".cargo" / "bin" / "rustfmt")
        command = [rustfmt, "--edition", "2021", "--config-path", str(REPO / "rustfmt.toml")]
    done = subprocess.run(command, input=text, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed on {path}: {done.stderr}")
    return done.stdout


def render() -> dict[Path, str]:
    """Every generated file and the text it must hold."""
    tables = read_tables()
    texts = {
        CONTROLLER_OUT: render_controller(tables),
        VSONIC_OUT: render_vsonic(tables),
        RUST_OUT: render_rust(tables),
        RUST_TEST_OUT: render_rust_leaves(tables),
    }
    return {path: _formatted(path, text) for path, text in texts.items()}


def main() -> int:
    for path, text in render().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
