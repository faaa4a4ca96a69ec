"""Generate the controller's, vsonic's and the agent tests' field tables from the YANG model.

``agents/qos-agent/yang/sonic-sluice-agent.yang`` is the one definition of the SLUICE_AGENT
and SLUICE_AGENT_QUEUE contract. This script reads it with libyang (resolving types, ranges,
patterns and leafrefs as a switch's GCU does) and writes, each in its reader's own vocabulary:

- ``controller/sonic/sluice_yang.py``: ``FieldSpec`` tuples for the table modules;
- ``vsonic/sluice_yang.py``: field types for vsonic's schema (vsonic does not import the
  controller, so it gets its own rendering);
- ``agents/qos-core/tests/yang/sluice_yang.rs``: leaf tables the orders-parser test checks.

Run ``uv run python scripts/gen_sluice_yang.py`` after editing the YANG file;
``tests/yang/test_generated.py`` fails while any output is out of date. The ``must`` rules
(cross-field) are XPath and are not translated: each reader writes them once by hand, and
``tests/yang/test_vsonic_verdicts.py`` checks vsonic's against libyang's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import libyang
from _libyang import ffi  # type: ignore[import-not-found]  # libyang's CFFI module

REPO = Path(__file__).resolve().parents[1]
YANG_DIR = REPO / "agents" / "qos-agent" / "yang"
MODULE = "sonic-sluice-agent"
SOURCE = f"agents/qos-agent/yang/{MODULE}.yang"
CONTROLLER_OUT = REPO / "controller" / "sonic" / "sluice_yang.py"
VSONIC_OUT = REPO / "vsonic" / "sluice_yang.py"
RUST_OUT = REPO / "agents" / "qos-core" / "tests" / "yang" / "sluice_yang.rs"
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


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[Leaf, ...]
    leaves: tuple[Leaf, ...]  # the fields, keys excluded

    def mandatory(self) -> tuple[str, ...]:
        return tuple(leaf.name for leaf in self.leaves if leaf.mandatory)


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
        return Leaf(name, "bool", mandatory=mandatory)
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
            tables.append(Table(container.name(), keys, fields))
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


def render_controller(tables: list[Table]) -> str:
    t = _by_name(tables)
    agent, queue = t["SLUICE_AGENT"], t["SLUICE_AGENT_QUEUE"]
    qindex = _key_leaf(queue, "qindex")
    return "\n".join(
        [
            f'"""{HEADER}',
            "",
            "The fields of SLUICE_AGENT and SLUICE_AGENT_QUEUE as the YANG model defines them; the",
            'table modules add the cross-field rules (the model\'s ``must`` statements)."""',
            "",
            "from __future__ import annotations",
            "",
            "from controller.sonic.schema import FieldSpec",
            "",
            f'AGENT_KEY_PATTERN = r"{_key_leaf(agent, "name").pattern}"',
            f"QUEUE_INDEX_MAX = {qindex.high}",
            "",
            _fields_tuple("AGENT_FIELDS", agent),
            "",
            _fields_tuple("AGENT_QUEUE_FIELDS", queue),
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


def render_vsonic(tables: list[Table]) -> str:
    t = _by_name(tables)
    agent, queue = t["SLUICE_AGENT"], t["SLUICE_AGENT_QUEUE"]
    used = {_field_type(leaf).split("(")[0] for tb in tables for leaf in tb.leaves}
    imports = ", ".join(sorted(used | {"FieldType"}))
    return "\n".join(
        [
            f'"""{HEADER}',
            "",
            "What a switch with sonic-sluice-agent.yang installed accepts in SLUICE_AGENT and",
            'SLUICE_AGENT_QUEUE; ``vsonic/schema.py`` adds the model\'s ``must`` rules."""',
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
            "",
            _types_dict("AGENT_QUEUE_FIELDS", queue),
            _tuple("AGENT_QUEUE_MANDATORY", queue.mandatory()),
            "",
        ]
    )


# ---- Rust (the qos-core contract test) --------------------------------------------------


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


def render_rust(tables: list[Table]) -> str:
    t = _by_name(tables)
    qindex_max = _key_leaf(t["SLUICE_AGENT_QUEUE"], "qindex").high
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
            "/// Highest queue index of a SLUICE_AGENT_QUEUE key.",
            f"pub const QUEUE_INDEX_MAX: u64 = {qindex_max};",
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
