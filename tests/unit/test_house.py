"""The house: the product (controller, api, vsonic) never imports ``lab`` and nothing ships it;
docs/architecture.md's room table is what each room imports; nothing imports in a loop; its
folder table lists exactly the folders at the top of the repository, each with its reason.

``lab/`` holds what exists to demonstrate or test sluice (the demo, namespaced hosts, a local
PostgreSQL). The tests read every product module's syntax tree, so an import hidden in a
function body counts as much as one at the top. The Rust crates' module loops are read from
their ``crate::`` paths.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("controller", "api", "vsonic")
LAB = "lab"


def imported_modules(tree: ast.AST) -> Iterator[str]:
    """Every absolute module name an ``import`` or ``from ... import`` statement names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def lab_imports(package: Path) -> list[str]:
    """``path: module`` for each import of ``lab`` (or a submodule) under ``package``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for module in imported_modules(tree):
            if module == LAB or module.startswith(LAB + "."):
                found.append(f"{path.relative_to(ROOT)}: {module}")
    return found


def test_imported_modules_sees_nested_and_from_imports() -> None:
    tree = ast.parse("def f():\n    import lab.netns\nfrom lab import localpg\nfrom . import x\n")
    assert sorted(imported_modules(tree)) == ["lab", "lab.netns"]


@pytest.mark.parametrize("package", PRODUCT_PACKAGES)
def test_product_package_does_not_import_lab(package: str) -> None:
    assert lab_imports(ROOT / package) == []


def test_lab_is_a_package_beside_the_product() -> None:
    assert (ROOT / LAB / "__init__.py").is_file()
    assert not (ROOT / "controller" / LAB).exists()


def test_wheel_ships_only_the_product() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert LAB not in packages
    assert set(packages) <= set(PRODUCT_PACKAGES)


@pytest.mark.parametrize("dockerfile", sorted((ROOT / "docker").glob("*.Dockerfile")))
def test_images_never_copy_lab(dockerfile: Path) -> None:
    ignore = Path(f"{dockerfile}.dockerignore").read_text().splitlines()
    assert "**" in ignore, "the build context starts from nothing and allows the product in"
    assert not any(line.startswith(f"!{LAB}") for line in ignore)
    copies = [line.split() for line in dockerfile.read_text().splitlines()]
    copied = [words[1] for words in copies if words[:1] == ["COPY"] and "--from" not in words[1]]
    assert not any(source.rstrip("/").startswith(LAB) for source in copied)


# --- the room table ---------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
Graph = Mapping[str, Iterable[str]]


def product_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every product module by dotted name (a package by its own name)."""
    modules = {}
    for package in PRODUCT_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(tree: ast.AST, package: str) -> Iterator[str]:
    """Every module name an import names, relative ones made absolute from ``package``; for
    ``from X import a`` both ``X`` and ``X.a`` (``a`` may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def module_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Which product modules each product module imports (at the top or in a function body).
    A submodule's import of its own package is left out: Python runs the package first anyway."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = {known(n) for n in imported_names(tree, package)}
        graph[name] = {t for t in targets if t and t != name and not name.startswith(t + ".")}
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


@dataclass(frozen=True)
class Room:
    path: str  # "controller/telemetry/", "controller/settings.py"
    imports: frozenset[str]
    exceptions: frozenset[str]
    row: str

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rpartition("/")[2].removesuffix(".py")

    def holds(self, module_path: str) -> bool:
        return module_path == self.path or (
            self.path.endswith("/") and module_path.startswith(self.path)
        )


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def room_table(text: str) -> list[Room]:
    """The product's rows of the "Rooms" table: a row per path in its first cell, the rooms
    named in its ``imports`` and ``known exceptions`` cells."""
    section = text.split("\n## Rooms\n", 1)[1].split("\n## ", 1)[0]
    rooms = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        for path in _ticked(cells[0]):
            if path.split("/")[0] in PRODUCT_PACKAGES:
                imports, exceptions = frozenset(_ticked(cells[2])), frozenset(_ticked(cells[3]))
                rooms.append(Room(path, imports, exceptions, line))
    return rooms


@dataclass(frozen=True)
class RoomImports:
    edges: dict[str, dict[str, list[str]]]  # {room: {room it imports: ["module -> module"]}}
    homeless: list[str]  # product modules in no room


def room_graph(modules: Mapping[str, Path], rooms: list[Room], root: Path = ROOT) -> RoomImports:
    """Which rooms each room imports, through which modules; the modules in no room."""
    where: dict[str, str] = {}
    homeless = []
    for name, path in modules.items():
        relative = path.relative_to(root).as_posix()
        holders = [room for room in rooms if room.holds(relative)]
        if holders:
            where[name] = max(holders, key=lambda room: len(room.path)).name
        elif name != "controller":  # the bare package: checked to import nothing
            homeless.append(relative)
    edges: dict[str, dict[str, list[str]]] = {room.name: {} for room in rooms}
    for name, targets in module_graph(modules).items():
        for target in targets:
            if name in where and target in where and where[name] != where[target]:
                edges[where[name]].setdefault(where[target], []).append(f"{name} -> {target}")
    for by_room in edges.values():
        for through in by_room.values():
            through.sort()
    return RoomImports(edges, homeless)


def table_mismatches(rooms: list[Room], edges: Mapping[str, Mapping[str, list[str]]]) -> list[str]:
    """What the table says and the code does not, and the other way round."""
    problems = []
    for room in rooms:
        actual = set(edges.get(room.name, {}))
        listed = room.imports | room.exceptions
        for missing in sorted(actual - listed):
            problems.append(f"{room.name} imports {missing}: {edges[room.name][missing]}")
        problems.extend(
            f"{room.name} lists {stale}, which it does not import"
            for stale in sorted(listed - actual)
        )
    return problems


@pytest.fixture(scope="module")
def rooms() -> list[Room]:
    return room_table(ARCHITECTURE.read_text())


@pytest.fixture(scope="module")
def imports(rooms: list[Room]) -> RoomImports:
    return room_graph(product_modules(), rooms)


def test_every_product_module_is_in_a_room(rooms: list[Room], imports: RoomImports) -> None:
    assert len({room.name for room in rooms}) == len(rooms), "two rooms of one name"
    assert imports.homeless == []
    assert module_graph(product_modules())["controller"] == set()


def test_the_room_table_is_what_each_room_imports(rooms: list[Room], imports: RoomImports) -> None:
    assert table_mismatches(rooms, imports.edges) == []


def test_every_known_exception_names_the_issue_item_that_removes_it(rooms: list[Room]) -> None:
    for room in rooms:
        if room.exceptions:
            assert re.search(r"TODO issue \d+ item \d+", room.row), room.row


def test_no_product_module_imports_in_a_loop() -> None:
    assert cycles(module_graph(product_modules())) == []


def test_no_room_imports_in_a_loop_known_exceptions_aside(
    rooms: list[Room], imports: RoomImports
) -> None:
    allowed = {room.name: room.imports for room in rooms}
    graph = {
        room: [t for t in targets if t in allowed[room]] for room, targets in imports.edges.items()
    }
    assert cycles(graph) == []


# The checks themselves, on made-up trees: each finds what it is there to find.


def test_cycles_finds_a_loop_and_only_the_loop() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": ["b"], "b": []}) == []


def test_a_loop_hidden_in_a_function_body_is_found(tmp_path: Path) -> None:
    (tmp_path / "vsonic").mkdir()
    (tmp_path / "vsonic" / "__init__.py").write_text("")
    (tmp_path / "vsonic" / "db.py").write_text("def feed():\n    from vsonic.changes import F\n")
    (tmp_path / "vsonic" / "changes.py").write_text("from .db import Store\n")
    modules = {k: v for k, v in product_modules(tmp_path).items() if k.startswith("vsonic")}
    assert cycles(module_graph(modules)) == [["vsonic.changes", "vsonic.db"]]


def test_the_table_check_sees_an_unlisted_and_a_stale_import(tmp_path: Path) -> None:
    (tmp_path / "controller" / "qos").mkdir(parents=True)
    (tmp_path / "controller" / "__init__.py").write_text("")
    (tmp_path / "controller" / "qos" / "__init__.py").write_text("")
    (tmp_path / "controller" / "qos" / "ecn.py").write_text("import controller.errors\n")
    (tmp_path / "controller" / "errors.py").write_text("from controller.qos import ecn\n")
    table = (
        "\n## Rooms\n\n| room | what | imports | known exceptions |\n|---|---|---|---|\n"
        "| `controller/qos/` | the algorithms | `errors` | |\n"
        "| `controller/errors.py` | errors | `types` | |\n| `lab/` | lab | the product | |\n"
        "\n## Next\n"
    )
    rooms = room_table(table)
    assert [room.name for room in rooms] == ["qos", "errors"]
    found = room_graph(product_modules(tmp_path), rooms, tmp_path)
    assert table_mismatches(rooms, found.edges) == [
        "errors imports qos: ['controller.errors -> controller.qos', "
        "'controller.errors -> controller.qos.ecn']",
        "errors lists types, which it does not import",
    ]
    assert cycles({r: list(t) for r, t in found.edges.items()}) == [["errors", "qos"]]


# --- Rust: no module loops inside a crate -------------------------------------------------------

CRATE_PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
TESTS_MODULE = re.compile(r"^#\[cfg\(test\)\]\s*\n\s*mod tests\b", re.MULTILINE)


def crate_modules_graph(src: Path) -> dict[str, set[str]]:
    """Which top-level modules of a crate each one names through ``crate::`` (comments and the
    ``#[cfg(test)] mod tests`` block left out; a folder module is one module)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.rs")):
        parts = path.relative_to(src).parts
        if parts[0] == "bin" or (len(parts) == 1 and parts[0] in ("lib.rs", "main.rs")):
            continue
        module = parts[0].removesuffix(".rs")
        text = path.read_text()
        tests = TESTS_MODULE.search(text)
        code = re.sub(r"//.*", "", text[: tests.start()] if tests else text)
        named = {m.group(1) for m in CRATE_PATH.finditer(code)} - {module}
        graph.setdefault(module, set()).update(named)
    return graph


def crate_sources(root: Path = ROOT) -> list[Path]:
    manifests = root.glob("*/*/Cargo.toml")
    return sorted(m.parent / "src" for m in manifests if (m.parent / "src").is_dir())


def test_the_crates_are_found() -> None:
    names = {src.parent.name for src in crate_sources()}
    assert {"qos-agent", "qos-core", "netsim", "vasic"} <= names


@pytest.mark.parametrize("src", crate_sources(), ids=lambda src: src.parent.name)
def test_no_rust_module_imports_in_a_loop(src: Path) -> None:
    assert cycles(crate_modules_graph(src)) == []


def test_a_rust_loop_is_found_and_tests_and_comments_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "mod.rs").write_text("use crate::state::Report;\n")
    (tmp_path / "state.rs").write_text(
        "use crate::backend::Id;\n// see [`crate::wred`]\n"
        "#[cfg(test)]\nmod tests {\n    use crate::wred::X;\n}\n"
    )
    (tmp_path / "wred.rs").write_text("use crate::state::Report;\n")
    assert cycles(crate_modules_graph(tmp_path)) == [["backend", "state"]]


# --- the top-level folders -----------------------------------------------------------------------

DESIGN_FOLDERS = {"controller", "agents", "playbooks", "api", "migrations", "tests"}


def folder_table(text: str) -> dict[str, str]:
    """The "Top-level folders" table: each folder (its first cell) with its reason."""
    section = text.split("\n## Top-level folders\n", 1)[1].split("\n## ", 1)[0]
    folders = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            folders[cells[0].strip("`").rstrip("/")] = cells[1]
    return folders


def tracked_folders(root: Path = ROOT) -> set[str]:
    """The folders at the top of the repository that hold a tracked file (hidden ones aside)."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    tops = {line.split("/")[0] for line in listed.splitlines() if "/" in line}
    return {name for name in tops if not name.startswith(".")}


def test_the_folder_table_lists_exactly_the_top_level_folders() -> None:
    table = folder_table(ARCHITECTURE.read_text())
    assert set(table) == tracked_folders()
    # The design fixes six; each of the others gives its own reason.
    assert {name for name, why in table.items() if why.startswith("the design's")} == DESIGN_FOLDERS


def test_tracked_folders_sees_a_new_folder_and_not_a_hidden_one(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, check=True)

    git("init", "-q")
    for path in ("README.md", "controller/a.py", "tools/b.go", ".ci/run"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x\n")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "built").write_text("x\n")  # untracked: no folder of the repo's
    git("add", "README.md", "controller", "tools", ".ci")
    assert tracked_folders(tmp_path) == {"controller", "tools"}
